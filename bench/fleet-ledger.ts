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
  onReport(info: SimReportInfo): void;
}

/**
 * When each report left, by printer and nozzle temperature. The sawtooth has
 * BENCH_NOZZLE_STEPS values, so a slot is reused only after that many reports
 * (100 s at one report a second): a frame finds the report that caused it.
 */
export class Ledger {
  private readonly sent = new Map<string, Float64Array>();
  windowStart = Infinity;
  windowEnd = Infinity;
  reportsInWindow = 0;
  framesInWindow = 0;
  latencies: number[] = [];
  unmatched = 0;

  onReport(info: SimReportInfo): void {
    const now = performance.now();
    let slots = this.sent.get(info.id);
    if (!slots) this.sent.set(info.id, (slots = new Float64Array(BENCH_NOZZLE_STEPS)));
    const slot = info.nozzle - BENCH_NOZZLE_BASE;
    if (slot >= 0 && slot < BENCH_NOZZLE_STEPS) slots[slot] = now;
    if (now >= this.windowStart && now < this.windowEnd) this.reportsInWindow++;
  }

  onFrame(text: string): void {
    const now = performance.now();
    let frame: { type?: string; data?: { printer_id?: string; temperatures?: { nozzle?: number } } };
    try {
      frame = JSON.parse(text);
    } catch {
      return;
    }
    if (frame.type !== 'printer_status') return;
    if (now >= this.windowStart && now < this.windowEnd) this.framesInWindow++;
    const id = frame.data?.printer_id;
    const nozzle = frame.data?.temperatures?.nozzle;
    const slots = id ? this.sent.get(id) : undefined;
    const slot = typeof nozzle === 'number' ? nozzle - BENCH_NOZZLE_BASE : -1;
    const sentAt = slots && Number.isInteger(slot) && slot >= 0 && slot < BENCH_NOZZLE_STEPS ? slots[slot] : 0;
    if (!slots || !sentAt) {
      this.unmatched++;
      return;
    }
    slots[slot] = 0; // one frame per report
    if (sentAt >= this.windowStart && sentAt < this.windowEnd) this.latencies.push(now - sentAt);
  }

  open(start: number, end: number): void {
    this.windowStart = start;
    this.windowEnd = end;
    this.reportsInWindow = 0;
    this.framesInWindow = 0;
    this.latencies = [];
    this.unmatched = 0;
  }
}
