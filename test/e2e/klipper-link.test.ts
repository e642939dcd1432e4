/**
 * The Klipper driver against the simulated Moonraker over real HTTP and
 * WebSocket JSON-RPC: status from subscriptions and deltas, Klippy's ups and
 * downs, commands, files, and a Moonraker that breaks the rules.
 */
import fs from 'node:fs';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { DriverError } from '../../service/printers/driver';
import { klipperGcode } from '../../service/simulators/seed-files';
import { tempDir } from '../helpers/service';
import { GCODE, closeAfterEach, driverFor, ok, simulator, waitForConnection, waitForState } from '../helpers/klipper-e2e';
import { until } from '../helpers/prusa-e2e';

closeAfterEach();

describe('Klipper driver against the simulated Moonraker', () => {
  test('an operator sees a Voron go standby -> printing (layers, progress) -> paused -> complete, with the API key through a one-shot token', async () => {
    const sim = await simulator({ speed: 60 });
    const { driver, connections } = driverFor(sim);
    await driver.connect();
    expect(connections).toEqual([{ connection: 'connected', message: null }]);
    expect(driver.subscribedObjects).toEqual(expect.arrayContaining(['webhooks', 'print_stats', 'virtual_sdcard', 'display_status', 'heater_bed', 'extruder', 'toolhead']));
    expect(driver.state).toMatchObject({ state: 'idle', raw_state: 'STANDBY', job: null, error: null, firmware_version: sim.klipperVersion, model: null, nozzle_diameter: 0.4 });
    expect(sim.stats.unauthorized).toBe(0); // the key went as a one-shot token, never refused

    await ok(sim, '/print', { file: GCODE });
    const printing = await waitForState(driver, 'printing', (s) => s.state === 'printing');
    expect(printing.job).toMatchObject({ name: GCODE, file: GCODE, printer_job_id: null, layer_total: 50 });
    expect(printing.temperatures).toMatchObject({ nozzle_target: 240, bed_target: 100 });
    const midway = await waitForState(driver, 'layers', (s) => (s.job?.layer_current ?? 0) >= 5 && (s.job?.progress ?? 0) > 5, 15_000);
    expect(midway.job!.remaining_seconds).toBeGreaterThan(0);
    expect(midway.job!.started_at).toEqual(printing.job!.started_at); // fixed at first sight

    await driver.pause();
    await waitForState(driver, 'paused', (s) => s.state === 'paused' && s.raw_state === 'PAUSED');
    await driver.resume();
    await waitForState(driver, 'resumed', (s) => s.state === 'printing');
    await ok(sim, '/finish');
    const done = await waitForState(driver, 'complete', (s) => s.state === 'finished');
    expect(done.job).toMatchObject({ progress: 100, remaining_seconds: 0, file: GCODE });
    await ok(sim, '/idle');
    await waitForState(driver, 'standby', (s) => s.state === 'idle' && s.job === null);
    expect(connections).toHaveLength(1); // the link never wavered
  });

  test('a Moonraker without display_status still connects; progress then comes from virtual_sdcard', async () => {
    const sim = await simulator({ speed: 60, noDisplayStatus: true });
    const { driver } = driverFor(sim);
    await driver.connect();
    expect(driver.subscribedObjects).not.toContain('display_status');
    await driver.startPrint(`/${GCODE}`);
    const s = await waitForState(driver, 'progress', (st) => st.state === 'printing' && (st.job?.progress ?? 0) > 1, 15_000);
    expect(s.job!.progress).toBeLessThan(100);
    expect(driver.connection).toBe('connected');
  });

  test('a shutdown Klipper is an error state with its message; a firmware restart brings it back; a gone Klippy takes it offline', async () => {
    const sim = await simulator();
    const { driver } = driverFor(sim);
    await driver.connect();
    await ok(sim, '/shutdown', { message: "MCU 'mcu' shutdown: Timer too close" });
    const down = await waitForState(driver, 'shutdown', (s) => s.state === 'error');
    expect(down.raw_state).toBe('SHUTDOWN');
    expect(down.error).toEqual({ code: 'KLIPPY_SHUTDOWN', message: "Klipper shutdown: MCU 'mcu' shutdown: Timer too close" });
    expect(driver.connection).toBe('connected'); // Moonraker answers: the printer needs attention, it is not offline
    await expect(driver.pause()).rejects.toBeInstanceOf(DriverError);

    await ok(sim, '/restart');
    await waitForState(driver, 'ready again', (s) => s.state === 'idle' && s.error === null);

    await ok(sim, '/klippy-disconnect');
    expect((await waitForConnection(driver, 'disconnected')).message).toMatch(/Klipper is not connected/);
    await ok(sim, '/restart');
    await waitForConnection(driver, 'connected');
    expect(driver.state?.state).toBe('idle');
  });

  test('back after a drop while Moonraker answers late: no state before the new subscription is read, and the print ending meanwhile is not lost', async () => {
    const sim = await simulator({ speed: 20 });
    const { driver, states } = driverFor(sim);
    await driver.connect();
    await ok(sim, '/print', { file: GCODE });
    await waitForState(driver, 'printing', (s) => s.state === 'printing' && s.job?.file === GCODE);
    // Every answer comes 700 ms late (a busy Moonraker, or a busy service reading it late); the 4 Hz deltas do not.
    await ok(sim, '/faults', { rpc_delay_ms: 700 });
    await ok(sim, '/offline');
    await waitForConnection(driver, 'disconnected');
    const seen = states.length;
    const subscribes = sim.stats.subscribes;
    await ok(sim, '/online');
    // The new subscription is in at Moonraker and its deltas flow; its answer is still on the way when the print ends.
    await until('subscribed again', () => sim.stats.subscribes > subscribes, 8000);
    await ok(sim, '/finish');
    await waitForConnection(driver, 'connected', 8000);

    // Deltas merged into a status the answer had not filled read as an idle printer without a job: none went out.
    expect(states.slice(seen).filter((s) => s.job?.file !== GCODE)).toEqual([]);
    // The end came as a delta before the answer was read: it is newer than the answer, and it stands.
    expect(driver.state).toMatchObject({ state: 'finished', raw_state: 'COMPLETE', job: { file: GCODE, progress: 100 } });
    expect(states.slice(seen).map((s) => s.state)).toEqual(['finished']);
  });

  test('an old Moonraker without one-shot tokens takes the API key in the WebSocket upgrade header; a trusted client needs no key; webcams show as a camera', async () => {
    const old = await simulator({ noOneshotToken: true });
    const { driver } = driverFor(old);
    await driver.connect();
    expect(driver.state?.state).toBe('idle');
    expect(old.stats.unauthorized).toBe(0);
    const trusting = await simulator({ apiKey: undefined, camera: true });
    const open = driverFor(trusting, { access_code: null });
    await open.driver.connect();
    expect(open.driver.connection).toBe('connected');
    // Its webcam (server.webcams.list) shows in the capabilities; the first printer has none.
    expect(open.driver.state?.capabilities).toEqual({ has_camera: true, has_ams: false, supports_remote_control: true });
    expect(driver.state?.capabilities?.has_camera).toBe(false);
  });

  test('a wrong API key is a connection error, not a crash; a lost Moonraker reconnects with backoff', async () => {
    const sim = await simulator();
    const wrong = driverFor(sim, { access_code: 'not-the-key' });
    const err = await wrong.driver.connect().then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(DriverError);
    expect((err as DriverError).code).toBe('AUTH');
    expect(wrong.driver.connection).toBe('error');
    expect(JSON.stringify(wrong.connections)).not.toContain('not-the-key');

    const { driver } = driverFor(sim);
    await driver.connect();
    await ok(sim, '/offline');
    expect((await waitForConnection(driver, 'disconnected')).message).toMatch(/lost|unreachable/);
    await ok(sim, '/online');
    await waitForConnection(driver, 'connected', 8000);
  });

  test('files: list, metadata with estimated time and thumbnails, download, and the queue upload that starts the print exactly once', async () => {
    const sim = await simulator({ speed: 10 });
    const { driver } = driverFor(sim);
    await driver.connect();
    const files = await driver.listFiles();
    expect(files).toEqual([{ path: `/${GCODE}`, name: GCODE, size: expect.any(Number), modified: expect.any(String), storage: 'gcodes' }]);
    const meta = await driver.fileMetadata(`/${GCODE}`);
    expect(meta).toMatchObject({ estimated_time: 750, filament_type: 'PLA', slicer: 'PrusaSlicer', nozzle_diameter: 0.4 });
    expect(meta.thumbnails.length).toBeGreaterThan(0);
    const dir = tempDir();
    await driver.download(`/${GCODE}`, path.join(dir, 'copy.gcode'));
    expect(fs.readFileSync(path.join(dir, 'copy.gcode')).equals(sim.files.get(GCODE)!.data)).toBe(true);
    expect(await driver.downloadThumbnail(`/${GCODE}`, path.join(dir, 'thumb.png'))).toBe(true);
    expect(fs.readFileSync(path.join(dir, 'thumb.png')).subarray(1, 4).toString()).toBe('PNG');

    const local = path.join(dir, 'Bracket.gcode');
    fs.writeFileSync(local, klipperGcode('Voron 2.4 350'));
    let before = 0;
    await driver.sendAndStart!(
      { localPath: local, remoteName: 'Bracket.gcode', plate: 1, taskId: '1', amsMapping: [], options: { bed_leveling: true, timelapse: false, flow_cali: false, vibration_cali: false } },
      { beforeStart: async () => void before++ },
    );
    expect(before).toBe(1);
    await waitForState(driver, 'printing the upload', (s) => s.state === 'printing' && s.job?.file === 'Bracket.gcode');
    expect(sim.printsStarted).toBe(1);
    expect(createHash('sha256').update(sim.files.get('Bracket.gcode')!.data).digest('hex')).toBe(createHash('sha256').update(fs.readFileSync(local)).digest('hex'));
    await driver.stop();
    await waitForState(driver, 'cancelled', (s) => s.state === 'stopped' && s.raw_state === 'CANCELLED');
    await driver.deleteFile('Bracket.gcode');
    expect(sim.files.get('Bracket.gcode')).toBeUndefined();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test("the loaded filament is Moonraker's active Spoolman spool; a printer without Spoolman reports none", async () => {
    const sim = await simulator({ spool: { id: 7, material: 'PETG', color_hex: '1a2b3c', weight: 1000, remaining_weight: 250 } });
    const { driver } = driverFor(sim);
    await driver.connect();
    expect(driver.state?.materials).toEqual([{ slot: 0, type: 'PETG', color: '#1A2B3C', remaining_percent: 25 }]);
    await ok(sim, '/spool', { id: 8, material: 'ASA', color_hex: '000000', weight: 750, remaining_weight: 750 });
    await waitForState(driver, 'the new spool', (s) => s.materials?.[0]?.type === 'ASA');
    expect(driver.state?.materials).toEqual([{ slot: 0, type: 'ASA', color: '#000000', remaining_percent: 100 }]);
    await ok(sim, '/spool', { spool: null });
    await waitForState(driver, 'no spool', (s) => s.materials?.length === 0);

    const plain = await simulator();
    const other = driverFor(plain);
    await other.driver.connect();
    expect(other.driver.state).not.toHaveProperty('materials');
  });

  test.each([
    ['garbage', { kind: 'garbage', count: 50 }],
    ['a huge frame', { kind: 'huge', bytes: 2 * 1024 * 1024 }],
    ['a flood', { kind: 'flood', count: 3000 }],
  ])('%s drops the link to error with the reason, and the driver comes back', async (_what, hostile) => {
    const sim = await simulator();
    const { driver } = driverFor(sim, {}, { maxFrameBytes: 1024 * 1024, maxFramesPerSecond: 400, authRetryMs: 300 });
    await driver.connect();
    await ok(sim, '/hostile', hostile);
    const change = await waitForConnection(driver, 'error');
    expect(change.message).toMatch(/broken frames|above 1048576 bytes|flooded/);
    expect(driver.faultStats.faults).toBe(1);
    await waitForConnection(driver, 'connected', 8000);
    expect(driver.state?.state).toBe('idle');
  });

  test('a Moonraker that stops answering JSON-RPC: commands time out, a new connection attempt times out and is retried', async () => {
    const sim = await simulator();
    const { driver } = driverFor(sim, { command_timeout_ms: 400 });
    await driver.connect();
    await ok(sim, '/faults', { silent_rpc: true });
    await ok(sim, '/print', { file: GCODE });
    await waitForState(driver, 'printing (the pushes still come)', (s) => s.state === 'printing');
    const err = await driver.pause().then(
      () => null,
      (e: unknown) => e as DriverError,
    );
    expect(err).toMatchObject({ code: 'TIMEOUT', message: expect.stringMatching(/did not answer printer.print.pause within 400 ms/) });
    expect(driver.connection).toBe('connected');

    await ok(sim, '/offline');
    await ok(sim, '/online');
    const down = await waitForConnection(driver, 'disconnected');
    expect(down.message).toBeTruthy();
    await until('a timed-out attempt', () => /did not answer/.test(driver.connectionMessage ?? ''), 8000);
    await ok(sim, '/faults', { silent_rpc: false });
    await waitForConnection(driver, 'connected', 8000);
  });

  test('answers to ids nobody asked for are dropped and counted; the link stays', async () => {
    const sim = await simulator();
    const { driver } = driverFor(sim);
    await driver.connect();
    await ok(sim, '/hostile', { kind: 'unknown_ids', count: 5 });
    await ok(sim, '/print', { file: GCODE });
    await waitForState(driver, 'printing', (s) => s.state === 'printing');
    expect(driver.faultStats.bad_frames).toBe(5);
    expect(driver.connection).toBe('connected');
  });
});
