/**
 * What the Bambu end-to-end tests share: a BambuSimulator and a BambuDriver
 * connected to it over real MQTT/TLS and implicit FTPS on 127.0.0.1 (with
 * short timeouts), closed after each test, and ways to wait for what the
 * driver reports, to drive the simulator's control API and to check a
 * DriverError.
 */
import type { EventEmitter } from 'node:events';
import { BambuDriver, type BambuDriverOptions } from '../../service/printers/bambu/driver';
import { DriverError, type ConnectionChange, type DriverConfig, type PrinterState } from '../../service/printers/driver';
import { BambuSimulator, type BambuSimulatorOptions } from '../../service/simulators/bambu';

/** What to close after the current test, closed last-in first-out. */
export const cleanups: Array<() => Promise<unknown>> = [];

/** Call once at the top of a test file: closes everything in `cleanups` after each test. */
export function closeAfterEach(): void {
  jest.setTimeout(20_000);
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
}

/** A Bambu simulator on 127.0.0.1, closed after the test. */
export async function startSim(options: BambuSimulatorOptions = {}): Promise<BambuSimulator> {
  const sim = await BambuSimulator.start(options);
  cleanups.push(() => sim.close());
  return sim;
}

export interface Observed {
  driver: BambuDriver;
  states: PrinterState[];
  connections: ConnectionChange[];
}

/** A BambuDriver for `sim` (not yet connected) with short timeouts, recording every state and link change; closed after the test. */
export function startDriver(sim: BambuSimulator, config: Partial<DriverConfig> = {}, options: BambuDriverOptions = {}): Observed {
  const driver = new BambuDriver(
    {
      id: sim.id,
      ip_address: '127.0.0.1',
      serial_number: sim.serial,
      access_code: sim.accessCode,
      ports: { mqtt: sim.mqttPort, ftps: sim.ftpsPort },
      watchdog_ms: 1500,
      command_timeout_ms: 2000,
      poll_ms: 1000,
      ...config,
    },
    { backoffBaseMs: 50, backoffMaxMs: 400, authRetryMs: 400, connectTimeoutMs: 1000, ...options },
  );
  const observed: Observed = { driver, states: [], connections: [] };
  driver.on('state', (s: PrinterState) => observed.states.push(s));
  driver.on('connection', (c: ConnectionChange) => observed.connections.push(c));
  cleanups.push(() => driver.close());
  return observed;
}

/** Resolves with the first `event` payload that satisfies `test` (or `current()` if it already does). */
export function waitFor<T>(emitter: EventEmitter, event: string, test: (value: T) => boolean, label: string, timeoutMs = 5000, current?: () => T | null): Promise<T> {
  return new Promise((resolve, reject) => {
    const now = current?.();
    if (now != null && test(now)) return resolve(now);
    const timer = setTimeout(() => {
      emitter.off(event, listener);
      reject(new Error(`timed out after ${timeoutMs} ms waiting for ${label}`));
    }, timeoutMs);
    const listener = (value: T) => {
      if (!test(value)) return;
      clearTimeout(timer);
      emitter.off(event, listener);
      resolve(value);
    };
    emitter.on(event, listener);
  });
}

export const waitForState = (d: BambuDriver, test: (s: PrinterState) => boolean, label: string, timeoutMs = 5000) =>
  waitFor<PrinterState>(d, 'state', test, label, timeoutMs, () => d.state);

export const waitForConnection = (d: BambuDriver, connection: ConnectionChange['connection'], label: string, timeoutMs = 5000) =>
  waitFor<ConnectionChange>(d, 'connection', (c) => c.connection === connection, label, timeoutMs, () => (d.connection === connection ? { connection, message: null } : null));

/** A call on the simulator's control API: GET /state, POST anything else. */
export async function control(sim: BambuSimulator, route: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${sim.controlUrl}${route}`, {
    method: route === '/state' ? 'GET' : 'POST',
    headers: { 'content-type': 'application/json' },
    body: route === '/state' ? undefined : JSON.stringify(body ?? {}),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** The simulator's own counters (connections, requests, FTP sessions, auth failures). */
export function simStats(sim: BambuSimulator): Record<string, number> {
  return sim.stateView().stats as Record<string, number>;
}

/** Expects `promise` to reject with a DriverError of `code`, and returns that error. */
export async function expectDriverError(promise: Promise<unknown>, code: DriverError['code']): Promise<DriverError> {
  const err = await promise.then(
    () => {
      throw new Error(`expected DriverError ${code}, got success`);
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(DriverError);
  expect((err as DriverError).code).toBe(code);
  return err as DriverError;
}
