/**
 * bench/fleet's clock: when each simulator report left and which /ws frame it caused, so the
 * report -> frame latency comes from one process's clock.
 */
import { BENCH_NOZZLE_BASE, BENCH_NOZZLE_STEPS, type SimReportInfo } from '../service/simulators/bambu';

export function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return NaN;
  const at = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[at];
}

/** Where the simulators say that a report left (a Ledger, or several: bench/fleet feeds two). */
export interface ReportSink {
  /** `at`: when it left, on this process's performance.now() (now when not given). */
  onReport(info: SimReportInfo, at?: number): void;
}

/**
 * When each report left, by printer and nozzle temperature. The sawtooth has
 * BENCH_NOZZLE_STEPS values, so a slot is reused only after that many reports
 * (100 s at one report a second): a frame finds the report that caused it.
 */
export class Ledger {
  private readonly sent = new Map<string, Float64Array>();
  /** Frames that came before the ledger heard of their report (the simulator host reports send times in batches). */
  private readonly early = new Map<string, Float64Array>();
  windowStart = Infinity;
  windowEnd = Infinity;
  reportsInWindow = 0;
  framesInWindow = 0;
  latencies: number[] = [];
  unmatched = 0;
  /** Each matched report of the window as [sent (ms after the window opened), latency (ms), printer id], when asked for (--latencies). */
  each: Array<[number, number, string]> | null = null;

  onReport(info: SimReportInfo, at?: number): void {
    const now = at ?? performance.now();
    if (now >= this.windowStart && now < this.windowEnd) this.reportsInWindow++;
    const slot = info.nozzle - BENCH_NOZZLE_BASE;
    if (slot < 0 || slot >= BENCH_NOZZLE_STEPS) return;
    const arrived = this.early.get(info.id)?.[slot] ?? 0;
    // A frame of this report already came (it left the simulator before the batch saying so reached us).
    if (arrived && arrived >= now - 1 && arrived - now < MATCH_WINDOW_MS) {
      this.early.get(info.id)![slot] = 0;
      this.match(now, arrived, info.id);
      return;
    }
    this.slots(this.sent, info.id)[slot] = now;
  }

  /** A printer_status frame of `printerId` showing `nozzle`, arrived at `at` (this process's performance.now()). */
  onFrame(printerId: string, nozzle: number, at: number): void {
    if (at >= this.windowStart && at < this.windowEnd) this.framesInWindow++;
    const slot = nozzle - BENCH_NOZZLE_BASE;
    if (!Number.isInteger(slot) || slot < 0 || slot >= BENCH_NOZZLE_STEPS) {
      this.unmatched++;
      return;
    }
    const slots = this.sent.get(printerId);
    const sentAt = slots ? slots[slot] : 0;
    if (!sentAt || at - sentAt > MATCH_WINDOW_MS) {
      // Not heard of yet: the report's batch may still be on its way.
      this.slots(this.early, printerId)[slot] = at;
      return;
    }
    slots![slot] = 0; // one frame per report
    this.match(sentAt, at, printerId);
  }

  private match(sentAt: number, arrivedAt: number, id: string): void {
    if (sentAt < this.windowStart || sentAt >= this.windowEnd) return;
    this.latencies.push(arrivedAt - sentAt);
    this.each?.push([sentAt - this.windowStart, arrivedAt - sentAt, id]);
  }

  private slots(map: Map<string, Float64Array>, id: string): Float64Array {
    let slots = map.get(id);
    if (!slots) map.set(id, (slots = new Float64Array(BENCH_NOZZLE_STEPS)));
    return slots;
  }

  open(start: number, end: number): void {
    this.windowStart = start;
    this.windowEnd = end;
    this.reportsInWindow = 0;
    this.framesInWindow = 0;
    this.latencies = [];
    if (this.each) this.each = [];
    this.unmatched = 0;
  }
}

/** A frame and a report further apart than this are not each other's (a slot is reused after BENCH_NOZZLE_STEPS reports). */
const MATCH_WINDOW_MS = 10_000;
