/**
 * A Bambu printer's status through Printfarm, against the Bambu simulator
 * over real MQTT/TLS on 127.0.0.1: the simulator's control API itself, then
 * what an operator sees of a whole print, a failed one, and reports that
 * carry only what changed.
 */
import { connect as mqttConnect } from 'mqtt';
import { ffmpegStatus } from '../../service/cameras/ffmpeg';
import type { PrinterState } from '../../service/printers/driver';
import { cleanups, closeAfterEach, control, simStats, startDriver, startSim, waitForState } from '../helpers/bambu-e2e';

closeAfterEach();

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
      // The X1C's RTSPS camera, which runs where ffmpeg is installed.
      ...(ffmpegStatus().available ? { camera_port: sim.camera!.port } : {}),
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
      error: { code: 'HMS_0700_2000_0002_0001', message: 'AMS A Slot 1 filament has run out.' },
      attention: [
        expect.objectContaining({ code: '0700_2000_0002_0001', severity: 'serious', source: 'hms' }),
        expect.objectContaining({ code: '0700_8011', severity: 'serious', source: 'print_error' }),
      ],
      job: { name: 'Cube_PLA' },
      temperatures: { nozzle_target: 0, bed_target: 0 },
    });
  });

  it('merges partial reports into a full state when the printer sends only what changed', async () => {
    const sim = await startSim({ speed: 300 });
    const { driver, states } = startDriver(sim);
    await driver.connect();
    await waitForState(driver, (s) => s.state === 'idle' && s.firmware_version !== null, 'idle');
    expect((await control(sim, '/faults', { partial_reports: true })).body).toEqual({ faults: { partial_reports: true, reject_commands: false, transfer_bytes_per_sec: 0, camera_stalled: false, pushall_delay_ms: 0 } });

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
