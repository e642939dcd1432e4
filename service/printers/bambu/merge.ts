/**
 * Merging Bambu Lab `push_status` reports into one full report (PROTOCOLS.md §1 "Full vs delta reports"),
 * pure functions of their arguments:
 * - every key: `field = delta.field ?? previous` (null and missing keep the old value);
 * - nested objects merge key by key with the same rule;
 * - arrays replace (so `hms: []` means "all clear");
 * - except `ams.ams[]` (units) and `ams.ams[].tray[]`, merged by `id`; a tray
 *   that arrives with only its `id` is an emptied slot and replaces the old one.
 */
import { MAX_LIST_ENTRIES, MAX_OBJECT_KEYS, MAX_REPORT_VALUES, takeUsedKeys, USED_PRINT_KEYS, type KeptKey, type ReportCount } from './limits';
import { isObject, num, sameJson, str, type Json } from './values';

/** print_error 0x0300400C: the print was stopped by the user (screen, app or a stop command). */
export const CANCELLED_PRINT_ERROR = 50348044;

/** The report keys the temperatures are made of (a report that changes only these changes only the temperatures). */
export const TEMPERATURE_KEYS: ReadonlySet<string> = new Set(['nozzle_temper', 'bed_temper', 'chamber_temper', 'nozzle_target_temper', 'bed_target_temper']);

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
  /** The last report changed only temperatures, and they were written into `print` in place (moveTemperatures). */
  temperaturesMoved: boolean;
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
 * counted (checkReport); `given`: see takeUsedKeys. Throws ReportRefused before anything is merged when the kept
 * keys exceed the bounds.
 */
export function ingestReport(prev: BambuTracked | null, report: Json, count: ReportCount = { values: 1 }, given: KeptKey | null = null): BambuTracked {
  // Only the keys the service reads are merged (limits.ts): the merged state stays small whatever the printer sends.
  // A full snapshot is compared with what is held as it is taken, so what it repeats stays the same object.
  const full = report.msg === 0;
  const picked = takeUsedKeys(report, full ? (prev?.print ?? null) : null, count, given);
  const kept = prev ? moveTemperatures(prev.print, picked, full) : 'changed';
  const print = kept !== 'changed' ? prev!.print : full ? replaceKeys(prev?.print ?? null, picked) : mergeReport(prev?.print ?? null, picked);
  const cancelled = gcodeStateOf(print) === 'FAILED' && wasCancelled(prev, print);
  const temperaturesMoved = kept === 'temperatures';
  // Report after report of a printer only moves temperatures: then what is kept is prev, not an equal copy (one per
  // printer alive until its next report, which every scavenge would copy).
  if (prev !== null && prev.print === print && prev.cancelled === cancelled && prev.temperaturesMoved === temperaturesMoved) return prev;
  return { print, cancelled, temperaturesMoved };
}

/**
 * The common P1 and A1 delta, a message of nothing but a `print` of scalars in which every kept value is the
 * held one but temperatures, taken without picking, measuring or merging: the temperatures are written into
 * the held report as by moveTemperatures (writeTemperatures). Null for anything else (an object or a list anywhere, another kept
 * value changed, a full report), which goes the general way (checkReport, ingestReport); for the reports taken
 * here that way gives the same result (for an unchanged report `cancelled` stays what it was).
 */
export function takeScalarDelta(prev: BambuTracked, message: Json, status: Json): BambuTracked | null {
  for (const key in message) if (key !== 'print') return null;
  if (status.msg === 0) return null;
  const held = prev.print;
  // The message and its print key, counted as checkReport counts them.
  let values = 2;
  let moved = false;
  for (const key in status) {
    const value = status[key];
    // Objects and lists are measured and merged; so many values are refused (limits.ts).
    if ((typeof value === 'object' && value !== null) || ++values > MAX_REPORT_VALUES) return null;
    if (value === null || !USED_PRINT_KEYS.has(key)) continue;
    const before = held[key];
    if (value === before) continue;
    if (TEMPERATURE_KEYS.has(key) && typeof value === 'number' && typeof before === 'number') moved = true;
    // Another value changed, or a string longer than the bound (held cut): the general way.
    else return null;
  }
  if (moved) writeTemperatures(held, status);
  return prev.temperaturesMoved === moved ? prev : { print: held, cancelled: prev.cancelled, temperaturesMoved: moved };
}

/**
 * Most reports change nothing but temperatures (a P1's delta repeats its core keys unchanged, an X1's full
 * report repeats everything held). Then the temperatures are written into the merged report in place,
 * instead of a copy of it per report: those copies, each alive until the printer's next report, were most of
 * what the young generation kept at every scavenge (a third of a megabyte at 1000 printers). Nothing else
 * holds the merged report but the mapping's own memory of it (reports.ts), which reads the temperatures anew.
 * 'same': the report changed nothing; 'changed': something else changed, and `print` is untouched.
 */
function moveTemperatures(print: Json, picked: Json, full: boolean): 'same' | 'temperatures' | 'changed' {
  let moved = false;
  for (const key in picked) {
    const value = picked[key];
    const before = print[key];
    if (value === before || value === null || value === undefined) continue;
    // A temperature the merged report holds already (a new key is a change of its shape, merged as usual).
    if (TEMPERATURE_KEYS.has(key) && typeof value === 'number' && typeof before === 'number') {
      moved = true;
      continue;
    }
    // A full report's unchanged values are already the held ones (takeUsedKeys); a delta's are merged to tell.
    if (full || mergeValue(key, before, value) !== before) return 'changed';
  }
  if (!moved) return 'same';
  writeTemperatures(print, picked);
  return 'temperatures';
}

/** The temperatures `from` gives, written into the held report in place. */
function writeTemperatures(print: Json, from: Json): void {
  for (const key of TEMPERATURE_KEYS) {
    const value = from[key];
    if (typeof value === 'number') print[key] = value;
  }
}

/**
 * Keys that tell one print run from the next. After a dropped link the printer may have started, and failed,
 * another print meanwhile: the new link's full report then carries that run's keys.
 */
const RUN_KEYS = ['gcode_start_time', 'task_id', 'subtask_name', 'gcode_file'] as const;

/**
 * Whether a FAILED report is a user's cancel: it says so (print_error 50348044, shown only for a few seconds), or
 * it is the very FAILED run that was a cancel, its print_error cleared since. A different print_error is the
 * printer naming a real failure, and a different run (one started and failed while the link was down) is no
 * cancel of ours either: held across a reconnect, the old cancel showed such a failure as `stopped`, no error.
 */
function wasCancelled(prev: BambuTracked | null, print: Json): boolean {
  const error = num(print.print_error);
  if (error === CANCELLED_PRINT_ERROR) return true;
  if (error || prev === null || !prev.cancelled || gcodeStateOf(prev.print) !== 'FAILED') return false;
  return RUN_KEYS.every((key) => prev.print[key] === print[key]);
}

function gcodeStateOf(print: Json): string {
  return (str(print.gcode_state) ?? '').toUpperCase();
}
