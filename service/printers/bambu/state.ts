/**
 * Pure Bambu Lab report handling: merging `push_status` deltas into one
 * full report, and mapping that report (plus get_version facts) into the
 * normalised PrinterState. No sockets, no timers: everything here is a
 * function of its arguments, so test/unit/bambu-state.test.ts covers it.
 *
 * Merge rules (PROTOCOLS.md §1 "Full vs delta reports"):
 * - every key: `field = delta.field ?? previous` (null and missing keep the old value);
 * - nested objects merge key by key with the same rule;
 * - arrays replace (so `hms: []` means "all clear");
 * - except `ams.ams[]` (units) and `ams.ams[].tray[]`, merged by `id`; a tray
 *   that arrives with only its `id` is an emptied slot and replaces the old one.
 */
import type { MachineState, PrinterError, PrinterState } from '../driver';
import { materialsOf, nozzleDiameterOf } from './materials';

export type Json = Record<string, unknown>;

/** print_error 0x0300400C: the print was stopped by the user (screen, app or a stop command). */
export const CANCELLED_PRINT_ERROR = 50348044;

/** Bit of the `fun` field that says the printer wants signed MQTT commands (authorization firmware outside Developer Mode). */
export const FUN_SIGNATURE_REQUIRED = 0x20000000n;

export function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Numbers drift between number and string across firmware versions: coerce. */
export function num(value: unknown): number | null {
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (typeof value === 'string' && value.trim() !== '') {
    const n = Number(value);
    return Number.isFinite(n) ? n : null;
  }
  return null;
}

export function str(value: unknown): string | null {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return null;
}

// ---------------------------------------------------------------------------
// Merge
// ---------------------------------------------------------------------------

function mergeObjects(prev: Json, next: Json): Json {
  const out: Json = { ...prev };
  for (const [key, value] of Object.entries(next)) out[key] = mergeValue(key, prev[key], value);
  return out;
}

function mergeValue(key: string, prev: unknown, next: unknown): unknown {
  if (next === undefined || next === null) return prev;
  if (key === 'ams' && isObject(next)) return mergeAms(isObject(prev) ? prev : {}, next);
  if (Array.isArray(next)) return next;
  if (isObject(next)) return mergeObjects(isObject(prev) ? prev : {}, next);
  return next;
}

function idOf(item: unknown): string | null {
  return isObject(item) ? str(item.id) : null;
}

/** Merge two arrays of `{id, ...}` objects: update by id, keep the old order, append new ids. */
function mergeById(prev: unknown, next: unknown, merge: (a: Json, b: Json) => Json): unknown {
  if (!Array.isArray(next)) return prev;
  const out: unknown[] = Array.isArray(prev) ? [...prev] : [];
  for (const item of next) {
    const id = idOf(item);
    if (id === null || !isObject(item)) continue;
    const at = out.findIndex((old) => idOf(old) === id);
    if (at < 0) out.push(merge({}, item));
    else out[at] = merge(isObject(out[at]) ? (out[at] as Json) : {}, item);
  }
  return out;
}

function mergeTray(prev: Json, next: Json): Json {
  // A tray reported with nothing but its id is an empty slot (filament pulled out).
  if (Object.keys(next).every((k) => k === 'id')) return { ...next };
  return mergeObjects(prev, next);
}

function mergeUnit(prev: Json, next: Json): Json {
  const { tray, ...rest } = next;
  const out = mergeObjects(prev, rest);
  if (tray !== undefined && tray !== null) out.tray = mergeById(prev.tray, tray, mergeTray);
  return out;
}

function mergeAms(prev: Json, next: Json): Json {
  const { ams, ...rest } = next;
  const out = mergeObjects(prev, rest);
  if (ams !== undefined && ams !== null) out.ams = mergeById(prev.ams, ams, mergeUnit);
  return out;
}

/** Merge one `print` report (full `msg:0` or delta `msg:1`) into the previous merged report. */
export function mergeReport(prev: Json | null, report: Json): Json {
  return mergeObjects(prev ?? {}, report);
}

/** Only `push_status` carries state; command acknowledgements share the `print` key. */
export function isStatusReport(message: unknown): message is { print: Json } {
  return isObject(message) && isObject(message.print) && message.print.command === 'push_status';
}

