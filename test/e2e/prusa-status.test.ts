/**
 * A Prusa printer's status through the PrusaLink driver, against the
 * PrusaLink simulator over real HTTP with Digest on 127.0.0.1: what an
 * operator sees through a print and every other state the printer reports,
 * no state per unchanged poll, and partial reports merged into a full state.
 */
import { BGCODE, GCODE, closeAfterEach, driverFor, ok, simulator, until, waitForState } from '../helpers/prusa-e2e';

closeAfterEach();

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
});
