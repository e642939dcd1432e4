/**
 * Pure Bambu Lab report handling: mapping the merged `push_status` report
 * (merge.ts) plus get_version facts into the normalised PrinterState. No
 * sockets, no timers: everything here is a function of its arguments, so
 * test/unit/bambu-state.test.ts covers it.
 */
import type { MachineState, PrinterError, PrinterState } from '../driver';
import { sameCauses, worstFirst, type AttentionCause } from '../attention';
import { describeHms, describePrintError } from './hms-text';
import { activeSlotOf, materialsOf, nozzleDiameterOf } from './materials';
import { CANCELLED_PRINT_ERROR, TEMPERATURE_KEYS, type BambuTracked } from './merge';
import { hasAms, hasCamera, modelFromSerial, supportsRemoteControl, type VersionInfo } from './model';
import { isObject, num, str, type Json } from './values';

export * from './model';
export * from './values';

export { CANCELLED_PRINT_ERROR, ingestReport, isStatusReport, mergeReport, takeScalarDelta, TEMPERATURE_KEYS, type BambuTracked } from './merge';

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

export { hmsCode, printErrorCode } from './hms-text';

/**
 * The causes a report shows, worst first: every HMS entry, then a non-zero print_error (a user cancel is not
 * a cause: it shows as state 'stopped'). Words come from the vendor's table for the printer's model.
 */
export function attentionOf(print: Json, model: string | null): AttentionCause[] {
  const causes: AttentionCause[] = hmsEntries(print.hms).map((e) => describeHms(e.attr, e.code, model));
  const error = num(print.print_error);
  if (error && error !== CANCELLED_PRINT_ERROR) causes.push(describePrintError(error, model));
  return worstFirst(causes);
}

/**
 * Keeps the last causes of one printer and works them out again only when the report's `hms` or
 * `print_error` changed (merged reports keep the same `hms` array until a report sends a new one), so the
 * per-report path costs two comparisons.
 */
/** A full report brings a new `hms` array each time: the same entries are the same causes. */
function sameHms(a: unknown, b: unknown): boolean {
  if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as { attr?: unknown; code?: unknown } | null;
    const y = b[i] as { attr?: unknown; code?: unknown } | null;
    if (!x || !y || x.attr !== y.attr || x.code !== y.code) return false;
  }
  return true;
}

export class AttentionMemo {
  private hms: unknown = undefined;
  private printError: unknown = undefined;
  private model: string | null = null;
  private causes: AttentionCause[] = [];

