/**
 * Bounds on what a Bambu printer (or anything answering on its address) may
 * send. A real report is under 64 KB, a few levels deep and a few hundred
 * values; anything far beyond that is hostile or broken and must cost the
 * service neither its stack nor its memory:
 * - MQTT packets are refused by their declared length before they are buffered
 *   (MqttPacketGuard), since mqtt.js only enforces a maximum for MQTT 5;
 * - a parsed report is measured without recursion (checkReport);
 * - only the keys the service reads are kept and merged (pickUsedKeys), so a
 *   printer that invents keys cannot grow the merged state.
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
 * Measures a parsed message with an explicit stack (a report nested thousands
 * deep must not overflow the call stack). Returns why it is refused, or null.
 */
export function checkReport(message: unknown, maxDepth = MAX_REPORT_DEPTH, maxValues = MAX_REPORT_VALUES): string | null {
  // Objects and their depths on two parallel stacks; scalars are counted where they are met, never pushed
  // (this runs on every report: a full X1 report holds about a thousand values).
  const objects: object[] = [];
  const depths: number[] = [];
  let values = 1;
  if (typeof message === 'object' && message !== null) {
    objects.push(message);
    depths.push(0);
  }
  while (objects.length) {
    const value = objects.pop()! as Record<string, unknown>;
    const depth = depths.pop()!;
    if (depth >= maxDepth) return `report nested deeper than ${maxDepth} levels`;
    for (const key in value) {
      if (++values > maxValues) return `report holds more than ${maxValues} values`;
      const child = value[key];
      if (typeof child === 'object' && child !== null) {
        objects.push(child);
        depths.push(depth + 1);
      }
    }
  }
  return null;
}

/**
 * `value` cut to the bounds: the same value where nothing needed cutting (a parsed report is ours alone, so its
 * objects can be kept as they are), a copy only where something was cut. A full X1 report's AMS is four
 * hundred values: copying it on every report cost more than reading it.
 */
function bounded(value: unknown, depth: number): unknown {
  if (typeof value === 'string') return value.length > MAX_STRING_LENGTH ? value.slice(0, MAX_STRING_LENGTH) : value;
  if (typeof value !== 'object' || value === null) return value;
  if (depth <= 0) return undefined;
  if (Array.isArray(value)) {
    let out = value.length > MAX_LIST_ENTRIES ? value.slice(0, MAX_LIST_ENTRIES) : value;
    for (let i = 0; i < out.length; i++) {
      const item = out[i];
      const cut = bounded(item, depth - 1);
      if (cut === item) continue;
      if (out === value) out = value.slice();
      out[i] = cut;
    }
    return out;
  }
  const object = value as Json;
  let out: Json = object;
  let kept = 0;
  for (const key in object) {
    if (kept++ >= MAX_OBJECT_KEYS) {
      // Too many keys: a copy with the first ones only.
      if (out === object) out = { ...object };
      delete out[key];
      continue;
    }
    const item = object[key];
    const cut = bounded(item, depth - 1);
    if (cut === item) continue;
    if (out === object) out = { ...object };
    out[key] = cut;
  }
  return out;
}

/** The keys of a push_status the service reads, with lists, objects and strings cut to their bounds (the depth is already checked). */
export function pickUsedKeys(print: Json): Json {
  const out: Json = {};
  for (const key of USED_PRINT_KEYS) if (key in print) out[key] = bounded(print[key], MAX_REPORT_DEPTH);
  return out;
}

/**
 * Watches the bytes of an MQTT connection and says when a packet declares a
 * length above the limit, before the client buffers it. It follows the fixed
 * header of each packet (type byte, 1-4 length bytes) and skips the body.
 */
export class MqttPacketGuard {
  /** Bytes of the current packet's body still to skip. */
  private skip = 0;
  /** Fixed-header bytes of the next packet seen so far. */
  private header: number[] = [];

  constructor(private readonly maxBytes = MAX_PACKET_BYTES) {}

  /** Returns the declared size of the first packet over the limit, or null while every packet is within it. */
  feed(chunk: Buffer): number | null {
    let at = 0;
    while (at < chunk.length) {
      if (this.skip > 0) {
        const n = Math.min(this.skip, chunk.length - at);
        this.skip -= n;
        at += n;
        continue;
      }
      this.header.push(chunk[at++]);
      if (this.header.length < 2) continue;
      const last = this.header[this.header.length - 1];
      if (last & 0x80) {
        if (this.header.length >= 5) return Number.MAX_SAFE_INTEGER; // a length field longer than MQTT allows
        continue;
      }
      let length = 0;
      for (let i = this.header.length - 1; i >= 1; i--) length = length * 128 + (this.header[i] & 0x7f);
      const total = this.header.length + length;
      this.header = [];
      if (total > this.maxBytes) return total;
      this.skip = length;
    }
    return null;
  }
}
