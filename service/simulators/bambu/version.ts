/**
 * The simulated printer's `get_version` answer, and how it tells which model
 * it is. A real printer says so in three places, all of which the simulator
 * copies:
 *
 * - the serial number's prefix (00M X1C, 01P P1S, 039 A1...; SERIAL_PREFIX in
 *   options.ts), known before any connection: the most reliable, since the
 *   serial is part of the printer's configuration;
 * - `info.module[]` of get_version: the `ota` module's `product_name`
 *   ("Bambu Lab X1C"; the driver strips "Bambu Lab "), plus `hw_ver`/
 *   `project_name` on the `mc` module for firmware that leaves product_name
 *   out (AP05 without project = X1C, C12 = P1S, N2S = A1...);
 * - nothing in push_status: reports carry no model field worth trusting.
 */
import type { Json } from './printer';

/** hw_ver / project_name of the `mc` module per model (PROTOCOLS.md §1 "Firmware version and model"). */
const MC_MODULE: Record<string, { hw_ver: string; project_name?: string }> = {
  X1C: { hw_ver: 'AP05' },
  X1: { hw_ver: 'AP05' },
  X1E: { hw_ver: 'AP02' },
  P1P: { hw_ver: 'AP04', project_name: 'C11' },
  P1S: { hw_ver: 'AP04', project_name: 'C12' },
  'A1 MINI': { hw_ver: 'N1', project_name: 'N1' },
  A1: { hw_ver: 'AP05', project_name: 'N2S' },
};

export interface VersionSource {
  model: string;
  firmware: string;
  serial: string;
  hasAms: boolean;
}

export function versionInfo(printer: VersionSource, sequenceId: unknown): Json {
  const { serial } = printer;
  const mc = MC_MODULE[printer.model.toUpperCase()] ?? { hw_ver: 'MC07' };
  const module: Json[] = [
    { name: 'ota', product_name: `Bambu Lab ${printer.model}`, sw_ver: printer.firmware, hw_ver: 'OTA', sn: serial, new_ver: '', visible: true, flag: 0 },
    { name: 'mc', sw_ver: '00.00.29.27', ...mc, sn: `${serial.slice(0, 3)}MC${serial.slice(-8)}`, loader_ver: '00.00.00.25', visible: true, flag: 0 },
    { name: 'th', sw_ver: '00.00.07.67', hw_ver: 'TH07', sn: `${serial.slice(0, 3)}TH${serial.slice(-8)}`, loader_ver: '00.00.00.25', visible: true, flag: 0 },
  ];
  if (printer.hasAms) {
    module.push({ name: 'ams/0', sw_ver: '00.00.06.49', hw_ver: 'AMS08', sn: `006A${serial.slice(-8)}`, loader_ver: '00.00.00.00', visible: true, flag: 0 });
  }
  return { info: { command: 'get_version', sequence_id: String(sequenceId ?? '0'), module, result: 'success', reason: '' } };
}
