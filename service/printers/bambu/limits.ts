/**
 * Bounds on what a Bambu printer (or anything answering on its address) may
 * send. A real report is under 64 KB, a few levels deep and a few hundred
 * values; anything far beyond that is hostile or broken and must cost the
 * service neither its stack nor its memory:
 * - MQTT packets are refused by their declared length before they are buffered
 *   (MAX_PACKET_BYTES, enforced by mqtt-packets.ts PacketReader);
 * - a parsed report is measured without recursion (checkReport), the keys the
 *   service reads as they are kept (takeUsedKeys), so it is walked once;
 * - only the keys the service reads are kept and merged (down to the six
 *   fields of an AMS tray), so a printer that invents keys cannot grow the
 *   merged state, and a change in a field nobody reads changes nothing held.
 */
import { isObject, type Json } from './values';

/** Largest MQTT packet accepted from a printer (bytes). */
export const MAX_PACKET_BYTES = 1024 * 1024;
/** Deepest nesting of a report (the real ones reach about 7: print.ams.ams[].tray[].cols[]). */
export const MAX_REPORT_DEPTH = 32;
/** Most values (objects, arrays, scalars) in one report. */
export const MAX_REPORT_VALUES = 20_000;
/** Longest string kept from a report field the service reads. */
export const MAX_STRING_LENGTH = 1024;
/** Most entries kept per list (hms, AMS units, trays). */
export const MAX_LIST_ENTRIES = 64;
/** Most keys kept per merged object inside the kept keys (an AMS unit or tray). */
export const MAX_OBJECT_KEYS = 128;

/** The `print` keys that toPrinterState and ingestReport read; everything else a printer reports is ignored. */
export const USED_PRINT_KEYS: ReadonlySet<string> = new Set([
  'gcode_state',
  'print_error',
  'print_type',
  'chamber_temper',
  'nozzle_temper',
  'bed_temper',
  'nozzle_target_temper',
  'bed_target_temper',
  'subtask_name',
  'gcode_file',
  'mc_percent',
  'mc_remaining_time',
  'task_id',
  'layer_num',
  'total_layer_num',
  'gcode_start_time',
  'hms',
  'fun',
  'ams',
  'vt_tray',
  'nozzle_diameter',
]);

/**
 * Inside `ams` and `vt_tray`, the keys the service reads (materials.ts, model.ts), level by level: a real X1's
 * AMS is sixteen trays of some twenty-five fields, of which six are read. A key maps to the shape of its value,
 * or to null for "kept whole". The others are measured, never kept or compared.
 */
interface Shape {
  keys: ReadonlyMap<string, Shape | null>;
  /** The value is a list of objects of this shape. */
  list?: true;
  /** An entry of the list holding only its id is an emptied slot (state.ts, mergeTray). */
  emptiedByIdOnly?: true;
}
const shape = (keys: Record<string, Shape | null>, list?: true): Shape => ({ keys: new Map(Object.entries(keys)), ...(list ? { list } : {}) });
const TRAY = shape({ id: null, tray_type: null, tray_color: null, remain: null, tray_uuid: null, tray_weight: null });
const UNIT = shape({ id: null, tray: { ...TRAY, list: true, emptiedByIdOnly: true } });
const AMS = shape({ ams: { ...UNIT, list: true }, tray_now: null });
/** The used print keys kept by shape rather than whole. */
const SHAPED_PRINT_KEYS: ReadonlyMap<string, Shape> = new Map([
  ['ams', AMS],
  ['vt_tray', TRAY],
]);

/** Why a report is refused: thrown by the walks below, turned into the reason by their callers. */
export class ReportRefused extends Error {}

/** Values met so far in one message: the bound holds for the whole message, across the walks below. */
export interface ReportCount {
  values: number;
}

const tooDeep = () => new ReportRefused(`report nested deeper than ${MAX_REPORT_DEPTH} levels`);
const tooMany = () => new ReportRefused(`report holds more than ${MAX_REPORT_VALUES} values`);

// The stacks measure() works on: the module's, used from index 0 each time and grown once, so that measuring a
// report allocates nothing (setting an array's length to 0 would drop its storage, and the next pushes grow it again).
const stackObjects: unknown[] = [];
const stackDepths: number[] = [];

/**
 * Measures `root` (at `rootDepth`) with an explicit stack: a report nested thousands deep must not overflow the
 * call stack. The used keys of `keptPrint` (a push_status) are left to takeUsedKeys, which measures them as it
 * keeps them, so that a full report is walked once.
 */
