/** Bambu model, firmware and capability facts: serial prefixes, get_version answers, authorization firmware, camera and AMS. */
import { isObject, str, type Json } from './values';

/** Bit of the `fun` field that says the printer wants signed MQTT commands (authorization firmware outside Developer Mode). */
export const FUN_SIGNATURE_REQUIRED = 0x20000000n;

const SERIAL_PREFIXES: Array<[string, string]> = [
  ['00M', 'X1C'],
  ['00W', 'X1'],
  ['03W', 'X1E'],
  ['01S', 'P1P'],
  ['01P', 'P1S'],
  ['030', 'A1 mini'],
  ['039', 'A1'],
  ['094', 'H2D'],
  ['093', 'H2S'],
  ['239', 'H2D Pro'],
  ['31B', 'H2C'],
  ['22E', 'P2S'],
  ['20P', 'X2D'],
];

export function modelFromSerial(serial: string | null | undefined): string | null {
  if (!serial) return null;
  const upper = serial.toUpperCase();
  return SERIAL_PREFIXES.find(([prefix]) => upper.startsWith(prefix))?.[1] ?? null;
}

/** Serial prefix for a model (the simulator names itself like the real thing). */
export function serialPrefixOf(model: string): string | null {
  return SERIAL_PREFIXES.find(([, m]) => m.toLowerCase() === model.toLowerCase())?.[0] ?? null;
}

const PROJECT_MODELS: Record<string, string> = { C11: 'P1P', C12: 'P1S', N1: 'A1 mini', N2S: 'A1' };

export interface VersionInfo {
  /** sw_ver of the `ota` module, e.g. "01.08.02.00". */
  firmware: string | null;
  /** Model from product_name ("Bambu Lab P1S" -> "P1S") or project_name. */
  model: string | null;
}

/** Reads a get_version answer (`info` object with `module[]`). */
export function parseVersionInfo(info: Json): VersionInfo {
  const modules = Array.isArray(info.module) ? info.module.filter(isObject) : [];
  const ota = modules.find((m) => m.name === 'ota');
  const firmware = str(ota?.sw_ver) || null;
  let model: string | null = null;
  for (const m of ota ? [ota, ...modules] : modules) {
    const product = str(m.product_name);
    if (product && product.trim()) {
      model = product.replace(/^\s*Bambu\s*Lab\s*/i, '').trim() || null;
      break;
    }
    const project = str(m.project_name);
    if (project && PROJECT_MODELS[project.toUpperCase()]) {
      model = PROJECT_MODELS[project.toUpperCase()];
      break;
    }
  }
  return { firmware, model };
}

/** Compares dotted versions numerically ("01.08.02.00" vs "1.8.10"): <0, 0, >0. */
export function compareVersions(a: string, b: string): number {
  const pa = a.split('.').map((p) => parseInt(p, 10) || 0);
  const pb = b.split('.').map((p) => parseInt(p, 10) || 0);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

/** First firmware of each family that refuses unsigned control commands outside Developer Mode (PROTOCOLS.md §1). */
export function authorizationFirmware(model: string | null): string | null {
  const m = (model ?? '').toUpperCase();
  if (m.startsWith('P1')) return '01.08.02.00';
  if (m.startsWith('A1')) return '01.05.00.00';
  if (m.startsWith('X1')) return '01.08.50.32';
  if (m.startsWith('H2D')) return '01.01.00.00';
  return null;
}

/**
 * Can pause/resume/stop/start be sent unsigned? Kept simple on purpose:
 * 1. when the printer reports `fun`, its bit 0x20000000 ("MQTT signature
 *    required") decides: Developer Mode clears it;
 * 2. else firmware at or above the family's authorization version says no;
 * 3. else yes.
 */
export function supportsRemoteControl(model: string | null, firmware: string | null, fun: unknown): boolean {
  const funHex = str(fun);
  if (funHex && /^[0-9a-f]+$/i.test(funHex)) return (BigInt(`0x${funHex}`) & FUN_SIGNATURE_REQUIRED) === 0n;
  const threshold = authorizationFirmware(model);
  if (threshold && firmware) return compareVersions(firmware, threshold) < 0;
  return true;
}

/** Every current Bambu family has a camera (X1/P1/A1/H2/P2/X2); an unknown model is assumed to be one of them. */
export function hasCamera(model: string | null): boolean {
  if (!model) return true;
  return /^(X1|P1|A1|H2|P2|X2)/i.test(model);
}

/** AMS units present: `ams.ams[]` not empty (AMS and AMS lite alike). */
export function hasAms(print: Json): boolean {
  const ams = print.ams;
  return isObject(ams) && Array.isArray(ams.ams) && ams.ams.length > 0;
}
