/**
 * PrusaLink authentication against the simulator over real HTTP: Digest by
 * default, X-Api-Key only for printers configured with auth_method "api_key",
 * and never a downgrade from Digest to a cleartext key, not even when
 * something on the printer's address answers 401 without a challenge after
 * Digest was established (issue 16 item 12).
 */
import http from 'node:http';
import type { PrusaSimulator } from '../../service/simulators/prusa';
import { closeAfterEach, closeAfterTest, driverFor, rejection, simulator, until, waitForState } from '../helpers/prusa-e2e';

closeAfterEach();

describe('PrusaLink authentication', () => {
  test('older firmware that only knows X-Api-Key: a printer configured for its API key sends the key', async () => {
    const sim = await simulator({ apiKeyOnly: true, model: 'MK4S' });
    const { driver } = driverFor(sim, { auth_method: 'api_key' });
    await driver.connect();
    expect(driver.authMode).toBe('apikey');
    expect(driver.state).toMatchObject({ state: 'idle', model: 'MK4S' });
    expect(sim.stats.digest_ok).toBe(0);
    expect(sim.stats.api_key_ok).toBeGreaterThan(0);
    await driver.startPrint('/usb/CUBE_0~1.GCO');
    await waitForState(driver, 'printing', (s) => s.state === 'printing');

    const wrong = driverFor(sim, { access_code: 'not-the-key', auth_method: 'api_key' });
    expect((await rejection(wrong.driver.connect())).code).toBe('AUTH');
    expect(wrong.driver.connection).toBe('error');
  });

  test('a Digest printer never sends its password as X-Api-Key: a 401 without a challenge is an auth error, not a downgrade', async () => {
    const sim = await simulator({ apiKeyOnly: true, model: 'MK4S' });
    const { driver, connections } = driverFor(sim);
    const err = await rejection(driver.connect());
    expect(err.code).toBe('AUTH');
    expect(connections).toEqual([{ connection: 'error', message: expect.stringMatching(/did not offer Digest authentication/) }]);
    expect(sim.stats.api_key_ok).toBe(0);
    expect(driver.authMode).toBe('unknown');
  });

  test('after Digest was established, a 401 without a challenge (a spoofer on the address) never gets the password as X-Api-Key', async () => {
    const sim = await simulator({ model: 'MK4S' });
    // A recording proxy in front of the simulator that, once told, answers 401 without any challenge.
    const seenApiKeys: string[] = [];
    let spoof = false;
    const proxy = http.createServer((req, res) => {
      const key = req.headers['x-api-key'];
      if (typeof key === 'string') seenApiKeys.push(key);
      if (spoof) return void res.writeHead(401).end();
      const upstream = http.request({ host: '127.0.0.1', port: sim.httpPort, method: req.method, path: req.url, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      upstream.on('error', () => res.destroy());
      req.pipe(upstream);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    closeAfterTest({ close: () => new Promise<void>((resolve) => (proxy.closeAllConnections(), proxy.close(() => resolve()))) });
    const { driver } = driverFor({ ...sim, httpPort: (proxy.address() as { port: number }).port, password: sim.password } as PrusaSimulator);
    await driver.connect();
    expect(driver.authMode).toBe('digest');
    spoof = true;
    await until('auth error', () => driver.connection === 'error');
    expect(driver.connectionMessage).toMatch(/did not offer Digest authentication/);
    expect(seenApiKeys).toEqual([]);
    expect(driver.authMode).toBe('digest');
  });
});
