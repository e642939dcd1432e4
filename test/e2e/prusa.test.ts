/**
 * The PrusaLink driver against the PrusaLink simulator, over real HTTP with
 * Digest on loopback: what an operator sees through a print, commands the
 * printer accepts and refuses, and every fault the link can suffer.
 */
import http from 'node:http';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DriverError, type ConnectionChange, type DriverConfig, type PrinterState } from '../../service/printers/driver';
import { PrusaDriver, type PrusaDriverOptions } from '../../service/printers/prusa/driver';
import { PrusaSimulator, type PrusaSimulatorOptions } from '../../service/simulators/prusa';
import { seedFiles } from '../../service/simulators/seed-files';

const BGCODE = 'cube_0.2mm_PLA_MK4S_12m.bgcode';
const GCODE = 'cube_0.2mm_PLA_MK4S_12m.gcode';

const opened: Array<{ close(): Promise<void> }> = [];
let tmp: string;

beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'printfarm-prusa-'));
});

afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

afterEach(async () => {
  // Drivers first (they were opened after their simulators), then simulators.
  for (const c of opened.splice(0).reverse()) await c.close();
});

async function simulator(options: PrusaSimulatorOptions = {}): Promise<PrusaSimulator> {
  const sim = await PrusaSimulator.start({ password: 'Sup3r-Secr3t', ...options });
  opened.push(sim);
  return sim;
}

