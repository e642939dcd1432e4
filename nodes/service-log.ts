/**
 * The embedded service logs pino JSON lines; in Node-RED they go through the
 * config node's log/warn/error as one readable line each ("printer x1 went
 * offline (printer_id=x1; error: connect ECONNREFUSED)") instead of raw JSON
 * in Node-RED's log.
 */
import type { DestinationStream } from 'pino';

export type LogMethod = 'trace' | 'debug' | 'log' | 'warn' | 'error';

export interface ServiceLogLine {
  method: LogMethod;
  text: string;
}

/** pino's numeric levels: 10 trace, 20 debug, 30 info, 40 warn, 50 error, 60 fatal. */
function methodOf(level: unknown): LogMethod {
  const n = typeof level === 'number' ? level : 30;
  return n >= 50 ? 'error' : n >= 40 ? 'warn' : n >= 30 ? 'log' : n >= 20 ? 'debug' : 'trace';
}

/** Fields that say nothing to a reader of Node-RED's log (it adds its own time and node name). */
const NOISE = new Set(['level', 'time', 'msg', 'service', 'pid', 'hostname', 'v', 'err', 'error']);
const MAX_LINE = 2000;
const MAX_FIELD = 200;

function fieldText(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text.length > MAX_FIELD ? `${text.slice(0, MAX_FIELD)}…` : text;
}

/** One pino JSON line as a readable line; a line that is not JSON is passed on as it is. */
export function readableLogLine(raw: string): ServiceLogLine | null {
  const line = raw.trim();
  if (!line) return null;
  let record: Record<string, unknown>;
  try {
    record = JSON.parse(line) as Record<string, unknown>;
    if (typeof record !== 'object' || record === null) throw new Error('not an object');
  } catch {
    return { method: 'log', text: line.slice(0, MAX_LINE) };
  }
  const fields = Object.entries(record)
    .filter(([k, v]) => !NOISE.has(k) && v !== undefined && v !== null)
    .map(([k, v]) => `${k}=${fieldText(v)}`);
  const err = (record.err ?? record.error) as { message?: unknown } | string | undefined;
  const errText = typeof err === 'string' ? err : typeof err?.message === 'string' ? err.message : undefined;
  const message = typeof record.msg === 'string' && record.msg ? record.msg : errText ?? 'service event';
  const details = [...fields, ...(errText && errText !== message ? [`error: ${fieldText(errText)}`] : [])];
  const text = details.length ? `${message} (${details.join('; ')})` : message;
  return { method: methodOf(record.level), text: text.length > MAX_LINE ? `${text.slice(0, MAX_LINE)}…` : text };
}

/** A pino destination that hands each line, made readable, to `emit` (which may change: see EmbeddedKeeper). */
export function logDestination(emit: (line: ServiceLogLine) => void): DestinationStream {
  let partial = '';
  return {
    write(chunk: string) {
      // pino writes whole lines; a chunk with several (or half of one) is split anyway.
      const lines = (partial + chunk).split('\n');
      partial = lines.pop() ?? '';
      if (partial.length > 64 * 1024) partial = '';
      for (const raw of lines) {
        const line = readableLogLine(raw);
        if (line) emit(line);
      }
    },
  };
}
