/**
 * The Bambu Lab driver against the Bambu simulator, over real MQTT/TLS and
 * implicit FTPS sockets on 127.0.0.1: what an operator would see of a
 * printer through Printfarm, including the faults real printers produce.
 */
import { createHash } from 'node:crypto';
import type { EventEmitter } from 'node:events';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import tls from 'node:tls';
import { Client } from 'basic-ftp';
import { connect as mqttConnect } from 'mqtt';
import { BambuDriver, type BambuDriverOptions } from '../../service/printers/bambu/driver';
import { DriverError, type ConnectionChange, type DriverConfig, type PrinterState } from '../../service/printers/driver';
import { BambuSimulator, type BambuSimulatorOptions } from '../../service/simulators/bambu';

jest.setTimeout(20_000);

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function startSim(options: BambuSimulatorOptions = {}): Promise<BambuSimulator> {
  const sim = await BambuSimulator.start(options);
  cleanups.push(() => sim.close());
  return sim;
}

interface Observed {
  driver: BambuDriver;
  states: PrinterState[];
  connections: ConnectionChange[];
}

function startDriver(sim: BambuSimulator, config: Partial<DriverConfig> = {}, options: BambuDriverOptions = {}): Observed {
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
function waitFor<T>(emitter: EventEmitter, event: string, test: (value: T) => boolean, label: string, timeoutMs = 5000, current?: () => T | null): Promise<T> {
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

const waitForState = (d: BambuDriver, test: (s: PrinterState) => boolean, label: string, timeoutMs = 5000) =>
  waitFor<PrinterState>(d, 'state', test, label, timeoutMs, () => d.state);

const waitForConnection = (d: BambuDriver, connection: ConnectionChange['connection'], label: string, timeoutMs = 5000) =>
  waitFor<ConnectionChange>(d, 'connection', (c) => c.connection === connection, label, timeoutMs, () => (d.connection === connection ? { connection, message: null } : null));

/** Polls a condition of the (in-process) simulator until it holds, with a deadline. */
async function until(check: () => boolean, label: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${label}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function control(sim: BambuSimulator, route: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${sim.controlUrl}${route}`, {
    method: route === '/state' ? 'GET' : 'POST',
    headers: { 'content-type': 'application/json' },
    body: route === '/state' ? undefined : JSON.stringify(body ?? {}),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

function simStats(sim: BambuSimulator): Record<string, number> {
  return sim.stateView().stats as Record<string, number>;
}

async function expectDriverError(promise: Promise<unknown>, code: DriverError['code']): Promise<DriverError> {
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

/** Consecutive duplicates removed: the path of states an operator saw. */
function path_(states: PrinterState[]): string[] {
  return states.map((s) => s.state).filter((s, i, all) => i === 0 || all[i - 1] !== s);
}

describe('Bambu simulator control API', () => {
  it('drives the simulated printer and refuses bad requests', async () => {
    const sim = await startSim({ speed: 10, model: 'X1C', name: 'Lab X1C' });
    expect(sim.serial).toMatch(/^00M/);
    expect(sim.printerConfig()).toEqual({
      id: sim.id,
      name: 'Lab X1C',
      type: 'bambu_lab',
      model: 'X1C',
      ip_address: '127.0.0.1',
      serial_number: sim.serial,
      access_code: sim.accessCode,
      mqtt_port: sim.mqttPort,
      ftps_port: sim.ftpsPort,
    });
    const initial = (await control(sim, '/state')).body;
    expect(initial).toMatchObject({ status: 'idle', progress: 0, file: null, link: 'online' });
    expect(initial.files).toEqual(expect.arrayContaining(['/Cube_PLA.gcode.3mf', '/cache/cube_0.2mm_PLA_MK4S_12m.gcode']));

    expect((await control(sim, '/print', { file: 'nothing.3mf' })).status).toBe(404);
    expect((await control(sim, '/print', {})).status).toBe(400);
    expect((await control(sim, '/pause')).status).toBe(409);
    expect((await control(sim, '/print', { file: 'Cube_PLA.gcode.3mf' })).body).toMatchObject({ status: 'preparing', file: '/Cube_PLA.gcode.3mf' });
    expect((await control(sim, '/print', { file: 'Cube_PLA.gcode.3mf' })).status).toBe(409);
    expect((await control(sim, '/fail')).body).toMatchObject({ status: 'failed', print_error: 0x07008011, hms: [{ attr: 0x07002000, code: 0x00020001 }] });
    expect((await control(sim, '/faults', { reject_commands: 'yes' })).status).toBe(400);
    expect((await control(sim, '/faults', { transfer_bytes_per_sec: -1 })).status).toBe(400);
    expect((await control(sim, '/nowhere')).status).toBe(404);
    const bad = await fetch(`${sim.controlUrl}/print`, { method: 'POST', body: '{not json' });
    expect(bad.status).toBe(400);
  });
});

describe('Bambu printer status', () => {
  it('follows a whole print from idle through preparing and printing to finished', async () => {
    const sim = await startSim({ speed: 600 });
    const { driver, states } = startDriver(sim);
    await driver.connect();
    expect(driver.connection).toBe('connected');

    const idle = await waitForState(driver, (s) => s.state === 'idle' && s.firmware_version !== null, 'idle state with firmware');
    expect(idle).toMatchObject({
      raw_state: 'IDLE',
      job: null,
      error: null,
      firmware_version: '01.08.02.00',
      model: 'P1S',
      capabilities: { has_camera: true, has_ams: true, supports_remote_control: true },
    });
    expect(idle.temperatures.chamber).toEqual(expect.any(Number));

    const started = Date.now();
    expect((await control(sim, '/print', { file: 'Cube_PLA.gcode.3mf' })).status).toBe(200);
    const finished = await waitForState(driver, (s) => s.state === 'finished', 'finished', 10_000);

    expect(path_(states.filter((s) => s.firmware_version !== null))).toEqual(['idle', 'preparing', 'printing', 'finished']);
    const printing = states.filter((s) => s.state === 'printing');
    const mid = printing.find((s) => s.job!.progress > 0 && s.job!.progress < 100)!;
    expect(mid).toBeDefined();
    expect(mid.job).toMatchObject({ name: 'Cube_PLA', file: 'Cube_PLA.gcode.3mf', layer_total: 40 });
    expect(mid.job!.layer_current).toBeGreaterThanOrEqual(1);
    expect(mid.job!.remaining_seconds! % 60).toBe(0); // minutes on the wire, seconds in Printfarm
    expect(mid.job!.remaining_seconds).toBeGreaterThan(0);
    expect(Date.parse(mid.job!.started_at!)).toBeGreaterThanOrEqual(Math.floor(started / 1000) * 1000 - 1000);
    expect(mid.temperatures).toMatchObject({ nozzle_target: 220, bed_target: 55 });
    expect(printing.map((s) => s.job!.progress)).toEqual([...printing.map((s) => s.job!.progress)].sort((a, b) => a - b));
    expect(finished.job).toMatchObject({ name: 'Cube_PLA', progress: 100, layer_current: 40, remaining_seconds: 0 });

    // pushall and get_version once per connection, not per report.
    expect(simStats(sim)).toMatchObject({ pushall_requests: 1, get_version_requests: 1 });
  });

  it('shows a failed print with the printer\'s HMS code and message', async () => {
    const sim = await startSim({ speed: 60 });
    const { driver } = startDriver(sim);
    await driver.connect();
    await control(sim, '/print', { file: 'Cube_PLA.gcode.3mf' });
    await waitForState(driver, (s) => s.state === 'preparing', 'preparing');
    await control(sim, '/fail');
    const failed = await waitForState(driver, (s) => s.state === 'failed', 'failed');
    expect(failed).toMatchObject({
      raw_state: 'FAILED',
      error: { code: 'HMS_0700_2000_0002_0001', message: 'AMS slot 1 filament has run out' },
      job: { name: 'Cube_PLA' },
      temperatures: { nozzle_target: 0, bed_target: 0 },
    });
  });

  it('merges partial reports into a full state when the printer sends only what changed', async () => {
    const sim = await startSim({ speed: 300 });
    const { driver, states } = startDriver(sim);
    await driver.connect();
    await waitForState(driver, (s) => s.state === 'idle' && s.firmware_version !== null, 'idle');
    expect((await control(sim, '/faults', { partial_reports: true })).body).toEqual({ faults: { partial_reports: true, reject_commands: false, transfer_bytes_per_sec: 0 } });

    // An observer on the same broker sees what is really on the wire.
    const raw: Array<Record<string, unknown>> = [];
    const observer = mqttConnect({ protocol: 'mqtts', host: '127.0.0.1', port: sim.mqttPort, username: 'bblp', password: sim.accessCode, rejectUnauthorized: false, reconnectPeriod: 0 });
    cleanups.push(() => observer.endAsync(true));
    observer.on('message', (_t, payload) => {
      const message = JSON.parse(payload.toString()) as { print?: Record<string, unknown> };
      if (message.print?.command === 'push_status') raw.push(message.print);
    });
    await new Promise<void>((resolve, reject) => {
      observer.once('connect', () => resolve());
      observer.once('error', reject);
    });
    await observer.subscribeAsync(`device/${sim.serial}/report`);

    const from = states.length;
    expect((await control(sim, '/print', { file: 'Cube_PLA.gcode.3mf' })).status).toBe(200);
    await waitForState(driver, (s) => s.state === 'finished', 'finished', 10_000);

    const deltas = raw.filter((r) => r.msg === 1);
    expect(deltas.length).toBeGreaterThan(3);
    // Most deltas carry neither the job name nor the state word nor the AMS...
    expect(deltas.filter((d) => !('subtask_name' in d) && !('gcode_state' in d)).length).toBeGreaterThan(2);
    // ...and an AMS change comes as one tray by id, without the tray's other fields.
    const trayDelta = deltas.map((d) => d.ams as { ams?: Array<{ id: string; tray?: Array<Record<string, unknown>> }> } | undefined).find((a) => a?.ams?.[0]?.tray);
    expect(trayDelta?.ams?.[0].tray?.[0]).toEqual({ id: '0', remain: expect.any(Number) });

    // Yet every state the driver reported while printing is complete.
    const printing = states.slice(from).filter((s) => s.state === 'printing');
    expect(printing.length).toBeGreaterThan(2);
    for (const s of printing) {
      expect(s.job).toMatchObject({ name: 'Cube_PLA', file: 'Cube_PLA.gcode.3mf', layer_total: 40 });
      expect(s.temperatures).toMatchObject({ nozzle_target: 220, bed_target: 55 });
      expect(s.capabilities?.has_ams).toBe(true);
      expect(s.firmware_version).toBe('01.08.02.00');
    }
  });
});

describe('Bambu printer commands', () => {
  it('pauses, resumes and stops a print, each acknowledged by the printer', async () => {
    const sim = await startSim({ speed: 30 });
    const { driver } = startDriver(sim);
    await driver.connect();
    await control(sim, '/print', { file: 'Cube_PLA.gcode.3mf' });
    await waitForState(driver, (s) => s.state === 'printing', 'printing', 10_000);

    await driver.pause();
    await waitForState(driver, (s) => s.state === 'paused', 'paused');
    expect((await control(sim, '/state')).body.status).toBe('paused');

    await driver.resume();
    await waitForState(driver, (s) => s.state === 'printing', 'printing again');
    expect((await control(sim, '/state')).body.status).toBe('printing');

    await driver.stop();
    const stopped = await waitForState(driver, (s) => s.state === 'stopped', 'stopped');
    expect(stopped).toMatchObject({ raw_state: 'FAILED', error: null, job: { name: 'Cube_PLA' } });
    expect((await control(sim, '/state')).body).toMatchObject({ status: 'stopped', print_error: 50348044 });
  });

  it('reports a command the printer refuses as REJECTED with its reason', async () => {
    const sim = await startSim({ speed: 30 });
    const { driver } = startDriver(sim);
    await driver.connect();
    await waitForState(driver, (s) => s.state === 'idle', 'idle');

    // Nothing to pause: the printer itself says no.
    const notPrinting = await expectDriverError(driver.pause(), 'REJECTED');
    expect(notPrinting.message).toMatch(/cannot pause/);

    await control(sim, '/print', { file: 'Cube_PLA.gcode.3mf' });
    await waitForState(driver, (s) => s.state === 'printing', 'printing', 10_000);
    await control(sim, '/faults', { reject_commands: true });
    const refused = await expectDriverError(driver.pause(), 'REJECTED');
    expect(refused.message).toMatch(/rejected/);
    expect(refused.details).toMatchObject({ command: 'pause' });
    expect((await control(sim, '/state')).body.status).toBe('printing');
  });

  it('knows when the printer wants signed commands (authorization firmware outside Developer Mode)', async () => {
    const sim = await startSim({ speed: 10, developerMode: false });
    const { driver } = startDriver(sim);
    await driver.connect();
    const state = await waitForState(driver, (s) => s.firmware_version !== null, 'state with firmware');
    expect(state.capabilities).toEqual({ has_camera: true, has_ams: true, supports_remote_control: false });
    const refused = await expectDriverError(driver.pause(), 'REJECTED');
    expect(refused.message).toBe('mqtt message verify failed');
  });

  it('starts stored files over MQTT and refuses files a Bambu printer cannot print', async () => {
    const sim = await startSim({ speed: 60 });
    const { driver } = startDriver(sim);
    await driver.connect();
    await waitForState(driver, (s) => s.state === 'idle' && s.capabilities !== null, 'idle');

    await driver.startPrint('/Cube_PLA.gcode.3mf');
    const project = await waitForState(driver, (s) => s.state === 'printing', 'printing the project');
    expect(project.job).toMatchObject({ name: 'Cube_PLA', file: 'Cube_PLA.gcode.3mf' });
    expect((await control(sim, '/state')).body.file).toBe('/Cube_PLA.gcode.3mf');

    await driver.stop();
    await waitForState(driver, (s) => s.state === 'stopped', 'stopped');

    await driver.startPrint('/cache/cube_0.2mm_PLA_MK4S_12m.gcode');
    const gcode = await waitForState(driver, (s) => s.state === 'printing' && s.job?.file === 'cube_0.2mm_PLA_MK4S_12m.gcode', 'printing the G-code');
    expect(gcode.job?.name).toBe('cube_0.2mm_PLA_MK4S_12m');

    await expectDriverError(driver.startPrint('/model/cube_20mm.stl'), 'REJECTED');
    const missing = await expectDriverError(driver.startPrint('/cache/nothing-here.gcode'), 'REJECTED');
    expect(missing.message).toMatch(/not found/);
  });
});

describe('Bambu printer link', () => {
  it('reconnects on its own after the printer goes offline and comes back', async () => {
    const sim = await startSim({ speed: 10 });
    const { driver, connections } = startDriver(sim);
    await driver.connect();
    await waitForState(driver, (s) => s.state === 'idle', 'first state');

    await control(sim, '/offline');
    await waitForConnection(driver, 'disconnected', 'disconnected');
    await expectDriverError(driver.pause(), 'OFFLINE');
    await expectDriverError(driver.listFiles(), 'OFFLINE');

    await control(sim, '/online');
    await waitForConnection(driver, 'connected', 'connected again');
    await control(sim, '/print', { file: 'Cube_PLA.gcode.3mf' });
    await waitForState(driver, (s) => s.state === 'preparing' || s.state === 'printing', 'fresh reports after reconnect');

    // (the reason may change while it is down: "connection lost", then "unreachable (ECONNREFUSED)")
    const seen = connections.map((c) => c.connection).filter((c, i, all) => i === 0 || all[i - 1] !== c);
    expect(seen).toEqual(['connected', 'disconnected', 'connected']);
    expect(connections.filter((c) => c.connection === 'disconnected').every((c) => typeof c.message === 'string' && c.message.length > 0)).toBe(true);
    expect(simStats(sim)).toMatchObject({ mqtt_connections: 2, pushall_requests: 2 });
  });

  it('rejects connect() with OFFLINE when nothing answers, then connects in the background', async () => {
    const sim = await startSim({ speed: 10 });
    await control(sim, '/offline');
    const { driver } = startDriver(sim);
    const err = await expectDriverError(driver.connect(), 'OFFLINE');
    expect(err.message).toMatch(/ECONNREFUSED/);
    expect(driver.connection).toBe('disconnected');

    await control(sim, '/online');
    await waitForConnection(driver, 'connected', 'background reconnect');
    await waitForState(driver, (s) => s.state === 'idle', 'state after reconnect');
  });

  it('marks a stalled printer disconnected after watchdog_ms and recovers when it answers again', async () => {
    const sim = await startSim({ speed: 10 });
    const { driver, connections } = startDriver(sim, { watchdog_ms: 1500, command_timeout_ms: 600 });
    await driver.connect();
    await waitForState(driver, (s) => s.state === 'idle', 'first state');

    const stalledAt = Date.now();
    await control(sim, '/stall');
    // The printer keeps the socket open but answers nothing.
    await expectDriverError(driver.pause(), 'TIMEOUT');
    const lost = await waitFor<ConnectionChange>(driver, 'connection', (c) => c.connection === 'disconnected', 'watchdog', 5000);
    expect(Date.now() - stalledAt).toBeGreaterThanOrEqual(1400);
    expect(lost.message).toMatch(/^no report for \d+ s$/);

    // New attempts reach a socket that never completes the handshake: TIMEOUT, retried.
    await waitFor<ConnectionChange>(driver, 'connection', (c) => /no MQTT answer/.test(c.message ?? ''), 'connect timeout while stalled', 5000);

    await control(sim, '/online');
    await waitForConnection(driver, 'connected', 'connected after the stall', 6000);
    await waitForState(driver, (s) => s.state === 'idle' && s.firmware_version !== null, 'fresh state after the stall');
    expect(connections[0]).toEqual({ connection: 'connected', message: null });
  });

  it('reports a wrong access code as an error, keeps retrying slowly and never shows the code', async () => {
    const sim = await startSim({ speed: 10 });
    const wrong = '13572468';
    const { driver, connections } = startDriver(sim, { access_code: wrong }, { authRetryMs: 400 });
    const err = await expectDriverError(driver.connect(), 'AUTH');
    expect(err.message).toMatch(/access code rejected/);
    expect(driver.connection).toBe('error');
    expect(connections[0]).toEqual({ connection: 'error', message: expect.stringMatching(/access code rejected/) });

    // Retries happen, but slowly (about one per 200-400 ms here, one per 30-60 s by default).
    await until(() => simStats(sim).mqtt_auth_failures >= 3, 'retries with the wrong code', 4000);
    const failures = simStats(sim).mqtt_auth_failures;
    expect(failures).toBeLessThanOrEqual(6);
    expect(driver.connection).toBe('error');
    expect(connections).toHaveLength(1); // no event storm while it keeps failing

    const ftp = await expectDriverError(driver.listFiles(), 'AUTH');
    for (const text of [err.message, ftp.message, JSON.stringify(err.details), ...connections.map((c) => JSON.stringify(c))]) {
      expect(text).not.toContain(wrong);
      expect(text).not.toContain(sim.accessCode);
    }
  });
});

describe('Bambu printer files', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'printfarm-bambu-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
  });

  const md5 = (b: Buffer) => createHash('md5').update(b).digest('hex');

  it('lists the printer folders and downloads files byte-identical, one FTP connection at a time', async () => {
    const sim = await startSim();
    const { driver } = startDriver(sim);

    const files = await driver.listFiles();
    const byPath = new Map(files.map((f) => [f.path, f]));
    expect([...byPath.keys()].sort()).toEqual(sim.stateView().files);
    expect(byPath.get('/Cube_PLA.gcode.3mf')).toEqual({
      path: '/Cube_PLA.gcode.3mf',
      name: 'Cube_PLA.gcode.3mf',
      size: sim.storage.get('/Cube_PLA.gcode.3mf')!.data.length,
      modified: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:00\.000Z$/),
      storage: '/',
    });
    expect(byPath.get('/cache/cube_0.2mm_PLA_MK4S_12m.gcode')?.storage).toBe('cache');
    expect(byPath.get('/model/cube_20mm.stl')?.storage).toBe('model');
    expect(byPath.get('/timelapse/video_2026-11-01_10-00-00.avi')?.storage).toBe('timelapse');

    const wanted = ['/Cube_PLA.gcode.3mf', '/cache/cube_0.2mm_PLA_MK4S_12m.gcode', '/model/cube_0.2mm_PLA_MK4S_12m.bgcode', '/model/cube_20mm.stl'];
    const sessionsBefore = simStats(sim).ftp_sessions;
    // Asked all at once; the driver queues them on one connection at a time.
    await Promise.all([...wanted.map((p, i) => driver.download(p, path.join(dir, `f${i}`))), driver.listFiles()]);
    for (const [i, p] of wanted.entries()) expect(md5(await readFile(path.join(dir, `f${i}`)))).toBe(md5(sim.storage.get(p)!.data));
    expect(simStats(sim).ftp_sessions - sessionsBefore).toBe(wanted.length + 1);
    expect(simStats(sim).ftp_max_concurrent_sessions).toBe(1);
    expect(simStats(sim).ftp_refused_data_connections).toBe(0);

    await expectDriverError(driver.download('/cache/missing.3mf', path.join(dir, 'missing')), 'NOT_FOUND');
  });

  it('refuses (522) a data connection that does not resume the control TLS session, like vsftpd', async () => {
    const sim = await startSim();
    const control = tls.connect({ host: '127.0.0.1', port: sim.ftpsPort, rejectUnauthorized: false });
    cleanups.push(async () => control.destroy());
    let session: Buffer | undefined;
    control.on('session', (s: Buffer) => (session = s));
    let buffer = '';
    const waiting: Array<(line: string) => void> = [];
    control.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      let at: number;
      while ((at = buffer.indexOf('\r\n')) >= 0) {
        const line = buffer.slice(0, at);
        buffer = buffer.slice(at + 2);
        if (/^\d{3} /.test(line)) waiting.shift()?.(line);
      }
    });
    const reply = () =>
      new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no FTP reply')), 3000);
        waiting.push((line) => {
          clearTimeout(timer);
          resolve(line);
        });
      });
    const send = (line: string) => {
      const r = reply();
      control.write(`${line}\r\n`);
      return r;
    };
    const dataConnection = async (resume: boolean, mode: 'EPSV' | 'PASV') => {
      const answer = await send(mode);
      const pasv = answer.match(/\((\d+),(\d+),(\d+),(\d+),(\d+),(\d+)\)/);
      const port = mode === 'EPSV' ? Number(answer.match(/\|\|\|(\d+)\|/)![1]) : Number(pasv![5]) * 256 + Number(pasv![6]);
      const data = tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false, ...(resume ? { session } : {}) });
      cleanups.push(async () => data.destroy());
      const chunks: Buffer[] = [];
      data.on('data', (c: Buffer) => chunks.push(c));
      data.on('error', () => undefined);
      await new Promise((resolve) => data.once('secureConnect', resolve));
      const closed = new Promise((resolve) => data.once('close', resolve));
      return { data, closed, text: () => Buffer.concat(chunks).toString() };
    };

    expect(await reply()).toMatch(/^220 /);
    expect(await send('USER bblp')).toMatch(/^331 /);
    expect(await send(`PASS ${sim.accessCode}`)).toMatch(/^230 /);
    expect(await send('PBSZ 0')).toMatch(/^200 /);
    expect(await send('PROT P')).toMatch(/^200 /);
    expect(session).toBeDefined();

    // A fresh TLS session on the data connection: refused.
    const fresh = await dataConnection(false, 'EPSV');
    expect(fresh.data.isSessionReused()).toBe(false);
    expect(await send('LIST /')).toBe('522 SSL connection failed: session reuse required');
    await fresh.closed;
    expect(fresh.text()).toBe('');
    expect(simStats(sim).ftp_refused_data_connections).toBe(1);

    // The control connection's session resumed: served.
    const resumed = await dataConnection(true, 'PASV');
    expect(resumed.data.isSessionReused()).toBe(true);
    const listing = send('LIST /');
    expect(await listing).toMatch(/^150 /);
    expect(await reply()).toMatch(/^226 /);
    await resumed.closed;
    expect(resumed.text()).toMatch(/^-rw-r--r-- +1 1000 +1000 +\d+ \w{3} \d\d \d\d:\d\d Cube_PLA\.gcode\.3mf\r$/m);
    expect(await send('QUIT')).toMatch(/^221 /);
  });

  it('serves the FTP commands clients use: upload, size, date, folders, delete', async () => {
    const sim = await startSim();
    const client = new Client(5000);
    cleanups.push(async () => client.close());
    await client.access({ host: '127.0.0.1', port: sim.ftpsPort, user: 'bblp', password: sim.accessCode, secure: 'implicit', secureOptions: { rejectUnauthorized: false } });
    const body = Buffer.from('G28\nG1 X10 Y10\n');
    await client.uploadFrom(Readable.from([body]), '/cache/uploaded.gcode');
    expect(sim.storage.get('/cache/uploaded.gcode')?.data.equals(body)).toBe(true);
    expect(await client.size('/cache/uploaded.gcode')).toBe(body.length);
    expect(Math.abs((await client.lastMod('/cache/uploaded.gcode')).getTime() - Date.now())).toBeLessThan(5000);
    await client.cd('/cache');
    expect(await client.pwd()).toBe('/cache');
    expect((await client.list()).map((f) => f.name)).toContain('uploaded.gcode');
    await client.cdup();
    expect(await client.pwd()).toBe('/');
    await expect(client.cd('/sdcard')).rejects.toMatchObject({ code: 550 });
    await client.remove('/cache/uploaded.gcode');
    expect(sim.storage.get('/cache/uploaded.gcode')).toBeNull();
    expect(await client.list('/no-such-folder')).toEqual([]); // vsftpd: an empty listing, not an error
    await expect(client.access({ host: '127.0.0.1', port: sim.ftpsPort, user: 'bblp', password: 'wrong', secure: 'implicit', secureOptions: { rejectUnauthorized: false } })).rejects.toMatchObject({ code: 530 });
  });

  it('reports progress through a slow (throttled) download and can abort one', async () => {
    const sim = await startSim();
    const { driver } = startDriver(sim);
    const file = '/cache/cube_0.2mm_PLA_MK4S_12m.gcode';
    const size = sim.storage.get(file)!.data.length;
    await control(sim, '/faults', { transfer_bytes_per_sec: Math.ceil(size / 1.2) });

    const progress: Array<[number, number]> = [];
    const started = Date.now();
    await driver.download(file, path.join(dir, 'slow.gcode'), (bytes, total) => progress.push([bytes, total]));
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect(progress.length).toBeGreaterThanOrEqual(5);
    expect(progress.every(([, total]) => total === size)).toBe(true);
    expect(progress.map(([b]) => b)).toEqual([...progress.map(([b]) => b)].sort((a, b) => a - b));
    expect(progress[progress.length - 1][0]).toBe(size);
    expect(md5(await readFile(path.join(dir, 'slow.gcode')))).toBe(md5(sim.storage.get(file)!.data));

    const abort = new AbortController();
    const aborted = driver.download(file, path.join(dir, 'aborted.gcode'), () => abort.abort(), abort.signal);
    await expect(aborted).rejects.toMatchObject({ name: 'AbortError' });
    // The queue is free again afterwards.
    expect((await driver.listFiles()).length).toBeGreaterThan(0);
  });

  it('fails a download cut off by the printer going offline mid-transfer', async () => {
    const sim = await startSim();
    const { driver } = startDriver(sim);
    const file = '/cache/cube_0.2mm_PLA_MK4S_12m.gcode';
    await control(sim, '/faults', { transfer_bytes_per_sec: 10_000 });
    let offline: Promise<unknown> | null = null;
    const download = driver.download(file, path.join(dir, 'cut.gcode'), () => {
      offline ??= control(sim, '/offline');
    });
    await expectDriverError(download, 'OFFLINE');
    await offline;
    expect(sim.stateView().link).toBe('offline');
  });
});
