/**
 * Moonraker's job history (the `history` component) -> how the newest ended print ended. A print lost to a
 * Klipper shutdown, a Klipper crash or restart, or a host that lost power leaves print_stats in standby: only
 * the history says it did not end well. Moonraker records each job's status: completed, cancelled, error,
 * klippy_shutdown, klippy_disconnect, server_exit (Moonraker stopped), interrupted (a job still in progress when
 * Moonraker started again: the host lost power or Moonraker died) and in_progress.
 * Everything the peer sends is bounded: the jobs read, and the length of each text taken.
 */
import type { EndedPrint } from '../driver';
import type { RpcLink } from './rpc';

/** Jobs read on a new link: the print the driver saw may be followed by others that ended while it was away. */
export const HISTORY_JOBS = 10;
const MAX_FILE = 1000;

/** A failed status, in words an operator reads. */
const FAILED: Record<string, string> = {
  error: 'The print stopped with an error (Klipper)',
  klippy_shutdown: 'Klipper shut down during the print (an MCU or heater fault, or an emergency stop)',
  klippy_disconnect: 'Klipper stopped during the print (it crashed or was restarted)',
  server_exit: 'Moonraker stopped during the print (the host shut down or Moonraker was restarted)',
  interrupted: 'The print was interrupted: the printer host lost power or Moonraker was restarted during it',
};

const iso = (v: unknown): string | null => (typeof v === 'number' && Number.isFinite(v) && v > 0 && v < 1e11 ? new Date(Math.round(v * 1000)).toISOString() : null);

/** One history job as an ended print; null for a job still in progress, an unknown status or a malformed entry. */
export function endedPrintOf(job: unknown): EndedPrint | null {
  if (!job || typeof job !== 'object' || Array.isArray(job)) return null;
  const j = job as Record<string, unknown>;
  if (typeof j.filename !== 'string' || !j.filename || typeof j.status !== 'string') return null;
  const status = j.status.slice(0, 40);
  // Own keys only: a status such as "toString" must not read as failed with a function as its reason.
  const outcome = status === 'completed' ? 'completed' : status === 'cancelled' ? 'cancelled' : Object.hasOwn(FAILED, status) ? 'failed' : null;
  if (!outcome) return null;
  return { file: j.filename.slice(0, MAX_FILE), outcome, reason: outcome === 'failed' ? FAILED[status] : null, started_at: iso(j.start_time), ended_at: iso(j.end_time) };
}

/** Whether two records say the same (the state keeps its record object while they do). */
export function sameEnded(a: EndedPrint | null, b: EndedPrint | null): boolean {
  if (a === b) return true;
  if (!a || !b) return false;
  return a.file === b.file && a.outcome === b.outcome && a.reason === b.reason && a.started_at === b.started_at && a.ended_at === b.ended_at;
}

/**
 * The newest ended job of the history, preferring the one of `file` (the print the driver saw last): when it
 * was followed by another print meanwhile, that one's record is not this print's. Null when the history has none
 * or cannot be read (the job then ends as it did before: by how far it got).
 */
export async function newestEndedPrint(link: RpcLink, file: string | null): Promise<EndedPrint | null> {
  const answer = await link.call<{ jobs?: unknown }>('server.history.list', { limit: HISTORY_JOBS, start: 0, order: 'desc' }).catch(() => null);
  const jobs = Array.isArray(answer?.jobs) ? answer.jobs.slice(0, HISTORY_JOBS) : [];
  const ended = jobs.map(endedPrintOf).filter((e): e is EndedPrint => e !== null);
  return (file ? ended.find((e) => e.file === file) : undefined) ?? ended[0] ?? null;
}

/** A `notify_history_changed` notification's ended job ([{action: "finished", job}]); null for anything else. */
export function finishedInNotification(params: unknown): EndedPrint | null {
  const first = Array.isArray(params) ? (params[0] as { action?: unknown; job?: unknown } | undefined) : undefined;
  if (!first || typeof first !== 'object' || first.action !== 'finished') return null;
  return endedPrintOf(first.job);
}
