/**
 * Commands to a Prusa printer through the PrusaLink driver, against the
 * PrusaLink simulator over real HTTP with Digest on 127.0.0.1: pause, resume,
 * stop and start carried out, and each refusal of the printer (busy, already
 * paused, rejected, not found) reported as such.
 */
import { BGCODE, closeAfterEach, control, driverFor, ok, rejection, simulator, waitForState } from '../helpers/prusa-e2e';

closeAfterEach();

describe('PrusaLink driver against the simulated printer', () => {
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
});
