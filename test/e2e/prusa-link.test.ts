/**
 * The link to a Prusa printer, against the PrusaLink simulator over real HTTP
 * on 127.0.0.1: Digest nonces renewed, qop="auth", firmware without the v1
 * API, a wrong access code (retried slowly, never leaked), the printer going
 * offline or stalling, and the driver recovering from each.
 */
import { BGCODE, closeAfterEach, driverFor, ok, rejection, simulator, until, waitForConnection, waitForState } from '../helpers/prusa-e2e';

closeAfterEach();

describe('PrusaLink driver against the simulated printer', () => {
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
    const lost = await waitForConnection(driver, 'disconnected', 3000);
    // The watchdog's reason, not the 1.5 s request timeout's (said by the message, not by a stopwatch).
    expect(lost.message).toMatch(/no answer from the printer for 500 ms/);

    const timedOut = await rejection(driver.startPrint('/usb/CUBE_0~1.BGC'));
    expect(timedOut.code).toBe('TIMEOUT');

    await ok(sim, '/online');
    await waitForConnection(driver, 'connected', 5000);

    await ok(sim, '/stall');
    const pending = driver.pause();
    pending.catch(() => undefined);
    await driver.close();
    // Ended by close() (OFFLINE), not left to its request timeout (that would be TIMEOUT).
    expect((await rejection(pending)).code).toBe('OFFLINE');
    expect(driver.connection).toBe('disconnected');
  });
});
