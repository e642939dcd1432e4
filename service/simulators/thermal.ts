/** Heaters of the simulated printers: each approaches its target (the room when off) with one time constant. */

/** Thermal time constant (printer seconds). */
const TAU = 8;

export interface Heaters {
  nozzle: number;
  bed: number;
  targetNozzle: number;
  targetBed: number;
}

/** Moves both heaters `dt` printer seconds on. */
export function warm(h: Heaters, ambient: number, dt: number): void {
  const k = 1 - Math.exp(-dt / TAU);
  h.nozzle += ((h.targetNozzle || ambient) - h.nozzle) * k;
  h.bed += ((h.targetBed || ambient) - h.bed) * k;
}

/** Both heaters are close enough to their targets to print. */
export function atTemperature(h: Heaters): boolean {
  return Math.abs(h.nozzle - h.targetNozzle) < 3 && Math.abs(h.bed - h.targetBed) < 2;
}
