/**
 * What the Klipper end-to-end tests share: a simulated Moonraker and a
 * KlipperDriver talking to it over real HTTP and WebSocket JSON-RPC on
 * 127.0.0.1 with short timeouts, both closed after each test, and waiting
 * for what the driver reports.
 */
import type { ConnectionChange, DriverConfig, PrinterState } from '../../service/printers/driver';
import { KlipperDriver, type KlipperDriverOptions } from '../../service/printers/klipper';
import { KlipperSimulator, type KlipperSimulatorOptions } from '../../service/simulators/klipper';

export const GCODE = 'cube_0.2mm_PLA_12m.gcode';

const opened: Array<{ close(): Promise<void> }> = [];

export function closeAfterEach(): void {
  afterEach(async () => {
    for (const c of opened.splice(0).reverse()) await c.close();
  });
}

export async function simulator(options: KlipperSimulatorOptions = {}): Promise<KlipperSimulator> {
  const sim = await KlipperSimulator.start({ apiKey: 'moonraker-key-0123', ...options });
  opened.push(sim);
  return sim;
}

export function driverFor(sim: KlipperSimulator, config: Partial<DriverConfig> = {}, options: KlipperDriverOptions = {}) {
  const driver = new KlipperDriver(
    {
      id: 'klipper-e2e',
      ip_address: '127.0.0.1',
      serial_number: null,
      access_code: sim.options.apiKey ?? null,
      ports: { http: sim.httpPort },
      watchdog_ms: 3000,
      command_timeout_ms: 2000,
      poll_ms: 1000,
      ...config,
    },
    { backoffBaseMs: 50, backoffMaxMs: 300, klippyPollMs: 100, ...options },
  );
  opened.push(driver);
  const states: PrinterState[] = [];
  const connections: ConnectionChange[] = [];
  driver.on('state', (s: PrinterState) => states.push(s));
  driver.on('connection', (c: ConnectionChange) => connections.push(c));
  return { driver, states, connections };
}

/** POST on the simulator's control API; fails on a non-2xx answer. */
export async function ok(sim: KlipperSimulator, action: string, body: unknown = {}): Promise<any> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const res = await fetch(`${sim.controlUrl}${action}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  if (!res.ok) throw new Error(`control ${action}: ${res.status} ${await res.text()}`);
  return res.json();
}

export { waitForConnection, waitForState } from './prusa-e2e';
