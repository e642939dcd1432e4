/** Pure helpers of the fleet: the status a machine state shows, when a frame is due, when a driver must restart. */
import type { PrinterRecord } from '../db/repositories/printers';
import type { MachineState, PrinterState } from './driver';

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

  /** Takes what a frame would show now; true when it differs from the last one taken. */
  changed(status: string, connection: string, state: PrinterState | null): boolean {
    const t = state?.temperatures;
    const progress = Math.floor(state?.job?.progress ?? 0);
    const nozzle = half(t?.nozzle);
    const bed = half(t?.bed);
    const chamber = half(t?.chamber);
    const error = state?.error?.code ?? '';
    if (status === this.status && connection === this.connection && progress === this.progress && nozzle === this.nozzle && bed === this.bed && chamber === this.chamber && error === this.error) {
      return false;
    }
    this.status = status;
    this.connection = connection;
    this.progress = progress;
    this.nozzle = nozzle;
    this.bed = bed;
    this.chamber = chamber;
    this.error = error;
    return true;
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
