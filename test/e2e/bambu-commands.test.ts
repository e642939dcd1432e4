/**
 * Commands to a Bambu printer through the driver, against the Bambu simulator
 * over real MQTT/TLS on 127.0.0.1: pause, resume, stop and start each
 * acknowledged by the printer, and every way the printer can refuse one.
 */
import { closeAfterEach, control, expectDriverError, startDriver, startSim, waitForState } from '../helpers/bambu-e2e';

closeAfterEach();

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
