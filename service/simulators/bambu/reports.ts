/**
 * What goes on the wire for periodic reports. A real X1 sends (nearly) the
 * whole object each time, a P1/A1 sends only what changed. The simulator's
 * normal `msg:1` report carries the core status keys plus whatever changed;
 * the `partial_reports` fault sends strictly the changed keys, with AMS units
 * and trays diffed by id (so the client must merge). ReportStream keeps what a
 * printer sent last and numbers its reports.
 */
import { BENCH_NOZZLE_BASE, BENCH_NOZZLE_STEPS, type BambuSimulatorOptions } from './options';
import type { Json } from './printer';
import { realSizeReport } from './real-size';

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

/** One push_status made ready to write, and what the bench is told about it. */
export interface ReportOut {
  payload: string;
  sequence: number;
  full: boolean;
  nozzle: number;
}

/**
 * A printer's stream of push_status reports: what it sent last (deltas are made against it), the
 * sequence_id, and in benchmark mode the nozzle sawtooth and the full-report cadence.
 */
export class ReportStream {
  private lastSent: Json | null = null;
  private sequence = 0;
  private benchStep = 0;

  constructor(private readonly options: Pick<BambuSimulatorOptions, 'benchReports' | 'benchFullEvery' | 'realSizeReports'>) {}

  /** The next report of `snapshot`: full (`msg:0`) or periodic (`msg:1`, only what changed when `partial`). */
  next(snapshot: Json, full: boolean, partial: boolean): ReportOut {
    if (this.options.benchReports) snapshot.nozzle_temper = BENCH_NOZZLE_BASE + (this.benchStep++ % BENCH_NOZZLE_STEPS);
    full ||= (this.sequence + 1) % (this.options.benchFullEvery || Infinity) === 0;
    const body = full ? (this.options.realSizeReports ? realSizeReport(snapshot) : snapshot) : diffReport(this.lastSent, snapshot, partial ? [] : CORE_KEYS);
    this.lastSent = snapshot;
    const sequence = ++this.sequence;
    const payload = JSON.stringify({ print: { ...body, command: 'push_status', msg: full ? 0 : 1, sequence_id: String(sequence) } });
    return { payload, sequence, full, nozzle: snapshot.nozzle_temper as number };
  }
}
