/**
 * What printers last reported, in memory: temperatures, progress, layers.
 * Drivers write it; printer views read it. It is not persisted: after a
 * restart the printers report again within seconds.
 */
import type { PrinterState } from '../printers/driver';
export interface LiveState {
  temperatures: { nozzle: number; bed: number; chamber?: number; nozzle_target: number; bed_target: number };
  progress: number;
  layer_current: number | null;
  layer_total: number | null;
  remaining_seconds: number | null;
}

const EMPTY: LiveState = {
  temperatures: { nozzle: 0, bed: 0, nozzle_target: 0, bed_target: 0 },
  progress: 0,
  layer_current: null,
  layer_total: null,
  remaining_seconds: null,
};

export class StatusCache {
  private readonly states = new Map<string, LiveState>();

  /** The last reported state, or zeros for a printer that has not reported yet. */
  get(printerId: string): LiveState {
    return this.states.get(printerId) ?? EMPTY;
  }

  has(printerId: string): boolean {
    return this.states.has(printerId);
  }

  /**
   * Takes a driver's state (the fleet, on every report). A printer's entry is one object, written in place on
   * every report: a new object each time would be garbage that lives just long enough to be copied by the
   * young-generation collector. Readers read it at once and keep nothing.
   */
  report(printerId: string, state: PrinterState): void {
    const job = state.job;
    let entry = this.states.get(printerId);
    if (!entry) {
      entry = { ...EMPTY };
      this.states.set(printerId, entry);
    }
    entry.temperatures = state.temperatures;
    entry.progress = job?.progress ?? 0;
    entry.layer_current = job?.layer_current ?? null;
    entry.layer_total = job?.layer_total ?? null;
    entry.remaining_seconds = job?.remaining_seconds ?? null;
  }

  delete(printerId: string): void {
    this.states.delete(printerId);
  }
}
