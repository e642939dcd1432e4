/**
 * A Spoolman behind an authenticating proxy is set as `http://user:password@host`. The password must
 * reach Spoolman (as Basic authentication: fetch refuses URLs with credentials) and nobody else:
 * GET /settings shows it as ****, and no log line or error quotes it. A real HTTP server that wants
 * the password stands in for the proxy.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { until } from '../helpers/farm';
import { startService, type Harness } from '../helpers/service';

const PASSWORD = 'sp-pass-7f3a9c';
const SPOOL = { id: 1, used_weight: 100, initial_weight: 1000, spool_weight: 250, archived: false, filament: { name: 'PLA White', material: 'PLA', color_hex: 'FFFFFF', density: 1.24, diameter: 1.75, weight: 1000, vendor: { name: 'Generic' } } };

describe('Spoolman credentials in spoolman_url', () => {
  let proxy: http.Server;
  let port: number;
  const seen: (string | undefined)[] = [];
  let h: Harness;

  beforeAll(async () => {
    proxy = http.createServer((req, res) => {
      seen.push(req.headers.authorization);
      if (req.headers.authorization !== `Basic ${Buffer.from(`farm:${PASSWORD}`).toString('base64')}`) {
        res.writeHead(401).end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(req.url?.startsWith('/api/v1/spool?') ? [SPOOL] : SPOOL));
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    port = (proxy.address() as AddressInfo).port;
    h = await startService({ spoolman: { pollMs: 60_000, retryMs: 200, timeoutMs: 1000 } });
  });
  afterAll(async () => {
    await h?.close();
    await new Promise((resolve) => proxy.close(resolve));
  });

  test('are sent as Basic authentication, shown masked, and never logged', async () => {
    expect((await h.put('/api/v1/settings', { spoolman_url: `http://farm:${PASSWORD}@127.0.0.1:${port}` })).status).toBe(200);
    const list = await until(async () => {
      const b = (await h.get('/api/v1/spools')).body;
      return b.source === 'spoolman' && b.spools.length === 1 ? b : null;
    }, 'the spool of the Spoolman behind the proxy');
    expect(list.spools[0]).toMatchObject({ id: 1, material: 'PLA' });
    expect(seen.length).toBeGreaterThan(0);

    const settings = await h.get('/api/v1/settings');
    expect(settings.body.spoolman_url).toBe(`http://****:****@127.0.0.1:${port}/`);
    expect(settings.text).not.toContain(PASSWORD);
    // Writing back what GET showed keeps the password.
    expect((await h.put('/api/v1/settings', { spoolman_url: settings.body.spoolman_url })).body.updated).toEqual([]);
    expect((await h.get('/api/v1/spools/1')).status).toBe(200);
    expect(JSON.stringify(h.logs)).not.toContain(PASSWORD);
  });

  test('an unreachable Spoolman is reported without its password', async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const gone = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    expect((await h.put('/api/v1/settings', { spoolman_url: `http://farm:${PASSWORD}@127.0.0.1:${gone}` })).status).toBe(200);
    const line = await until(() => h.logs.find((l) => l.msg === 'Spoolman unreachable: usage waits in the outbox' && String(l.err).includes(`127.0.0.1:${gone}`)), 'the unreachable warning');
    expect(String(line.err)).toContain('cannot be reached');
    const health = await h.get('/api/v1/health');
    expect(JSON.stringify(h.logs) + health.text).not.toContain(PASSWORD);
  });
});
