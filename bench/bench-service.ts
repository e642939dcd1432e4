/**
 * The real service as bench workers run it (bench/fleet-worker.ts,
 * bench/camera-worker.ts): real Bambu drivers, SQLite in a temp dir that goes
 * with close(), silent log, short reconnect backoff as in the e2e tests and a
 * watchdog that a busy second does not trip.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createService, type Service } from '../service/app';
import { driverFactory } from '../service/printers/drivers';

export async function startBenchService(env: Record<string, string> = {}): Promise<{ port: number; close(): Promise<void> }> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'printfarm-bench-'));
  let service: Service;
  try {
    service = await createService({
      host: '127.0.0.1',
      port: 0,
      dataDir,
      env,
      logLevel: 'silent',
      updateCheckUrl: 'http://127.0.0.1:9/unreachable',
      updateCheckTimeout: 1,
      driverFactory: driverFactory({ backoffBaseMs: 100, backoffMaxMs: 1000 }),
      fleet: { watchdogMs: 15_000, commandTimeoutMs: 3000, connectTimeoutMs: 15_000 },
    });
  } catch (err) {
    fs.rmSync(dataDir, { recursive: true, force: true });
    throw err;
  }
  return {
    port: service.port,
    close: async () => {
      try {
        await service.close();
      } finally {
        fs.rmSync(dataDir, { recursive: true, force: true });
      }
    },
  };
}