/** What the driver keeps per printer: the merged report and whether the last run was cancelled. */
export interface BambuTracked {
  print: Json;
  /** The current FAILED state came from a user stop (print_error 50348044), which the printer only shows for a few seconds. */
  cancelled: boolean;
}

export function ingestReport(prev: BambuTracked | null, report: Json): BambuTracked {
  const print = mergeReport(prev?.print ?? null, report);
  let cancelled = false;
  if (gcodeStateOf(print) === 'FAILED') {
    const error = num(print.print_error);
    cancelled = error === CANCELLED_PRINT_ERROR || (prev !== null && prev.cancelled && gcodeStateOf(prev.print) === 'FAILED');
  }
  return { print, cancelled };
}

function gcodeStateOf(print: Json): string {
  return (str(print.gcode_state) ?? '').toUpperCase();
}

// ---------------------------------------------------------------------------
// Mapping
// ---------------------------------------------------------------------------

/** gcode_state -> MachineState. RUNNING with print_type "system" is a calibration, not a print. */
export function machineState(gcodeState: string | null, options: { cancelled?: boolean; printError?: number | null; printType?: string | null } = {}): MachineState {
  switch ((gcodeState ?? '').toUpperCase()) {
    case 'IDLE':
      return 'idle';
    case 'PREPARE':
    case 'SLICING':
      return 'preparing';
    case 'RUNNING':
      return options.printType === 'system' ? 'busy' : 'printing';
    case 'PAUSE':
      return 'paused';
    case 'FINISH':
      return 'finished';
    case 'FAILED':
      return options.cancelled || options.printError === CANCELLED_PRINT_ERROR ? 'stopped' : 'failed';
    default:
      // INIT, OFFLINE, UNKNOWN or nothing reported yet: the printer is not ready for a job.
      return 'busy';
  }
}

const hex4 = (n: number) => (n & 0xffff).toString(16).toUpperCase().padStart(4, '0');

/** HMS entry {attr, code} -> "0700_2000_0002_0001" as the Bambu wiki and apps print it. */
export function hmsCode(attr: number, code: number): string {
  return `${hex4(attr >>> 16)}_${hex4(attr)}_${hex4(code >>> 16)}_${hex4(code)}`;
}

/** print_error -> "0300_400C". */
export function printErrorCode(error: number): string {
  return `${hex4(error >>> 16)}_${hex4(error)}`;
}

const HMS_SEVERITY: Record<number, string> = { 1: 'fatal', 2: 'serious', 3: 'common', 4: 'info' };
const HMS_MODULE: Record<number, string> = { 0x03: 'motion controller', 0x05: 'mainboard', 0x07: 'AMS', 0x08: 'toolhead', 0x0c: 'camera / AI monitoring', 0x12: 'AMS lite' };

/** The few messages the simulator produces and users meet most; anything else gets a generic text with module and severity. */
const KNOWN_MESSAGES: Record<string, string> = {
  '0300_400C': 'The print was cancelled',
  '0700_8011': 'AMS filament ran out',
  '0700_2000_0002_0001': 'AMS slot 1 filament has run out',
  '0300_0100_0001_0007': 'The heatbed temperature is abnormal',
};

export function hmsSeverity(code: number): number {
  return (code >>> 16) & 0xffff;
}

export function hmsMessage(attr: number, code: number): string {
  const id = hmsCode(attr, code);
  const known = KNOWN_MESSAGES[id];
  if (known) return known;
  const module = HMS_MODULE[(attr >>> 24) & 0xff] ?? 'printer';
  const severity = HMS_SEVERITY[hmsSeverity(code)] ?? 'unknown';
  return `${module} reports HMS ${id} (${severity})`;
}

export function printErrorMessage(error: number): string {
  const id = printErrorCode(error);
  return KNOWN_MESSAGES[id] ?? `Print error ${id}`;
}

interface HmsEntry {
  attr: number;
  code: number;
}