function measure(root: unknown, rootDepth: number, count: ReportCount, keptPrint: object | null = null): void {
  // Objects and their depths on two parallel stacks; scalars are counted where they are met, never pushed
  // (this runs on every report: a full X1 report holds about a thousand values).
  if (typeof root !== 'object' || root === null) return;
  const objects = stackObjects;
  const depths = stackDepths;
  objects[0] = root;
  depths[0] = rootDepth;
  let top = 1;
  try {
    while (top > 0) {
      const value = objects[--top] as Record<string, unknown>;
      // No report stays reachable from the stack.
      objects[top] = undefined;
      const depth = depths[top];
      if (depth >= MAX_REPORT_DEPTH) throw tooDeep();
      if (Array.isArray(value)) {
        // By index: for-in over an array makes a string of every index.
        for (let i = 0; i < value.length; i++) {
          if (++count.values > MAX_REPORT_VALUES) throw tooMany();
          const child: unknown = value[i];
          if (typeof child === 'object' && child !== null) {
            objects[top] = child;
            depths[top++] = depth + 1;
          }
        }
        continue;
      }
      const skipUsed = value === keptPrint;
      for (const key in value) {
        if (++count.values > MAX_REPORT_VALUES) throw tooMany();
        if (skipUsed && USED_PRINT_KEYS.has(key)) continue;
        const child = value[key];
        if (typeof child === 'object' && child !== null) {
          objects[top] = child;
          depths[top++] = depth + 1;
        }
      }
    }
  } finally {
    // A refused report leaves its rest on the stack.
    objects.fill(undefined, 0, top);
  }
}

/**
 * Measures a parsed message; returns why it is refused, or null. `keptPrint`: see measure(); `count` goes on
 * to takeUsedKeys.
 */
export function checkReport(message: unknown, keptPrint: object | null = null, count: ReportCount = { values: 1 }): string | null {
  try {
    measure(message, 0, count, keptPrint);
    return null;
  } catch (err) {
    if (err instanceof ReportRefused) return err.message;
    throw err;
  }
}

/**
 * `next` cut to the bounds and measured, keeping `prev` wherever `next` holds the same data: an unchanged part
 * is the object already held, not a new equal copy (a full X1 report repeats an AMS of four hundred values
 * every time; held copies of it made most of the garbage collector's work). Copies only where something was cut
 * or taken from `prev`. Recursion is safe: the depth is checked before each level.
 */
function keep(prev: unknown, next: unknown, depth: number, count: ReportCount): unknown {
  if (typeof next === 'string') {
    const cut = next.length > MAX_STRING_LENGTH ? next.slice(0, MAX_STRING_LENGTH) : next;
    return cut === prev ? prev : cut;
  }
  if (typeof next !== 'object' || next === null) return next;
  if (depth >= MAX_REPORT_DEPTH) throw tooDeep();
  if (Array.isArray(next)) return keepList(Array.isArray(prev) ? prev : null, next, depth, count);
  return keepObject(isObject(prev) ? prev : null, next as Json, depth, count);
}

/** keep() for a value of a known shape: only the shape's keys are kept, the others measured. */
function keepShaped(prev: unknown, next: unknown, shape: Shape, depth: number, count: ReportCount): unknown {
  if (typeof next !== 'object' || next === null) return keep(prev, next, depth, count);
  if (depth >= MAX_REPORT_DEPTH) throw tooDeep();
  if (Array.isArray(next)) return shape.list ? keepShapedList(Array.isArray(prev) ? prev : null, next, shape, depth, count) : keep(prev, next, depth, count);
  return keepPicked(isObject(prev) ? prev : null, next as Json, shape, depth, count);
}

function keepPicked(prev: Json | null, next: Json, shape: Shape, depth: number, count: ReportCount): Json {
  // Nothing is built while every kept value is prev's (a full report repeats the AMS unchanged, report after report).
  let out: Json | null = null;
  let kept = 0;
  for (const key in next) {
    if (++count.values > MAX_REPORT_VALUES) throw tooMany();
    const item = next[key];
    const child = shape.keys.get(key);
    if (child === undefined) {
      if (typeof item === 'object' && item !== null) measure(item, depth + 1, count);
      continue;
    }
    const before = prev ? prev[key] : undefined;
    const value = child ? keepShaped(before, item, child, depth + 1, count) : keep(before, item, depth + 1, count);
    kept++;
    if (out === null && value === before && prev !== null) continue;
    // The first difference: the kept keys met so far are prev's.
    out ??= pickedSoFar(prev, next, shape, key);
    out[key] = value;
  }
  return out ?? (prev !== null && keyCount(prev) === kept ? prev : pickedSoFar(prev, next, shape, null));
}

/** prev's values of the shape's keys that `next` holds before `stop` (all of them when stop is null). */
function pickedSoFar(prev: Json | null, next: Json, shape: Shape, stop: string | null): Json {
  const out: Json = {};
  for (const key in next) {
    if (key === stop) break;
    if (shape.keys.has(key) && prev && key in prev) out[key] = prev[key];
  }
  return out;
}

