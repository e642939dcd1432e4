/**
 * Turns bus events into anonymous counters. Only event kinds and counts leave
 * here: never a printer's name, address, serial number or access code, nor a
 * file or job name. The caller decides whether a count is stored (opt-in).
 */
import type { EventMap, EventType, JobUpdateEvent } from '../events';

/** Counter types; event_counts in a submission uses these names. */
export const USAGE_EVENT_TYPES = [
  'app_start',
  'job_created',
  'job_auto_created',
  'job_completed',
  'job_failed',
  'job_cancelled',
  'file_downloaded',
  'file_download_failed',
  'file_uploaded',
  'printer_connected',
  'printer_disconnected',
  'error',
] as const;

/** Seconds the service ran while opted in (uptime_hours; not an event count). */
export const UPTIME_TYPE = 'uptime_seconds';

const TERMINAL_JOB: Record<string, string> = { completed: 'job_completed', failed: 'job_failed' };
const ERROR_CODE = /^[A-Z][A-Z0-9_]{0,40}$/;
/** Memory bound of the "seen" sets (job ids, download ids). */
const MAX_REMEMBERED = 5000;

function remember<K, V>(map: Map<K, V>, key: K, value: V): void {
  map.delete(key);
  map.set(key, value);
  if (map.size > MAX_REMEMBERED) map.delete(map.keys().next().value as K);
}

export class UsageCollector {
  /** Last status seen per job, so that a job's end is counted once. */
  private readonly jobStatus = new Map<number, string>();
  /** Last connection status per printer id, so that only changes count. */
  private readonly connection = new Map<string, string>();
  private readonly finishedDownloads = new Map<string, true>();

  constructor(private readonly count: (type: string, n?: number) => void) {}

  handle<K extends EventType>(type: K, data: EventMap[K]): void {
    switch (type) {
      case 'job_update':
        return this.job(data as JobUpdateEvent);
      case 'job_auto_created':
        return this.count('job_auto_created');
      case 'file_update':
        return this.file(data as EventMap['file_update']);
      case 'printer_status':
        return this.printer(data as EventMap['printer_status']);
      case 'system_alert':
        return this.alert(data as EventMap['system_alert']);
    }
  }

  private job(e: JobUpdateEvent): void {
    const id = Number(e.id ?? e.job_id);
    if (e.change === 'created') this.count('job_created');
    if (e.change === 'cancelled') this.count('job_cancelled');
    if (e.change === 'deleted') {
      this.jobStatus.delete(id);
      return;
    }
    const terminal = TERMINAL_JOB[e.status];
    if (terminal && e.change !== 'created' && this.jobStatus.get(id) !== e.status) this.count(terminal);
    remember(this.jobStatus, id, e.status);
  }

  private file(e: EventMap['file_update']): void {
    const id = typeof e.download_id === 'string' ? e.download_id : null;
    if (e.status !== 'completed' && e.status !== 'failed') return;
    if (id !== null) {
      if (this.finishedDownloads.has(id)) return;
      remember(this.finishedDownloads, id, true);
    }
    this.count(e.status === 'completed' ? 'file_downloaded' : 'file_download_failed');
  }

  private printer(e: EventMap['printer_status']): void {
    const id = e.printer_id;
    if (e.change === 'deleted') {
      this.connection.delete(id);
      return;
    }
    const now = e.connection_status;
    const before = this.connection.get(id);
    if (typeof now !== 'string') return;
    this.connection.set(id, now);
    if (before === undefined || before === now) return;
    if (now === 'connected') this.count('printer_connected');
    else if (before === 'connected') this.count('printer_disconnected');
  }

  private alert(e: EventMap['system_alert']): void {
    if (e.level !== 'error') return;
    this.count('error');
    // Codes are the service's own identifiers (DOWNLOAD_FAILED...); anything else is not carried.
    if (typeof e.code === 'string' && ERROR_CODE.test(e.code)) this.count(`error_${e.code.toLowerCase()}`);
  }
}
