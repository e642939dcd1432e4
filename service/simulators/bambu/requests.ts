/**
 * The MQTT side of the simulated Bambu printer: what it answers to a message
 * on `device/{serial}/request` (PROTOCOLS.md §1). pushall and get_version are
 * answered with reports; `print` commands go to the printer and are answered
 * on the report topic with the same `command` and `sequence_id` plus
 * `result` ("success"/"fail") and `reason`, as real printers do; `system`
 * commands (the light) are acknowledged.
 */
import type { BambuFaults } from './options';
import type { CommandResult, Json } from './printer';

/** Commands that authorization firmware refuses unless signed (or in Developer Mode). */
const SIGNED_COMMANDS = ['pause', 'resume', 'stop', 'project_file', 'gcode_file', 'gcode_line', 'print_speed'];

/** What the request handler needs of the simulator. */
export interface RequestTarget {
  readonly stats: { pushall_requests: number; get_version_requests: number; commands: number };
  readonly faults: BambuFaults;
  readonly developerMode: boolean;
  /** Publishes on the report topic. */
  publish(message: Json): void;
  /** Sends a push_status: full (msg 0) or periodic (msg 1). */
  report(full: boolean): void;
  /** Answers a pushall with a full report (late with the pushall_delay_ms fault). */
  answerPushall(): void;
  versionInfo(sequenceId: unknown): Json;
  /** Carries out a `print` command (pause, resume, stop, project_file, gcode_file...). */
  runPrintCommand(request: Json, command: string): CommandResult;
  gcodeState(): string;
}

export function handleRequest(target: RequestTarget, message: Json): void {
  for (const [type, body] of Object.entries(message)) {
    if (typeof body !== 'object' || body === null) continue;
    const request = body as Json;
    const command = String(request.command ?? '');
    if (type === 'pushing' && (command === 'pushall' || command === 'start')) {
      target.stats.pushall_requests++;
      target.answerPushall();
    } else if (type === 'info' && command === 'get_version') {
      target.stats.get_version_requests++;
      target.publish(target.versionInfo(request.sequence_id));
    } else if (type === 'print' && command !== 'push_status') {
      printCommand(target, request, command);
    } else if (type === 'system') {
      target.publish({ system: { command, sequence_id: String(request.sequence_id ?? '0'), result: 'success', reason: '' } });
    }
  }
}

function printCommand(target: RequestTarget, request: Json, command: string): void {
  target.stats.commands++;
  const before = target.gcodeState();
  let result: CommandResult;
  if (target.faults.reject_commands) {
    result = { ok: false, reason: 'command rejected by the printer (simulated fault)' };
  } else if (!target.developerMode && SIGNED_COMMANDS.includes(command)) {
    result = { ok: false, reason: 'mqtt message verify failed' };
  } else {
    result = target.runPrintCommand(request, command);
  }
  target.publish({
    print: {
      command,
      sequence_id: String(request.sequence_id ?? '0'),
      param: request.param ?? '',
      result: result.ok ? 'success' : 'fail',
      reason: result.ok ? 'success' : result.reason,
    },
  });
  // A state change is reported at once (a cancelled print too, even when the command failed).
  if (before !== target.gcodeState()) target.report(false);
}
