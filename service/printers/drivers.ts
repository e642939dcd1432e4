/** Makes the driver for a printer type. */
import { BambuDriver } from './bambu';
import type { DriverFactory } from './fleet';
import { KlipperDriver } from './klipper';
import { PrusaDriver } from './prusa';

export interface DriverTuning {
  /** First reconnect backoff step in ms (1000 in production; tests make it short). */
  backoffBaseMs?: number;
  /** Longest reconnect backoff step in ms (60 000 in production). */
  backoffMaxMs?: number;
}

export function driverFactory(tuning: DriverTuning = {}): DriverFactory {
  return (type, config) => {
    if (type === 'bambu_lab') return new BambuDriver(config, { ...tuning, authRetryMs: tuning.backoffMaxMs });
    if (type === 'klipper') return new KlipperDriver(config, { ...tuning, authRetryMs: tuning.backoffMaxMs });
    return new PrusaDriver(config, tuning);
  };
}

export const createDriver: DriverFactory = driverFactory();
