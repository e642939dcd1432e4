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

  /** Takes a driver's state (the fleet, on every report): set() without a patch object per report. */
  report(printerId: string, state: PrinterState): void {
    const job = state.job;
    const entry = this.states.get(printerId);
    if (!entry) {
      this.set(printerId, { temperatures: state.temperatures, progress: job?.progress ?? 0, layer_current: job?.layer_current ?? null, layer_total: job?.layer_total ?? null, remaining_seconds: job?.remaining_seconds ?? null });
      return;
    }
    entry.temperatures = state.temperatures;
    entry.progress = job?.progress ?? 0;
    entry.layer_current = job?.layer_current ?? null;
    entry.layer_total = job?.layer_total ?? null;
    entry.remaining_seconds = job?.remaining_seconds ?? null;
  }

  /**
   * Takes what a printer reported. A printer's entry is one object, written in place on every report (the fleet
   * sets one per report of every printer: a new object each time would be garbage that lives just long enough
   * to be copied by the young-generation collector). Readers read it at once and keep nothing.
   */
  set(printerId: string, patch: Partial<LiveState> | LiveState): LiveState {
    const entry = this.states.get(printerId);
    if (!entry) {
      const next = isWhole(patch) ? { ...patch } : { ...EMPTY, ...patch };
      this.states.set(printerId, next);
      return next;
    }
    if (patch.temperatures !== undefined) entry.temperatures = patch.temperatures;
    if (patch.progress !== undefined) entry.progress = patch.progress;
    if (patch.layer_current !== undefined) entry.layer_current = patch.layer_current;
    if (patch.layer_total !== undefined) entry.layer_total = patch.layer_total;
    if (patch.remaining_seconds !== undefined) entry.remaining_seconds = patch.remaining_seconds;
    return entry;
  }

  delete(printerId: string): void {
    this.states.delete(printerId);
  }
}

function isWhole(patch: Partial<LiveState>): patch is LiveState {
  return patch.temperatures !== undefined && patch.progress !== undefined && patch.layer_current !== undefined && patch.layer_total !== undefined && patch.remaining_seconds !== undefined;
}