function keepShapedList(prev: unknown[] | null, next: unknown[], shape: Shape, depth: number, count: ReportCount): unknown[] {
  // Built only from the first entry that differs from prev's (or is left out).
  let out: unknown[] | null = null;
  for (let i = 0; i < next.length; i++) {
    if (++count.values > MAX_REPORT_VALUES) throw tooMany();
    const item = next[i];
    if (i >= MAX_LIST_ENTRIES) {
      measure(item, depth + 1, count);
      continue;
    }
    const at = out ? out.length : i;
    const before = prev ? prev[at] : undefined;
    const kept = keepShaped(before, item, shape, depth + 1, count);
    // A tray that said only what the service does not read would, as its id alone, read as an emptied slot.
    const leftOut = shape.emptiedByIdOnly === true && idOnly(kept) && !idOnly(item);
    if (out === null && !leftOut && kept === before && prev !== null) continue;
    out ??= prev ? prev.slice(0, i) : [];
    if (!leftOut) out.push(kept);
  }
  const taken = Math.min(next.length, MAX_LIST_ENTRIES);
  if (out === null) return prev !== null && prev.length === taken ? prev : (prev ?? []).slice(0, taken);
  return prev !== null && prev.length === out.length && out.every((value, i) => value === prev[i]) ? prev : out;
}

/** An object holding nothing but `id`. */
function idOnly(value: unknown): boolean {
  if (!isObject(value)) return false;
  for (const key in value) if (key !== 'id') return false;
  return 'id' in value;
}

function keepList(prev: unknown[] | null, next: unknown[], depth: number, count: ReportCount): unknown[] {
  let out = next.length > MAX_LIST_ENTRIES ? next.slice(0, MAX_LIST_ENTRIES) : next;
  // Compared item by item only when the lengths match (a list that grew or shrank is new).
  const base = prev && prev.length === out.length ? prev : null;
  let same = base !== null;
  for (let i = 0; i < out.length; i++) {
    if (++count.values > MAX_REPORT_VALUES) throw tooMany();
    const item = out[i];
    const before = base ? base[i] : undefined;
    const kept = keep(before, item, depth + 1, count);
    if (kept !== before) same = false;
    if (kept !== item) {
      if (out === next) out = next.slice();
      out[i] = kept;
    }
  }
  // The entries beyond the bound are dropped, but they count.
  for (let i = MAX_LIST_ENTRIES; i < next.length; i++) {
    if (++count.values > MAX_REPORT_VALUES) throw tooMany();
    measure(next[i], depth + 1, count);
  }
  return same ? base! : out;
}

function keepObject(prev: Json | null, next: Json, depth: number, count: ReportCount): Json {
  const keys = Object.keys(next);
  if ((count.values += keys.length) > MAX_REPORT_VALUES) throw tooMany();
  let out = next;
  // The same only if prev has exactly these keys, each with the same data (its key count is checked last).
  let same = prev !== null && keys.length <= MAX_OBJECT_KEYS;
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i];
    const item = next[key];
    if (i >= MAX_OBJECT_KEYS) {
      // Too many keys: the first ones only (the others are measured, not kept).
      measure(item, depth + 1, count);
      if (out === next) out = { ...next };
      delete out[key];
      continue;
    }
    // Compared with prev even after a difference: the unchanged siblings stay shared.
    const before = prev ? prev[key] : undefined;
    const kept = keep(before, item, depth + 1, count);
    if (kept !== before) same = false;
    if (kept !== item) {
      if (out === next) out = { ...next };
      out[key] = kept;
    }
  }
  return same && keyCount(prev!) === keys.length ? prev! : out;
}

function keyCount(object: Json): number {
  let n = 0;
  for (const _ in object) n++;
  return n;
}

/**
 * One used key whose kept value is known without reading it (`known`: repeated-ams.ts), or is to be recorded
 * as it is kept: the value and the values it was measured to hold.
 */
export interface KeptKey {
  readonly key: string;
  known: boolean;
  value: unknown;
  values: number;
}

/**
 * The keys of a push_status the service reads (print at depth 1 of the message), cut to their bounds and
 * measured; each keeps `prev`'s value where it holds the same data (pass the merged report for a full
 * snapshot, null for a delta, which carries only what changed). `kept`: a key given or recorded (KeptKey). Throws
 * ReportRefused.
 */
export function takeUsedKeys(print: Json, prev: Json | null, count: ReportCount, kept: KeptKey | null = null): Json {
  const out: Json = {};
  for (const key of USED_PRINT_KEYS) {
    if (!(key in print)) continue;
    if (kept !== null && key === kept.key && kept.known) {
      if ((count.values += kept.values) > MAX_REPORT_VALUES) throw tooMany();
      out[key] = kept.value;
      continue;
    }
    const shaped = SHAPED_PRINT_KEYS.get(key);
    const before = prev ? prev[key] : undefined;
    const start = count.values;
    out[key] = shaped ? keepShaped(before, print[key], shaped, 2, count) : keep(before, print[key], 2, count);
    if (kept !== null && key === kept.key) {
      kept.value = out[key];
      kept.values = count.values - start;
    }
  }
  return out;
}

/** takeUsedKeys without a previous report (a report on its own). */
export function pickUsedKeys(print: Json): Json {
  return takeUsedKeys(print, null, { values: 1 });
}
