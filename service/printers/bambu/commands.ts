/**
 * Bambu commands: which command starts a file, the `project_file` body that starts a .3mf (PROTOCOLS.md §1)
 * and the bookkeeping of commands waiting for the printer's answer.
 */
import { DriverError } from '../driver';
import { str, type Json } from './values';

/** pybambu's rule: file:///sdcard/ URLs for X1/P1/A1, ftp:/// for H2 and newer. */
export function usesFtpUrl(model: string | null): boolean {
  return !!model && !/^(X1|P1|A1)/i.test(model);
}

/** Fields of `project_file` for the .3mf at `absolute` (plate 1, the AMS when the printer has one, slot mapping [0]). */
export function projectFileFields(absolute: string, model: string | null, useAms: boolean): Json {
  const name = absolute.slice(absolute.lastIndexOf('/') + 1);
  const relative = absolute.slice(1);
  return {
    param: 'Metadata/plate_1.gcode',
    url: usesFtpUrl(model) ? `ftp:///${relative}` : `file:///sdcard/${relative}`,
    subtask_name: name.replace(/(\.gcode)?\.3mf$/i, ''),
    md5: '',
    file: '',
    project_id: '0',
    profile_id: '0',
    task_id: '0',
    subtask_id: '0',
    timelapse: false,
    bed_type: 'auto',
    bed_leveling: true,
    flow_cali: true,
    vibration_cali: true,
    layer_inspect: true,
    use_ams: useAms,
    ams_mapping: [0],
  };
}

/**
 * The command that starts a file stored on the printer: `project_file` for
 * .3mf (plate 1, the AMS when the printer has one, slot mapping [0]),
 * `gcode_file` for .gcode. Anything else is refused here (the printer would refuse it too).
 */
export function startCommandOf(path: string, model: string | null, hasAms: boolean): { command: string; fields: Json } {
  const absolute = path.startsWith('/') ? path : `/${path}`;
  const name = absolute.slice(absolute.lastIndexOf('/') + 1);
  if (/\.3mf$/i.test(name)) return { command: 'project_file', fields: projectFileFields(absolute, model, hasAms) };
  if (/\.gcode$/i.test(name)) return { command: 'gcode_file', fields: { param: absolute } };
  throw new DriverError('REJECTED', `a Bambu printer prints .3mf and .gcode files, not "${name}"`, { path });
}

interface PendingCommand {
  command: string;
  sequenceId: string;
  settle: (err?: DriverError) => void;
}

/** Commands sent and not yet answered: each settles once, by the printer's answer, its timeout or a lost link. */
export class PendingCommands {
  private readonly pending = new Set<PendingCommand>();

  /** Sends through `publish` and waits for the answer with the same command and sequence id. */
  send(command: string, sequenceId: string, timeoutMs: number, publish: (sent: (err?: Error) => void) => void): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => pending.settle(new DriverError('TIMEOUT', `the printer did not answer "${command}" within ${(timeoutMs / 1000).toFixed(1)} s`)), timeoutMs);
      const pending: PendingCommand = {
        command,
        sequenceId,
        settle: (err) => {
          if (!this.pending.delete(pending)) return;
          clearTimeout(timer);
          if (err) reject(err);
          else resolve();
        },
      };
      this.pending.add(pending);
      publish((err) => {
        if (err) pending.settle(new DriverError('OFFLINE', `could not send "${command}": ${err.message}`));
      });
    });
  }

  /** A `print` message that is not a push_status: the answer to a command. */
  answer(reply: Json): void {
    const command = str(reply.command);
    const result = str(reply.result)?.toLowerCase();
    if (!command || !result) return;
    const sequenceId = str(reply.sequence_id);
    for (const p of this.pending) {
      if (p.command !== command || (sequenceId !== null && sequenceId !== p.sequenceId)) continue;
      if (result === 'success') p.settle();
      else {
        const reason = str(reply.reason) || str(reply.err_code) || 'the printer refused the command';
        p.settle(new DriverError('REJECTED', reason, { command, reason }));
      }
      return;
    }
  }

  rejectAll(err: DriverError): void {
    for (const p of [...this.pending]) p.settle(err);
  }
}
