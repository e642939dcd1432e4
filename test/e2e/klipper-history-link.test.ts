/**
 * The Klipper driver follows Moonraker's job history while connected: a print's end told by
 * notify_history_changed is the state's ended_print at once (no new link needed), the same object while the
 * history says the same; a Moonraker without the history component reports none. Over the simulated
 * Moonraker's real JSON-RPC WebSocket.
 */
import { closeAfterEach, driverFor, GCODE, ok, simulator, waitForState } from '../helpers/klipper-e2e';

closeAfterEach();

describe("the Klipper driver and Moonraker's job history", () => {
  test('an end told while connected is the ended print of the next state; the record stays one object', async () => {
    const sim = await simulator({ speed: 20 });
    const { driver, states } = driverFor(sim);
    await driver.connect();
    expect(driver.state?.ended_print).toBeUndefined();
    await ok(sim, '/print', { file: GCODE });
    await waitForState(driver, 'printing', (s) => s.state === 'printing');
    const links = sim.stats.ws_connections;
    await ok(sim, '/cancel');
    const ended = await waitForState(driver, 'the cancel recorded', (s) => s.ended_print?.outcome === 'cancelled');
    expect(ended.ended_print).toMatchObject({ file: GCODE, outcome: 'cancelled', reason: null, started_at: expect.any(String), ended_at: expect.any(String) });
    expect(sim.stats.ws_connections).toBe(links); // told on the link, not read again on a new one
    await ok(sim, '/print', { file: GCODE });
    await waitForState(driver, 'printing again', (s) => s.state === 'printing');
    // Later states carry the same record object until the history says something new.
    expect(states.filter((s) => s.ended_print && s.ended_print !== ended.ended_print)).toEqual([]);
  });

  test('a Moonraker without the history component: no ended print', async () => {
    const sim = await simulator({ speed: 20, noHistory: true });
    const { driver } = driverFor(sim);
    await driver.connect();
    await ok(sim, '/print', { file: GCODE });
    await waitForState(driver, 'printing', (s) => s.state === 'printing');
    await ok(sim, '/cancel');
    const stopped = await waitForState(driver, 'stopped', (s) => s.state === 'stopped');
    expect(stopped.ended_print).toBeUndefined();
  });
});
