/** Makes the driver for a printer type. */
import { BambuDriver } from './bambu';
import type { DriverFactory } from './fleet';
import { PrusaDriver } from './prusa';

export interface DriverTuning {
  /** First reconnect backoff step in ms (1000 in production; tests make it short). */
  backoffBaseMs?: number;
  /** Longest reconnect backoff step in ms (60 000 in production). */
  backoffMaxMs?: number;
}

export function driverFactory(tuning: DriverTuning = {}): DriverFactory {
  return (type, config) => (type === 'bambu_lab' ? new BambuDriver(config, { ...tuning, authRetryMs: tuning.backoffMaxMs }) : new PrusaDriver(config, tuning));
}

export const createDriver: DriverFactory = driverFactory();
