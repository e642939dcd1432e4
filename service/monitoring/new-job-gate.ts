/**
 * When may a printer's report create a new job? A printer (or anything on its
 * address) that floods reports with a changing job name must not create
 * thousands of jobs. A new job needs a start: the printer was seen not
 * printing (or its link came up, or the service just started) since its last
 * new job, or it reports a later start time than that job's. And whatever it
 * reports, a printer gets at most one new job per `minIntervalMs`. Refusals
 * are counted; the caller logs and alerts them at most once per interval.
 */

export type GateVerdict = 'ok' | 'no_start' | 'too_soon';

export interface NewJobGateOptions {
  /** Shortest time between two new jobs of one printer (ms, default 60 000). */
  minIntervalMs?: number;
  /** Clock (tests). */
  now?: () => number;
}

interface PrinterGate {
  sawStart: boolean;
  lastCreatedAt: number;
  /** Printer-reported start (ms) of the last new job, when it had one. */
  lastStart: number | null;
  refused: number;
  alertedAt: number;
}

/** A start time this much later than the last job's is a new print (printer start times drift by a minute at most). */
const START_DRIFT_MS = 60_000;

export class NewJobGate {
  private readonly printers = new Map<string, PrinterGate>();
  readonly minIntervalMs: number;
  private readonly now: () => number;

  constructor(options: NewJobGateOptions = {}) {
    this.minIntervalMs = options.minIntervalMs ?? 60_000;
    this.now = options.now ?? Date.now;
  }

  private of(printerId: string): PrinterGate {
    let gate = this.printers.get(printerId);
    if (!gate) {
      // First sight since the service started: a running print is discovered, not flooded.
      gate = { sawStart: true, lastCreatedAt: -Infinity, lastStart: null, refused: 0, alertedAt: -Infinity };
      this.printers.set(printerId, gate);
    }
    return gate;
  }

  /** The printer was seen not printing, or its link came (back) up: its next print is a start. */
  sawStart(printerId: string): void {
    this.of(printerId).sawStart = true;
  }

  check(printerId: string, startedAt: string | null): GateVerdict {
    const gate = this.of(printerId);
    const start = startedAt ? Date.parse(startedAt) : NaN;
    const laterStart = gate.lastStart !== null && Number.isFinite(start) && start - gate.lastStart > START_DRIFT_MS;
    if (!gate.sawStart && !laterStart) return 'no_start';
    if (this.now() - gate.lastCreatedAt < this.minIntervalMs) return 'too_soon';
    return 'ok';
  }

  created(printerId: string, startedAt: string | null): void {
    const gate = this.of(printerId);
    const start = startedAt ? Date.parse(startedAt) : NaN;
    gate.sawStart = false;
    gate.lastCreatedAt = this.now();
    gate.lastStart = Number.isFinite(start) ? start : null;
  }

  /** Counts a refusal; returns the refusals to report when an alert is due (at most one per interval), else null. */
  refused(printerId: string): number | null {
    const gate = this.of(printerId);
    gate.refused++;
    if (this.now() - gate.alertedAt < this.minIntervalMs) return null;
    gate.alertedAt = this.now();
    const count = gate.refused;
    gate.refused = 0;
    return count;
  }
}
