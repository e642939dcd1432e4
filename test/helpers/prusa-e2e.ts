/**
 * What the PrusaLink end-to-end tests share: a PrusaSimulator and a
 * PrusaDriver talking to it over real HTTP with Digest on 127.0.0.1 (with
 * short timeouts and a fast poll), closed after each test, the simulator's
 * control API, and ways to wait for what the driver reports.
 */
import http from 'node:http';
import { DriverError, type ConnectionChange, type DriverConfig, type PrinterDriver, type PrinterState } from '../../service/printers/driver';
import { PrusaDriver, type PrusaDriverOptions } from '../../service/printers/prusa/driver';
import { PrusaSimulator, type PrusaSimulatorOptions } from '../../service/simulators/prusa';
import { until as pollUntil } from './farm';

/** Two of the seed files every simulated Prusa holds (under /usb as CUBE_0~1.BGC and CUBE_0~1.GCO). */
export const BGCODE = 'cube_0.2mm_PLA_MK4S_12m.bgcode';
export const GCODE = 'cube_0.2mm_PLA_MK4S_12m.gcode';

const opened: Array<{ close(): Promise<void> }> = [];

/** Call once at the top of a test file: closes the drivers and simulators opened by the test after each test. */
export function closeAfterEach(): void {
  afterEach(async () => {
    // Drivers first (they were opened after their simulators), then simulators.
    for (const c of opened.splice(0).reverse()) await c.close();
  });
}

/** Anything else a test opens (a proxy in front of a simulator, say), closed after the test before what was opened earlier. */
export function closeAfterTest(resource: { close(): Promise<void> }): void {
  opened.push(resource);
}

/** A PrusaLink simulator (password Sup3r-Secr3t unless given) on 127.0.0.1, closed after the test. */
export async function simulator(options: PrusaSimulatorOptions = {}): Promise<PrusaSimulator> {
  const sim = await PrusaSimulator.start({ password: 'Sup3r-Secr3t', ...options });
  opened.push(sim);
  return sim;
}

/** A PrusaDriver for `sim` (not yet connected) with short timeouts, recording every state and link change; closed after the test. */
export function driverFor(sim: PrusaSimulator, config: Partial<DriverConfig> = {}, options: PrusaDriverOptions = {}) {
  const driver = new PrusaDriver(
    {
      id: 'prusa-e2e',
      ip_address: '127.0.0.1',
      serial_number: null,
      access_code: sim.password,
      ports: { http: sim.httpPort },
      watchdog_ms: 2000,
      command_timeout_ms: 1000,
      poll_ms: 100,
      ...config,
    },
    { backoffBaseMs: 50, backoffMaxMs: 400, ...options },
  );
  opened.push(driver);
  const states: PrinterState[] = [];
  const connections: ConnectionChange[] = [];
  driver.on('state', (s: PrinterState) => states.push(s));
  driver.on('connection', (c: ConnectionChange) => connections.push(c));
  return { driver, states, connections };
}

/** POST (or GET /state) on the simulator's control API. */
export function control(sim: PrusaSimulator, path: string, body: unknown = {}): Promise<{ status: number; body: any }> {
  const method = path === '/state' ? 'GET' : 'POST';
  return new Promise((resolve, reject) => {
    const req = http.request(`${sim.controlUrl}${path}`, { method, agent: false, headers: { 'content-type': 'application/json' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) }));
    });
    req.on('error', reject);
    req.end(method === 'POST' ? JSON.stringify(body) : undefined);
  });
}

/** A control call that must succeed (200); returns its body. */
export async function ok(sim: PrusaSimulator, path: string, body: unknown = {}) {
  const res = await control(sim, path, body);
  expect(res.status).toBe(200);
  return res.body;
}

/** What the waits below need of a driver (the PrusaLink and the Klipper driver both have it). */
type WatchedDriver = Pick<PrinterDriver, 'state' | 'connection' | 'on' | 'off'> & { readonly connectionMessage: string | null };

/** Resolves with the first state (current or coming) that matches, or fails after `ms`. */
export function waitForState(driver: WatchedDriver, what: string, match: (s: PrinterState) => boolean, ms = 5000): Promise<PrinterState> {
  return new Promise((resolve, reject) => {
    if (driver.state && match(driver.state)) return resolve(driver.state);
    const onState = (s: PrinterState) => {
      if (!match(s)) return;
      clearTimeout(timer);
      driver.off('state', onState);
      resolve(s);
    };
    const timer = setTimeout(() => {
      driver.off('state', onState);
      reject(new Error(`no state "${what}" within ${ms} ms; last: ${JSON.stringify(driver.state)}`));
    }, ms);
    driver.on('state', onState);
  });
}

/** Resolves when the link is (or becomes) `connection`, or fails after `ms`. */
export function waitForConnection(driver: WatchedDriver, connection: ConnectionChange['connection'], ms = 5000): Promise<ConnectionChange> {
  return new Promise((resolve, reject) => {
    if (driver.connection === connection) return resolve({ connection, message: driver.connectionMessage });
    const on = (c: ConnectionChange) => {
      if (c.connection !== connection) return;
      clearTimeout(timer);
      driver.off('connection', on);
      resolve(c);
    };
    const timer = setTimeout(() => {
      driver.off('connection', on);
      reject(new Error(`link not ${connection} within ${ms} ms (is ${driver.connection}: ${driver.connectionMessage})`));
    }, ms);
    driver.on('connection', on);
  });
}

/** Waits (checking every 25 ms) until `check` holds, failing after `ms`. */
export const until = (what: string, check: () => boolean, ms = 5000): Promise<unknown> => pollUntil(check, what, ms);

/** Expects `promise` to reject with a DriverError, and returns that error. */
export async function rejection(promise: Promise<unknown>): Promise<DriverError> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(DriverError);
    return err as DriverError;
  }
  throw new Error('expected a rejection');
}

/** A raw HTTP request to the simulated printer's API (X-Api-Key unless other headers are given), for what the driver does not do itself. */
export function rawRequest(
  sim: PrusaSimulator,
  method: string,
  path: string,
  headers: Record<string, string> = { 'x-api-key': sim.password },
  body?: Buffer,
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${sim.url}${path}`, { method, agent: false, headers: { ...headers, ...(body ? { 'content-length': String(body.length) } : {}) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end(body);
  });
}
