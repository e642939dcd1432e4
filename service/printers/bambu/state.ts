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
import { sameCauses, worstFirst, type AttentionCause } from '../attention';
import { describeHms, describePrintError } from './hms-text';
import { activeSlotOf, materialsOf, nozzleDiameterOf } from './materials';

import { MAX_LIST_ENTRIES, MAX_OBJECT_KEYS, takeUsedKeys, type ReportCount } from './limits';
import { hasAms, hasCamera, modelFromSerial, supportsRemoteControl, type VersionInfo } from './model';
import { isObject, num, sameJson, str, type Json } from './values';

export * from './model';
export * from './values';

/** print_error 0x0300400C: the print was stopped by the user (screen, app or a stop command). */
export const CANCELLED_PRINT_ERROR = 50348044;

// ---------------------------------------------------------------------------
// Merge
// ---------------------------------------------------------------------------

// The merge keeps the identity of everything a report did not change: an unchanged object is the previous
// object, not a copy. The mapping then skips what it is made of (materials, capabilities), and a printer's
// retained report is not replaced by an equal young copy on every report (the copies survived into the old
// generation and made most of the garbage collector's work).

function mergeObjects(prev: Json, next: Json): Json {
  let out: Json | null = null;
  // Counted only once a new key arrives (a delta mostly updates keys the merged report has).
  let keys = -1;
  for (const key in next) {
    const before = prev[key];
    const value = mergeValue(key, before, next[key]);
    if (value === before) continue;
    if (!(key in (out ?? prev))) {
      if (keys < 0) keys = Object.keys(out ?? prev).length;
      // A printer that keeps inventing keys must not grow the merged state: new keys beyond the bound are dropped.
      if (keys++ >= MAX_OBJECT_KEYS) continue;
    }
    out ??= { ...prev };
    out[key] = value;
  }
  return out ?? prev;
}

function mergeValue(key: string, prev: unknown, next: unknown): unknown {
  if (next === undefined || next === null) return prev;
  if (key === 'ams' && isObject(next)) return mergeAms(isObject(prev) ? prev : {}, next);
  if (Array.isArray(next)) return sameJson(prev, next) ? prev : next;
  if (isObject(next)) return mergeObjects(isObject(prev) ? prev : {}, next);
  return next;
}

function idOf(item: unknown): string | null {
  return isObject(item) ? str(item.id) : null;
}

/** Merge two arrays of `{id, ...}` objects: update by id, keep the old order, append new ids. */
function mergeById(prev: unknown, next: unknown, merge: (a: Json, b: Json) => Json): unknown {
  const base: unknown[] = Array.isArray(prev) ? prev : [];
  if (!Array.isArray(next)) return prev;
  let out: unknown[] | null = null;
  for (const item of next) {
    const id = idOf(item);
    if (id === null || !isObject(item)) continue;
    const list = out ?? base;
    const at = list.findIndex((old) => idOf(old) === id);
    if (at < 0) {
      if (list.length < MAX_LIST_ENTRIES) (out ??= [...base]).push(merge({}, item));
      continue;
    }
    const old = isObject(list[at]) ? (list[at] as Json) : {};
    const merged = merge(old, item);
    if (merged !== list[at]) (out ??= [...base])[at] = merged;
  }
  return out ?? (Array.isArray(prev) ? prev : base);
}

function mergeTray(prev: Json, next: Json): Json {
  // A tray reported with nothing but its id is an empty slot (filament pulled out).
  if (Object.keys(next).every((k) => k === 'id')) return sameJson(prev, next) ? prev : { ...next };
  return mergeObjects(prev, next);
}

/** `list` merged by id into `out[key]`, copying `out` only when the list changed. */
function withMergedList(prev: Json, out: Json, key: string, list: unknown, merge: (a: Json, b: Json) => Json): Json {
  if (list === undefined || list === null) return out;
  const merged = mergeById(prev[key], list, merge);
  if (merged === out[key]) return out;
  const copy = out === prev ? { ...prev } : out;
  copy[key] = merged;
  return copy;
}

function mergeUnit(prev: Json, next: Json): Json {
  const { tray, ...rest } = next;
  return withMergedList(prev, mergeObjects(prev, rest), 'tray', tray, mergeTray);
}

function mergeAms(prev: Json, next: Json): Json {
  const { ams, ...rest } = next;
  return withMergedList(prev, mergeObjects(prev, rest), 'ams', ams, mergeUnit);
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

/**
 * A full snapshot (`msg: 0`, the pushall answer and an X1's periodic report) replaces every key it carries
 * whole: there is nothing to merge inside it (a full X1 report's AMS alone is sixteen trays of twenty fields).
 */
function replaceKeys(prev: Json | null, full: Json): Json {
  const out: Json = prev ? { ...prev } : {};
  for (const key in full) {
    const value = full[key];
    // Unchanged parts are already the previous objects (takeUsedKeys).
    if (value !== null && value !== undefined) out[key] = value;
  }
  return out;
}

/**
 * Takes one push_status into what the driver keeps. `count`: the values the message's other parts already
 * counted (checkReport). Throws ReportRefused before anything is merged when the kept keys exceed the bounds.
 */
export function ingestReport(prev: BambuTracked | null, report: Json, count: ReportCount = { values: 1 }): BambuTracked {
  // Only the keys the service reads are merged (limits.ts): the merged state stays small whatever the printer sends.
  // A full snapshot is compared with what is held as it is taken, so what it repeats stays the same object.
  const full = report.msg === 0;
  const picked = takeUsedKeys(report, full ? (prev?.print ?? null) : null, count);
  const print = full ? replaceKeys(prev?.print ?? null, picked) : mergeReport(prev?.print ?? null, picked);
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

/** The report keys the temperatures are made of (a report that changes only these changes only the temperatures). */
export const TEMPERATURE_KEYS: ReadonlySet<string> = new Set(['nozzle_temper', 'bed_temper', 'chamber_temper', 'nozzle_target_temper', 'bed_target_temper']);

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
