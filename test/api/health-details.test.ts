/**
 * GET /health is open (load balancers, monitors). With access control on, a caller without an admin's
 * token learns only what the interface spec names (status, timestamp, version, database, active_printers,
 * uptime_seconds): Spoolman's address and what Spoolman answered, and ffmpeg's paths, are an admin's.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { until } from '../helpers/farm';
import { startService, type Harness } from '../helpers/service';

const ADMIN = 'admin-token-0123456789';
const VIEWER = 'viewer-token-0123456789';
const SPEC_FIELDS = ['active_printers', 'database', 'status', 'timestamp', 'uptime_seconds', 'version'];
/** Spoolman's answer, which the service quotes in spoolman.last_error. */
const ANSWER = 'internal-detail-of-spoolman-4f1c';

const as = (token: string | null): Record<string, string> => (token ? { authorization: `Bearer ${token}` } : {});

describe('GET /health with access control on', () => {
  let spoolman: http.Server;
  let address: string;
  let h: Harness;

  beforeAll(async () => {
    spoolman = http.createServer((_req, res) => res.writeHead(500, { 'content-type': 'text/plain' }).end(ANSWER));
    await new Promise<void>((resolve) => spoolman.listen(0, '127.0.0.1', resolve));
    address = `127.0.0.1:${(spoolman.address() as AddressInfo).port}`;
    h = await startService({ env: { AUTH_TOKENS: `admin:${ADMIN},viewer:${VIEWER}` }, spoolman: { pollMs: 60_000, retryMs: 200, timeoutMs: 1000 } });
    expect((await h.request('PUT', '/api/v1/settings', { spoolman_url: `http://${address}` }, as(ADMIN))).status).toBe(200);
    await until(async () => ((await h.request('GET', '/api/v1/health', undefined, as(ADMIN))).body.spoolman?.last_error ? true : null), 'the failed Spoolman poll in /health');
  });
  afterAll(async () => {
    await h?.close();
    await new Promise((resolve) => spoolman.close(resolve));
  });

  test('an admin sees the details: Spoolman\'s address and answer, ffmpeg', async () => {
    const res = await h.request('GET', '/api/v1/health', undefined, as(ADMIN));
    expect(res.status).toBe(200);
    expect(res.body.spoolman).toMatchObject({ status: 'degraded', last_error: expect.stringContaining(ANSWER) });
    expect(res.body.ffmpeg).toMatchObject({ available: expect.any(Boolean) });
  });

  test('no token, a wrong one or a viewer\'s: 200 with the spec\'s fields only', async () => {
    for (const token of [null, 'not-a-known-token-at-all', VIEWER]) {
      const res = await h.request('GET', '/api/v1/health', undefined, as(token));
      expect([token, res.status]).toEqual([token, 200]);
      expect(Object.keys(res.body).sort()).toEqual(SPEC_FIELDS);
      expect(res.body).toMatchObject({ status: 'healthy', database: 'connected', version: expect.any(String) });
      expect(res.text).not.toContain(ANSWER);
      expect(res.text).not.toContain(address);
    }
  });
});
