/**
 * What printers last reported, in memory: temperatures, progress, layers.
 * Drivers write it; printer views read it. It is not persisted: after a
 * restart the printers report again within seconds.
 */
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

  set(printerId: string, patch: Partial<LiveState> | LiveState): LiveState {
    const next = isWhole(patch) ? patch : { ...this.get(printerId), ...patch };
    this.states.set(printerId, next);
    return next;
  }

  delete(printerId: string): void {
    this.states.delete(printerId);
  }
}

/** A whole state replaces the last one as it is (the fleet hands one on every report): no merge, no copy. */
function isWhole(patch: Partial<LiveState>): patch is LiveState {
  return patch.temperatures !== undefined && patch.progress !== undefined && patch.layer_current !== undefined && patch.layer_total !== undefined && patch.remaining_seconds !== undefined;
}