function hmsEntries(value: unknown): HmsEntry[] {
  if (!Array.isArray(value)) return [];
  const out: HmsEntry[] = [];
  for (const entry of value) {
    if (!isObject(entry)) continue;
    const attr = num(entry.attr);
    const code = num(entry.code);
    if (attr !== null && code !== null) out.push({ attr, code });
  }
  return out;
}

/**
 * The error to show: the most severe HMS entry, else a non-zero print_error
 * (a user cancel is not an error: it shows as state 'stopped').
 */
export function printerError(print: Json): PrinterError | null {
  const hms = hmsEntries(print.hms);
  if (hms.length > 0) {
    const rank = (e: HmsEntry) => hmsSeverity(e.code) || 99;
    const worst = hms.reduce((a, b) => (rank(b) < rank(a) ? b : a));
    return { code: `HMS_${hmsCode(worst.attr, worst.code)}`, message: hmsMessage(worst.attr, worst.code) };
  }
  const error = num(print.print_error);
  if (error && error !== CANCELLED_PRINT_ERROR) return { code: printErrorCode(error), message: printErrorMessage(error) };
  return null;
}

// ---------------------------------------------------------------------------
// Model, firmware, capabilities
// ---------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------
// PrinterState
// ---------------------------------------------------------------------------

export interface MapContext {
  version: VersionInfo | null;
  serial: string | null;
}

function basename(path: string): string {
  const parts = path.split('/');
  return parts[parts.length - 1] || path;
}

/** ISO 8601 from gcode_start_time (epoch seconds as a string); null when absent or 0. */
export function startedAt(value: unknown): string | null {
  const seconds = num(value);
  if (!seconds || seconds <= 0) return null;
  return new Date(seconds * 1000).toISOString();
}

export function toPrinterState(tracked: BambuTracked, context: MapContext): PrinterState {
  const p = tracked.print;
  const rawState = (str(p.gcode_state) ?? '').toUpperCase();
  const state = machineState(rawState, { cancelled: tracked.cancelled, printError: num(p.print_error), printType: str(p.print_type) });
  const error = printerError(p);
  const model = context.version?.model ?? modelFromSerial(context.serial);
  const firmware = context.version?.firmware ?? null;

  const chamber = num(p.chamber_temper);
  const temperatures: PrinterState['temperatures'] = {
    nozzle: num(p.nozzle_temper) ?? 0,
    bed: num(p.bed_temper) ?? 0,
    nozzle_target: num(p.nozzle_target_temper) ?? 0,
    bed_target: num(p.bed_target_temper) ?? 0,
  };
  if (chamber !== null) temperatures.chamber = chamber;

  const subtask = str(p.subtask_name)?.trim() || '';
  const gcodeFile = str(p.gcode_file)?.trim() || '';
  let job: PrinterState['job'] = null;
  if (state !== 'idle' && (subtask || gcodeFile)) {
    const percent = num(p.mc_percent);
    const minutes = num(p.mc_remaining_time);
    const taskId = str(p.task_id);
    job = {
      name: subtask || basename(gcodeFile),
      file: gcodeFile || null,
      // mc_percent can still show the previous job's 100 while a new one prepares.
      progress: state === 'preparing' ? 0 : Math.max(0, Math.min(100, percent ?? 0)),
      layer_current: num(p.layer_num),
      layer_total: num(p.total_layer_num),
      remaining_seconds: minutes === null ? null : Math.max(0, Math.round(minutes * 60)),
      started_at: startedAt(p.gcode_start_time),
      printer_job_id: taskId && taskId !== '0' ? taskId : null,
      time_printing: null,
    };
  }

  // A fatal or serious HMS on an idle printer needs attention before the next print
  // (during and right after a job the job's own state stays the truth).
  const severe = hmsEntries(p.hms).some((e) => [1, 2].includes(hmsSeverity(e.code)));
  return {
    state: state === 'idle' && severe ? 'error' : state,
    raw_state: rawState,
    temperatures,
    job,
    error,
    firmware_version: firmware,
    model,
    capabilities: {
      has_camera: hasCamera(model),
      has_ams: hasAms(p),
      supports_remote_control: supportsRemoteControl(model, firmware, p.fun),
    },
    nozzle_diameter: nozzleDiameterOf(p),
    materials: materialsOf(p),
  };
}
