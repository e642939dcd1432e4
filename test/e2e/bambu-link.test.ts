/**
 * The link to a Bambu printer, against the Bambu simulator over real MQTT/TLS
 * on 127.0.0.1: the faults real printers produce (going offline, stalling,
 * a wrong access code) and the driver recovering from each without an event
 * storm or a leaked access code.
 */
import type { ConnectionChange } from '../../service/printers/driver';
import { closeAfterEach, control, expectDriverError, simStats, startDriver, startSim, waitFor, waitForConnection, waitForState } from '../helpers/bambu-e2e';
import { until } from '../helpers/farm';

closeAfterEach();

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

  it('closing the driver ends a file listing the stalled printer never answers, at once and as OFFLINE', async () => {
    const sim = await startSim();
    // An FTP timeout far beyond the test's: only close() can end the listing in time.
    const { driver } = startDriver(sim, {}, { ftpTimeoutMs: 120_000 });
    await driver.connect();
    await control(sim, '/stall');
    const listing = driver.listFiles();
    // The FTPS connection is accepted and then held by the stalled printer; close() must not wait for it.
    await new Promise((resolve) => setTimeout(resolve, 300));
    await driver.close();
    const err = await expectDriverError(listing, 'OFFLINE');
    expect(err.message).toMatch(/driver closed/);
  });
});
