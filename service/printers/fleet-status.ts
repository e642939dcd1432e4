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

/** What a printer_status frame carries; a frame goes out only when this changes. */
export function frameKey(status: string, connection: string, state: PrinterState | null): string {
  const t = state?.temperatures;
  const half = (v: number | undefined) => (v === undefined ? '' : Math.round(v * 2) / 2);
  return [status, connection, Math.floor(state?.job?.progress ?? 0), half(t?.nozzle), half(t?.bed), half(t?.chamber), state?.error?.code ?? ''].join('|');
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