  of(print: Json, model: string | null): AttentionCause[] {
    if ((print.hms === this.hms || sameHms(print.hms, this.hms)) && print.print_error === this.printError && model === this.model) return this.causes;
    this.hms = print.hms;
    this.printError = print.print_error;
    this.model = model;
    const next = attentionOf(print, model);
    if (!sameCauses(next, this.causes)) this.causes = next;
    return this.causes;
  }
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

/** The error to show: the worst HMS entry, else the print_error (the first cause, in English). */
export function errorFromAttention(causes: readonly AttentionCause[]): PrinterError | null {
  const first = causes.find((c) => c.source === 'hms') ?? causes[0];
  if (!first) return null;
  return { code: first.source === 'hms' ? `HMS_${first.code}` : first.code, message: first.text.en.message };
}

export function printerError(print: Json, model: string | null = null): PrinterError | null {
  return errorFromAttention(attentionOf(print, model));
}

// ---------------------------------------------------------------------------
// PrinterState
// ---------------------------------------------------------------------------

export interface MapContext {
  version: VersionInfo | null;
  serial: string | null;
  /** The printer's memo: causes are worked out again only when hms or print_error changed. */
  attention?: AttentionMemo;
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

/**
 * The last mapping, so that the next one can keep what did not change. The merge keeps the identity of
 * every object a delta did not touch (`ams`, `vt_tray`, `hms`...), so "same object" means "same input".
 */
export interface PreviousMapping {
  print: Json;
  state: PrinterState;
}


export function temperaturesOf(p: Json): PrinterState['temperatures'] {
  const chamber = num(p.chamber_temper);
  const temperatures: PrinterState['temperatures'] = {
    nozzle: num(p.nozzle_temper) ?? 0,
    bed: num(p.bed_temper) ?? 0,
    nozzle_target: num(p.nozzle_target_temper) ?? 0,
    bed_target: num(p.bed_target_temper) ?? 0,
  };
  if (chamber !== null) temperatures.chamber = chamber;
  return temperatures;
}

/**
 * Whether `next` (a merged report) differs from `before` only in temperature keys: the merge keeps every
 * unchanged value as it was (the same object, or an equal scalar), so this is one comparison per kept key.
 */
export function onlyTemperaturesChanged(before: Json, next: Json): boolean {
  let keys = 0;
  for (const key in next) {
    keys++;
    if (next[key] !== before[key] && !TEMPERATURE_KEYS.has(key)) return false;
  }
  for (const _ in before) keys--;
  return keys === 0;
}

/**
 * `last` with new temperatures: its fields in toPrinterState's order, listed rather than spread (a spread of
 * the state was a tenth of a delta report's cost), so every state a driver hands out has one shape.
 */
export function withTemperatures(last: PrinterState, temperatures: PrinterState['temperatures']): PrinterState {
  return {
    state: last.state,
    raw_state: last.raw_state,
    temperatures,
    job: last.job,
    error: last.error,
    firmware_version: last.firmware_version,
    model: last.model,
    capabilities: last.capabilities,
    nozzle_diameter: last.nozzle_diameter,
    materials: last.materials,
    active_slot: last.active_slot,
    attention: last.attention,
  };
}

export function toPrinterState(tracked: BambuTracked, context: MapContext, previous: PreviousMapping | null = null): PrinterState {
  const p = tracked.print;
  const before = previous?.print;
  const last = previous?.state;
  const rawState = (str(p.gcode_state) ?? '').toUpperCase();
  const state = machineState(rawState, { cancelled: tracked.cancelled, printError: num(p.print_error), printType: str(p.print_type) });
  const model = context.version?.model ?? modelFromSerial(context.serial);
  // The memo hands back the same list while hms and print_error stay: then the error stays too.
  const attention = context.attention ? context.attention.of(p, model) : attentionOf(p, model);
  const error = last && last.attention === attention ? last.error : errorFromAttention(attention);
  const firmware = context.version?.firmware ?? null;

  const temperatures = temperaturesOf(p);

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
  const severe = state === 'idle' && attention.some((c) => c.source === 'hms' && (c.severity === 'fatal' || c.severity === 'serious'));
  // Capabilities and materials are rebuilt only when what they are made of changed (a report is mostly temperatures).
  const sameCapabilities = last?.capabilities && before!.fun === p.fun && before!.ams === p.ams && last.model === model && last.firmware_version === firmware;
  const capabilities = sameCapabilities
    ? last.capabilities
    : { has_camera: hasCamera(model), has_ams: hasAms(p), supports_remote_control: supportsRemoteControl(model, firmware, p.fun) };
  // Before a report has carried the trays (a delta that comes ahead of the pushall answer), what is loaded is not
  // known: no list at all, not an empty one, which would read as every spool taken out.
  const traysReported = p.ams !== undefined || p.vt_tray !== undefined;
  const materials = !traysReported ? undefined : last?.materials && before!.ams === p.ams && before!.vt_tray === p.vt_tray ? last.materials : materialsOf(p);
  return {
    state: severe ? 'error' : state,
    raw_state: rawState,
    temperatures,
    job,
    error,
    firmware_version: firmware,
    model,
    capabilities,
    nozzle_diameter: nozzleDiameterOf(p),
    materials,
    // tray_now lives in the ams object: unchanged with it.
    active_slot: last && materials === last.materials ? (last.active_slot ?? null) : activeSlotOf(p),
    attention,
  };
}
