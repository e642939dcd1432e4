/**
 * Pure helpers of the fleet: the status a machine state shows, when a frame is due and what it says, a
 * driver's configuration and when a driver must restart, and the API errors of an unreachable printer and a
 * failed command.
 */
import type { PrinterRecord } from '../db/repositories/printers';
import { DomainError } from '../errors';
import type { PrinterStatusEvent } from '../events';
import type { LiveState } from '../monitoring/status-cache';
import { DriverError, type DriverConfig, type MachineState, type PrinterState } from './driver';

/** The printer status the API shows for a machine state. */
export function printerStatusOf(state: MachineState): 'online' | 'printing' | 'paused' | 'error' {
  switch (state) {
    case 'preparing':
    case 'printing':
      return 'printing';
    case 'paused':
      return 'paused';
    case 'failed':
    case 'error':
      return 'error';
    default:
      return 'online';
  }
}

/**
 * What a printer_status frame would say against the last one taken: nothing new (no frame), only temperatures
 * (telemetry: the bus spares the listeners that never act on it, events.ts), or more.
 */
export type FrameNews = 'none' | 'telemetry' | 'more';

/**
 * What a printer_status frame shows (state, whole percent, temperatures to 0.5 °C, error): a frame goes out
 * only when this changes. Compared field by field on every report, so it builds no string.
 */
export class FrameShown {
  private status = '';
  private connection = '';
  private progress = Number.NaN;
  private nozzle: number | undefined = Number.NaN;
  private bed: number | undefined = Number.NaN;
  private chamber: number | undefined = Number.NaN;
  private error = '';

  /** Takes what a frame would show now; says what differs from the last one taken. */
  take(status: string, connection: string, state: PrinterState | null): FrameNews {
    const t = state?.temperatures;
    const progress = Math.floor(state?.job?.progress ?? 0);
    const nozzle = half(t?.nozzle);
    const bed = half(t?.bed);
    const chamber = half(t?.chamber);
    const error = state?.error?.code ?? '';
    const same = status === this.status && connection === this.connection && progress === this.progress && error === this.error;
    if (same && nozzle === this.nozzle && bed === this.bed && chamber === this.chamber) return 'none';
    this.status = status;
    this.connection = connection;
    this.progress = progress;
    this.nozzle = nozzle;
    this.bed = bed;
    this.chamber = chamber;
    this.error = error;
    return same ? 'telemetry' : 'more';
  }
}

function half(value: number | undefined): number | undefined {
  return value === undefined ? undefined : Math.round(value * 2) / 2;
}

/** Whether a configuration change needs a new connection. */
export function connectionChanged(a: PrinterRecord, b: PrinterRecord): boolean {
  return (
    a.ip_address !== b.ip_address ||
    a.access_code !== b.access_code ||
    a.serial_number !== b.serial_number ||
    a.mqtt_port !== b.mqtt_port ||
    a.ftps_port !== b.ftps_port ||
    a.http_port !== b.http_port ||
    a.auth_method !== b.auth_method
  );
}

export interface FleetTimings {
  /** A link silent this long is offline (default: 60 s, or 3 polls for polling drivers). */
  watchdogMs?: number;
  /** How long a command waits for the printer (default 10 s). */
  commandTimeoutMs?: number;
  /** Poll cadence override in ms (default: the monitoring_interval setting). */
  pollMs?: number;
  /** How long the connection test of a new printer waits before it reports the printer offline (default 15 s). */
  connectTimeoutMs?: number;
}

/**
 * What a printer's driver is started with; `monitoringMs` reads the monitoring_interval setting in ms,
 * `cancelledRun` tells the printer's last, cancelled, run (monitoring/cancelled-runs.ts). The poll
 * period and the watchdog that follows it are read live, so a setting changed through the API applies to the
 * printers monitored already (not only after their next reconnect).
 */
export function driverConfigOf(record: PrinterRecord, timings: FleetTimings, monitoringMs: () => number, cancelledRun?: DriverConfig['cancelled_run']): DriverConfig {
  const pollMs = () => timings.pollMs ?? monitoringMs();
  return {
    ...(cancelledRun ? { cancelled_run: cancelledRun } : {}),
    id: record.id,
    ip_address: record.ip_address,
    serial_number: record.serial_number,
    access_code: record.access_code,
    ...(record.auth_method === 'api_key' ? { auth_method: 'api_key' as const } : {}),
    ports: {
      mqtt: record.mqtt_port ?? undefined,
      ftps: record.ftps_port ?? undefined,
      http: record.http_port ?? undefined,
    },
    get watchdog_ms() {
      return timings.watchdogMs ?? (record.type === 'prusa_core' ? Math.max(60_000, 3 * pollMs()) : 60_000);
    },
    command_timeout_ms: timings.commandTimeoutMs ?? 10_000,
    get poll_ms() {
      return pollMs();
    },
  };
}

/** The printer_status frame of a report: the live figures, and the job and error when there are. */
export function statusEvent(record: PrinterRecord, status: string, connection: string, live: LiveState, state: PrinterState | null): PrinterStatusEvent {
  const event: PrinterStatusEvent = {
    printer_id: record.id,
    change: 'state',
    status,
    connection_status: connection,
    progress: live.progress,
    temperatures: { nozzle: live.temperatures.nozzle, bed: live.temperatures.bed },
    plate_state: record.plate_state ?? 'clear',
  };
  const job = state?.job;
  if (job) {
    event.job_name = job.name;
    event.layer_current = job.layer_current;
    event.layer_total = job.layer_total;
    event.estimated_remaining = job.remaining_seconds;
  }
  if (state?.error) event.error = state.error;
  return event;
}

/** 502 PRINTER_OFFLINE: the printer has no live link (`link`: what the fleet knows of it; undefined when not managed). */
export function offlineError(printerId: string, link: { message: string | null; connection: string; last_seen: string | null } | undefined): DomainError {
  return new DomainError(502, 'PRINTER_OFFLINE', `Printer "${printerId}" is not reachable${link?.message ? `: ${link.message}` : ''}`, {
    printer_id: printerId,
    connection_status: link?.connection ?? 'disconnected',
    last_seen: link?.last_seen ?? null,
  });
}

/** What a command's failure is to the API: 409 PRINTER_BUSY when the printer refused, 502 when it did not carry it out. */
export function commandError(printerId: string, name: string, err: unknown): unknown {
  if (!(err instanceof DriverError)) return err;
  if (err.code === 'REJECTED') {
    return new DomainError(409, 'PRINTER_BUSY', `Printer "${printerId}" refused ${name}: ${err.message}`, { printer_id: printerId, command: name });
  }
  return new DomainError(502, 'PRINTER_OFFLINE', `Printer "${printerId}" did not carry out ${name}: ${err.message}`, {
    printer_id: printerId,
    command: name,
    reason: err.code,
  });
}
