/**
 * What goes on the wire for periodic reports. A real X1 sends (nearly) the
 * whole object each time, a P1/A1 sends only what changed. The simulator's
 * normal `msg:1` report carries the core status keys plus whatever changed;
 * the `partial_reports` fault sends strictly the changed keys, with AMS units
 * and trays diffed by id (so the client must merge).
 */
import type { Json } from './printer';

/** Keys a normal periodic report always carries. */
export const CORE_KEYS = [
  'gcode_state',
  'mc_percent',
  'mc_remaining_time',
  'layer_num',
  'total_layer_num',
  'nozzle_temper',
  'nozzle_target_temper',
  'bed_temper',
  'bed_target_temper',
  'chamber_temper',
  'print_error',
  'stg_cur',
  'mc_print_stage',
  'wifi_signal',
];

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

function byId(list: unknown): Map<string, Json> {
  const out = new Map<string, Json>();
  if (Array.isArray(list)) for (const item of list) if (isObj(item) && typeof item.id === 'string') out.set(item.id, item);
  return out;
}

function diffTray(prev: Json | undefined, next: Json): Json | null {
  if (!prev) return next;
  if (same(prev, next)) return null;
  if (Object.keys(next).length === 1) return next; // emptied slot: just the id
  const out: Json = { id: next.id };
  for (const [k, v] of Object.entries(next)) if (!same(prev[k], v)) out[k] = v;
  return out;
}

function diffUnit(prev: Json | undefined, next: Json): Json | null {
  if (!prev) return next;
  const out: Json = { id: next.id };
  let changed = false;
  for (const [k, v] of Object.entries(next)) {
    if (k === 'id') continue;
    if (k === 'tray') {
      const old = byId(prev.tray);
      const trays = (Array.isArray(v) ? v : []).filter(isObj).flatMap((t) => {
        const d = diffTray(old.get(String(t.id)), t);
        return d ? [d] : [];
      });
      if (trays.length) {
        out.tray = trays;
        changed = true;
      }
    } else if (!same(prev[k], v)) {
      out[k] = v;
      changed = true;
    }
  }
  return changed ? out : null;
}

function diffAms(prev: unknown, next: Json): Json | null {
  if (!isObj(prev)) return next;
  const out: Json = {};
  for (const [k, v] of Object.entries(next)) {
    if (k === 'ams') {
      const old = byId(prev.ams);
      const units = (Array.isArray(v) ? v : []).filter(isObj).flatMap((u) => {
        const d = diffUnit(old.get(String(u.id)), u);
        return d ? [d] : [];
      });
      if (units.length) out.ams = units;
    } else if (!same(prev[k], v)) {
      out[k] = v;
    }
  }
  return Object.keys(out).length ? out : null;
}

/** The keys of `next` that differ from `prev` (AMS diffed by id), plus the `always` keys. */
export function diffReport(prev: Json | null, next: Json, always: readonly string[] = []): Json {
  if (!prev) return { ...next };
  const out: Json = {};
  for (const [k, v] of Object.entries(next)) {
    if (always.includes(k)) out[k] = v;
    else if (k === 'ams' && isObj(v)) {
      const d = diffAms(prev.ams, v);
      if (d) out.ams = d;
    } else if (!same(prev[k], v)) out[k] = v;
  }
  return out;
}