function driverFor(sim: PrusaSimulator, config: Partial<DriverConfig> = {}, options: PrusaDriverOptions = {}) {
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
function control(sim: PrusaSimulator, path: string, body: unknown = {}): Promise<{ status: number; body: any }> {
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

async function ok(sim: PrusaSimulator, path: string, body: unknown = {}) {
  const res = await control(sim, path, body);
  expect(res.status).toBe(200);
  return res.body;
}

/** Resolves with the first state (current or coming) that matches, or fails after `ms`. */
function waitForState(driver: PrusaDriver, what: string, match: (s: PrinterState) => boolean, ms = 5000): Promise<PrinterState> {
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

function waitForConnection(driver: PrusaDriver, connection: ConnectionChange['connection'], ms = 5000): Promise<ConnectionChange> {
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

/** Waits (checking every 20 ms) until `check` holds, failing after `ms`. */
async function until(what: string, check: () => boolean, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`not true within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function rejection(promise: Promise<unknown>): Promise<DriverError> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(DriverError);
    return err as DriverError;
  }
  throw new Error('expected a rejection');
}

/** Raw upload with X-Api-Key (what PrusaSlicer does), to put a file in a folder. */
function upload(sim: PrusaSimulator, path: string, data: Buffer): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${sim.url}/api/v1/files/usb/${path.split('/').map(encodeURIComponent).join('/')}`,
      { method: 'PUT', agent: false, headers: { 'x-api-key': sim.password, 'content-type': 'application/octet-stream', 'content-length': data.length } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

/** A raw request to the printer API with X-Api-Key (or none), for what the driver does not do itself. */
function raw(
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

describe('the simulated printer speaks PrusaLink as Buddy does', () => {
  test('Digest challenge without qop, 16-hex nonce; wrong key 401; job 204 when idle', async () => {
    const sim = await simulator();
    const anonymous = await raw(sim, 'GET', '/api/v1/status', {});
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers['www-authenticate']).toMatch(/^Digest realm="Printer API", nonce="[0-9a-f]{16}", stale=false$/);
    expect((await raw(sim, 'GET', '/api/v1/status', { 'x-api-key': 'nope' })).status).toBe(401);
    expect((await raw(sim, 'GET', '/api/v1/job')).status).toBe(204);
    const status = JSON.parse((await raw(sim, 'GET', '/api/v1/status')).body);
    expect(status).toEqual({
      printer: expect.objectContaining({ state: 'IDLE', temp_nozzle: 24, target_nozzle: 0, temp_bed: 24, target_bed: 0, flow: 100, speed: 100 }),
      storage: { path: '/usb/', name: 'usb', read_only: false },
    });
  });

  test('files: upload 201 (409 without Overwrite), HEAD, print after upload, delete (409 while printing)', async () => {
    const sim = await simulator({ speed: 2 });
    const data = Buffer.from('G28\nG1 X1\n');
    const put = (headers: Record<string, string> = {}) =>
      raw(sim, 'PUT', '/api/v1/files/usb/Upload%20Test.gcode', { 'x-api-key': sim.password, 'content-type': 'application/octet-stream', ...headers }, data);
    expect((await put()).status).toBe(201);
    expect((await put()).status).toBe(409);
    expect((await put({ overwrite: '?1', 'print-after-upload': '?1' })).status).toBe(201);
    const job = JSON.parse((await raw(sim, 'GET', '/api/v1/job')).body);
    expect(job).toMatchObject({ state: 'PRINTING', file: { name: 'UPLOAD~1.GCO', display_name: 'Upload Test.gcode', path: '/usb', size: data.length } });
    expect(job.file.refs).toEqual({ icon: '/thumb/s/usb/UPLOAD~1.GCO', thumbnail: '/thumb/l/usb/UPLOAD~1.GCO', download: '/usb/UPLOAD~1.GCO' });
    const head = await raw(sim, 'HEAD', '/api/v1/files/usb/UPLOAD~1.GCO');
    expect(head.headers['currently-printing']).toBe('true');
    expect((await raw(sim, 'DELETE', '/api/v1/files/usb/UPLOAD~1.GCO')).status).toBe(409);
    expect((await raw(sim, 'DELETE', `/api/v1/job/${job.id}`)).status).toBe(204);
    expect((await raw(sim, 'DELETE', `/api/v1/job/${job.id + 1}`)).status).toBe(404);
    expect((await raw(sim, 'DELETE', '/api/v1/files/usb/UPLOAD~1.GCO')).status).toBe(204);
    expect((await raw(sim, 'GET', '/api/v1/files/usb/UPLOAD~1.GCO')).status).toBe(404);
    expect((await control(sim, '/state')).body.files).not.toContain('Upload Test.gcode');
  });
});

describe('PrusaLink driver against the simulated printer', () => {
  test('an operator sees a Core One go idle -> printing (heating) -> finished, then every other state the printer reports', async () => {
    const sim = await simulator({ speed: 300, camera: true });
    const { driver, states, connections } = driverFor(sim);
    await driver.connect();
    expect(driver.connection).toBe('connected');
    expect(connections).toEqual([{ connection: 'connected', message: null }]);
    expect(driver.authMode).toBe('digest');
    expect(driver.state).toMatchObject({
      state: 'idle',
      raw_state: 'IDLE',
      job: null,
      error: null,
      firmware_version: '6.2.4+8808',
      model: 'Core One',
      capabilities: { has_camera: true, has_ams: false, supports_remote_control: true },
      temperatures: { nozzle: 24, bed: 24, nozzle_target: 0, bed_target: 0 },
    });

    const started = await ok(sim, '/print', { file: BGCODE });
    const jobId = String(started.state.job_id);
    const printing = await waitForState(driver, 'printing', (s) => s.state === 'printing');
    expect(printing.raw_state).toBe('PRINTING');
    expect(printing.temperatures).toMatchObject({ nozzle_target: 215, bed_target: 60 });
    expect(printing.job).toMatchObject({
      name: BGCODE,
      display_name: BGCODE,
      file: '/usb/CUBE_0~1.BGC',
      printer_job_id: jobId,
      layer_current: null,
      layer_total: null,
    });
    const midway = await waitForState(driver, 'progress', (s) => s.state === 'printing' && (s.job?.progress ?? 0) >= 30);
    expect(midway.temperatures.nozzle).toBeGreaterThan(200); // it heated before printing
    expect(midway.job!.remaining_seconds).toBeGreaterThan(0);
    expect(midway.job!.time_printing).toBeGreaterThan(0);
    const finished = await waitForState(driver, 'finished', (s) => s.state === 'finished');
    expect(finished).toMatchObject({ raw_state: 'FINISHED', error: null, job: { progress: 100, remaining_seconds: 0, printer_job_id: jobId } });

    // Progress never went backwards during the print.
    const progress = states.filter((s) => s.job?.printer_job_id === jobId).map((s) => s.job!.progress);
    expect(progress).toEqual([...progress].sort((a, b) => a - b));

    await ok(sim, '/idle');
    expect(await waitForState(driver, 'idle again', (s) => s.state === 'idle' && s.job === null)).toBeTruthy();

    await ok(sim, '/print', { file: GCODE });
    await waitForState(driver, 'printing the gcode', (s) => s.state === 'printing' && s.job?.file === '/usb/CUBE_0~1.GCO');
    await ok(sim, '/fail', { message: 'Thermal runaway' });
    const failed = await waitForState(driver, 'error', (s) => s.raw_state === 'ERROR');
    expect(failed.state).toBe('error');
    expect(failed.error).toEqual({ code: 'ERROR', message: 'Printer error: Thermal runaway' });
    expect(failed.job?.file).toBe('/usb/CUBE_0~1.GCO'); // the job that failed is still named

    await ok(sim, '/idle');
    await ok(sim, '/busy');
    expect(await waitForState(driver, 'busy', (s) => s.raw_state === 'BUSY')).toMatchObject({ state: 'busy', job: null });
    await ok(sim, '/ready');
    expect(await waitForState(driver, 'ready', (s) => s.raw_state === 'READY')).toMatchObject({ state: 'idle', error: null });
    await ok(sim, '/attention', { message: 'Filament runout' });
    const attention = await waitForState(driver, 'attention', (s) => s.raw_state === 'ATTENTION');
    expect(attention.state).toBe('error');
    expect(attention.error).toEqual({ code: 'ATTENTION', message: 'The printer needs attention: Filament runout' });
    expect(connections).toEqual([{ connection: 'connected', message: null }]); // the link never wavered
  });

  test('an idle printer that reports the same thing does not emit a state per poll', async () => {
    const sim = await simulator();
    const { driver, states } = driverFor(sim);
    await driver.connect();
    const seen = sim.stats.requests;
    await until('ten more polls', () => sim.stats.requests >= seen + 10);
    expect(states).toHaveLength(1);
  });

  test('pause, resume and stop are carried out; the printer refusing them is REJECTED', async () => {
    const sim = await simulator({ speed: 2 });
    const { driver } = driverFor(sim);
    await driver.connect();

    // Nothing to pause yet.
    expect((await rejection(driver.pause())).code).toBe('REJECTED');

    await driver.startPrint('/usb/CUBE_0~1.BGC');
    const printing = await waitForState(driver, 'printing', (s) => s.state === 'printing');
    expect(printing.job?.display_name).toBe(BGCODE);
    expect((await rejection(driver.startPrint('/usb/CUBE_0~1.GCO'))).code).toBe('REJECTED'); // busy: 409

    await driver.pause();
    await waitForState(driver, 'paused', (s) => s.state === 'paused');
    expect((await control(sim, '/state')).body.status).toBe('PAUSED');
    expect((await rejection(driver.pause())).code).toBe('REJECTED'); // already paused: 409

    await driver.resume();
    await waitForState(driver, 'printing again', (s) => s.state === 'printing');

    await ok(sim, '/faults', { reject_commands: true });
    const refused = await rejection(driver.pause());
    expect(refused.code).toBe('REJECTED');
    expect(refused.details).toMatchObject({ status: 409 });
    expect((await rejection(driver.stop())).code).toBe('REJECTED');
    expect((await control(sim, '/state')).body.status).toBe('PRINTING');
    await ok(sim, '/faults', { reject_commands: false });

    await driver.stop();
    const stopped = await waitForState(driver, 'stopped', (s) => s.state === 'stopped');
    expect(stopped.raw_state).toBe('STOPPED');
    expect((await rejection(driver.resume())).code).toBe('REJECTED'); // a stopped job cannot resume: 409

    // A new print gets a new job id; a file that is not there is NOT_FOUND.
    await driver.startPrint('/usb/CUBE_0~1.GCO');
    const next = await waitForState(driver, 'second print', (s) => s.state === 'printing');
    expect(next.job?.printer_job_id).not.toBe(printing.job?.printer_job_id);
    expect((await rejection(driver.startPrint('/usb/NOPE.GCO'))).code).toBe('NOT_FOUND');
  });

  test('an expired Digest nonce (stale=true) is renewed without a failed poll or a link change', async () => {
    const sim = await simulator({ nonceTtlMs: 300, speed: 2 });
    const { driver, connections } = driverFor(sim);
    await driver.connect();
    await until('three stale nonces renewed', () => driver.httpStats.stale_retries >= 3 && sim.stats.stale_nonces >= 3);
    await ok(sim, '/print', { file: BGCODE });
    await waitForState(driver, 'printing', (s) => s.state === 'printing');
    await driver.pause(); // commands sign with the renewed nonce too
    await waitForState(driver, 'paused', (s) => s.state === 'paused');
    expect(connections).toEqual([{ connection: 'connected', message: null }]);
  });

  test('firmware without the v1 API is a connection error that says so', async () => {
    const sim = await simulator({ apiKeyOnly: true, noV1Api: true });
    const { driver, connections } = driverFor(sim, { auth_method: 'api_key' });
    const err = await rejection(driver.connect());
    expect(err.code).toBe('PROTOCOL');
    expect(connections).toEqual([{ connection: 'error', message: 'the printer has no PrusaLink v1 API (/api/v1/status): update its firmware' }]);
  });

  test('a Prusa-Link that offers qop="auth" (RFC 2617) is answered with nc and cnonce', async () => {
    const sim = await simulator({ qop: true, realm: 'Administrator' });
    const { driver } = driverFor(sim);
    await driver.connect();
    expect(driver.authMode).toBe('digest');
    expect(sim.stats.digest_ok).toBeGreaterThan(0);
  });

  test('a wrong access code is a connection error "access code rejected", retried slowly, never leaked', async () => {
    const sim = await simulator();
    const events: unknown[] = [];
    const { driver, connections } = driverFor(sim, { access_code: 'wrong-password-123' }, { backoffBaseMs: 200, backoffMaxMs: 2000 });
    driver.on('connection', (c) => events.push(c));
    driver.on('state', (s) => events.push(s));
    const err = await rejection(driver.connect());
    expect(err.code).toBe('AUTH');
    expect(err.message).toBe('access code rejected');
    expect(driver.connection).toBe('error');
    expect(connections).toEqual([{ connection: 'error', message: 'access code rejected' }]);
    expect(driver.state).toBeNull();

    // It keeps trying in the background, but with growing pauses, not in a loop.
    const before = sim.stats.unauthorized;
    const t0 = Date.now();
    await until('a retry', () => sim.stats.unauthorized > before);
    await new Promise((r) => setTimeout(r, Math.max(0, 1200 - (Date.now() - t0))));
    expect(sim.stats.unauthorized - before).toBeLessThanOrEqual(12); // a few rounds of 2-3 requests
    expect(connections).toHaveLength(1);
    const text = JSON.stringify([events, err, err.details, driver.connectionMessage]);
    expect(text).not.toContain('wrong-password-123');
    expect(text).not.toContain(sim.password);
  });

  test('the printer dropping off the network: disconnected, then back with live data once it returns', async () => {
    const sim = await simulator({ speed: 5 });
    const { driver, connections } = driverFor(sim);
    await driver.connect();
    await ok(sim, '/offline');
    const lost = await waitForConnection(driver, 'disconnected');
    expect(lost.message).toMatch(/unreachable|no answer/);
    expect((await rejection(driver.pause())).code).toBe('OFFLINE');

    await ok(sim, '/online');
    await waitForConnection(driver, 'connected');
    await ok(sim, '/print', { file: BGCODE });
    await waitForState(driver, 'printing after the reconnect', (s) => s.state === 'printing');
    expect(connections.map((c) => c.connection)).toEqual(['connected', 'disconnected', 'connected']);
  });

  test('a printer that accepts connections but never answers: the watchdog disconnects, commands time out, close() does not hang', async () => {
    const sim = await simulator();
    const { driver } = driverFor(sim, { watchdog_ms: 500, command_timeout_ms: 1500 });
    await driver.connect();
    await ok(sim, '/stall');
    const t0 = Date.now();
    const lost = await waitForConnection(driver, 'disconnected', 3000);
    expect(Date.now() - t0).toBeLessThan(1400); // the watchdog, not the 1.5 s request timeout
    expect(lost.message).toMatch(/no answer from the printer for 500 ms/);

    const timedOut = await rejection(driver.startPrint('/usb/CUBE_0~1.BGC'));
    expect(timedOut.code).toBe('TIMEOUT');

    await ok(sim, '/online');
    await waitForConnection(driver, 'connected', 5000);

    await ok(sim, '/stall');
    const pending = driver.pause();
    pending.catch(() => undefined);
    const t1 = Date.now();
    await driver.close();
    expect((await rejection(pending)).code).toBe('OFFLINE');
    expect(Date.now() - t1).toBeLessThan(500);
    expect(driver.connection).toBe('disconnected');
  });

  test('partial status reports: the merged state keeps temperatures and the job', async () => {
    const sim = await simulator({ speed: 20 });
    const { driver, states } = driverFor(sim);
    await driver.connect();
    await ok(sim, '/print', { file: BGCODE });
    await waitForState(driver, 'printing', (s) => s.state === 'printing');
    await ok(sim, '/faults', { partial_reports: true });
    const from = states.length;
    await until('ten partial answers', () => sim.stats.requests > 0 && states.length >= from + 6, 8000);
    for (const s of states.slice(from)) {
      expect(s.state).toBe('printing');
      expect(s.temperatures.nozzle_target).toBe(215);
      expect(s.temperatures.nozzle).toBeGreaterThan(24);
      expect(s.job?.file).toBe('/usb/CUBE_0~1.BGC');
    }
    const progress = states.slice(from).map((s) => s.job!.progress);
    expect(progress).toEqual([...progress].sort((a, b) => a - b));
  });

  test('listFiles walks storages and folders; a download is byte-identical, with progress', async () => {
    const sim = await simulator();
    const { driver } = driverFor(sim);
    await driver.connect();
    const nested = Buffer.from('; nested part\nG28\nG1 X10 Y10\n');
    expect(await upload(sim, 'models/Nested Part.gcode', nested)).toBe(201);

    const files = await driver.listFiles();
    const seeds = seedFiles({ prusa: sim.model }); // sliced for the simulated model
    expect(files.map((f) => f.name).sort()).toEqual([...seeds.map((s) => s.name), 'Nested Part.gcode'].sort());
    for (const seed of seeds) {
      const f = files.find((x) => x.name === seed.name)!;
      expect(f).toMatchObject({ size: seed.data.length, storage: 'usb' });
      expect(f.path).toMatch(/^\/usb\/[A-Z0-9_~-]{1,8}\.[A-Z0-9]{1,3}$/); // Buddy's 8.3 short names
      expect(Date.parse(f.modified!)).toBeGreaterThan(0);
    }
    const nestedFile = files.find((f) => f.name === 'Nested Part.gcode')!;
    expect(nestedFile.path).toBe('/usb/MODELS~1/NESTED~1.GCO');

    const bgcode = files.find((f) => f.name === BGCODE)!;
    const dest = join(tmp, 'download.bgcode');
    const progress: Array<[number, number]> = [];
    await driver.download(bgcode.path, dest, (bytes, total) => progress.push([bytes, total]));
    expect((await readFile(dest)).equals(seeds.find((s) => s.name === BGCODE)!.data)).toBe(true);
    expect(progress.at(-1)).toEqual([bgcode.size, bgcode.size]);

    // A path never listed is looked up through its metadata.
    const fresh = driverFor(sim).driver;
    await fresh.connect();
    const dest2 = join(tmp, 'nested.gcode');
    await fresh.download(nestedFile.path, dest2);
    expect((await readFile(dest2)).equals(nested)).toBe(true);
    expect((await rejection(fresh.download('/usb/NOPE.BGC', join(tmp, 'nope')))).code).toBe('NOT_FOUND');
  });

  test('a throttled transfer finishes even when it outlasts the request timeout; an aborted one leaves no file', async () => {
    const sim = await simulator();
    const { driver } = driverFor(sim, { command_timeout_ms: 800 });
    await driver.connect();
    const seed = seedFiles({ prusa: sim.model }).find((s) => s.name === BGCODE)!;
    await ok(sim, '/faults', { transfer_bytes_per_sec: 20_000 }); // ~1.5 s for 30 kB
    const dest = join(tmp, 'slow.bgcode');
    const progress: number[] = [];
    const t0 = Date.now();
    await driver.download('/usb/CUBE_0~1.BGC', dest, (bytes) => progress.push(bytes));
    const elapsed = Date.now() - t0;
    expect(elapsed).toBeGreaterThan(1000);
    expect((await readFile(dest)).equals(seed.data)).toBe(true);
    expect(progress.length).toBeGreaterThan(10);
    expect(progress).toEqual([...progress].sort((a, b) => a - b));

    const abort = new AbortController();
    const aborted = join(tmp, 'aborted.bgcode');
    const pending = driver.download('/usb/CUBE_0~1.BGC', aborted, (bytes) => {
      if (bytes > 5000) abort.abort();
    }, abort.signal);
    await expect(pending).rejects.toThrow();
    await expect(stat(aborted)).rejects.toMatchObject({ code: 'ENOENT' });
  });
});
