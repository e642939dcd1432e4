/**
 * Web pages cannot drive the farm: a page of another site gets 403 for anything that changes state
 * (and for /ws), a rebound host name gets 421, while curl-like clients (no Origin) and the service's
 * own pages work as before. ALLOWED_ORIGINS and ALLOWED_HOSTS open exactly what they list.
 */
import http from 'node:http';
import WebSocket from 'ws';
import { startService, type Harness } from '../helpers/service';

interface Raw {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/** A request with whatever Host and Origin a browser (or an attacker's DNS) would send. */
function raw(base: string, method: string, path: string, headers: Record<string, string>, body?: string): Promise<Raw> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: url.hostname, port: url.port, method, path, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (text += c));
      res.on('end', () => {
        let parsed: unknown;
        try {
          parsed = text ? JSON.parse(text) : undefined;
        } catch {
          parsed = text;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: parsed });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Opens /ws with the given headers: 'open', or the refusal's status and error body. */
function upgrade(base: string, headers: Record<string, string>, origin?: string): Promise<{ open: true } | { status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(base.replace(/^http/, 'ws') + '/ws', { headers, ...(origin ? { origin } : {}) });
    socket.once('open', () => {
      socket.close();
      resolve({ open: true });
    });
    socket.once('unexpected-response', (_req, res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
    });
    socket.once('error', reject);
  });
}

const EVIL = 'http://evil.example';

function expectErrorBody(r: Raw, status: number, code: string) {
  expect(r.status).toBe(status);
  expect(r.body.error).toMatchObject({ code, message: expect.any(String), details: expect.any(Object), request_id: r.headers['x-request-id'] });
}

describe('browser guard (default configuration)', () => {
  let h: Harness;
  let own: string;
  beforeAll(async () => {
    h = await startService();
    own = new URL(h.base).origin;
  });
  afterAll(() => h.close());

  test('a page of another site cannot opt in to usage statistics with a text/plain POST', async () => {
    const r = await raw(h.base, 'POST', '/api/v1/usage-stats/opt-in', { Origin: EVIL, 'Content-Type': 'text/plain' }, '{}');
    expectErrorBody(r, 403, 'ORIGIN_NOT_ALLOWED');
    expect(r.body.error.details).toEqual({ origin: EVIL });
    expect((await h.get('/api/v1/usage-stats/local')).body.opted_in).toBe(false);
  });

  test('settings and deletes from a foreign page are refused too, and nothing changes', async () => {
    const put = await raw(h.base, 'PUT', '/api/v1/settings', { Origin: EVIL, 'Content-Type': 'application/json' }, JSON.stringify({ business_mode: true }));
    expectErrorBody(put, 403, 'ORIGIN_NOT_ALLOWED');
    const del = await raw(h.base, 'DELETE', '/api/v1/files/1', { Origin: 'null' });
    expectErrorBody(del, 403, 'ORIGIN_NOT_ALLOWED');
    expect((await h.get('/api/v1/settings')).body.business_mode).toBe(false);
  });

  test('Sec-Fetch-Site: cross-site without Origin is refused', async () => {
    const r = await raw(h.base, 'PUT', '/api/v1/settings', { 'Sec-Fetch-Site': 'cross-site', 'Content-Type': 'application/json' }, JSON.stringify({ business_mode: true }));
    expectErrorBody(r, 403, 'ORIGIN_NOT_ALLOWED');
  });

  test('a foreign page named only by Referer (a browser that sent no Origin) is refused too; our own page is not', async () => {
    const form = 'opt_in=1';
    const r = await raw(h.base, 'POST', '/api/v1/usage-stats/opt-in', { Referer: `${EVIL}/farm-attack.html`, 'Content-Type': 'application/x-www-form-urlencoded' }, form);
    expectErrorBody(r, 403, 'ORIGIN_NOT_ALLOWED');
    expect(r.body.error.details).toEqual({ origin: EVIL });
    expect((await h.get('/api/v1/usage-stats/local')).body.opted_in).toBe(false);
    expect(await upgrade(h.base, { Referer: `${EVIL}/` })).toMatchObject({ status: 403, body: { error: { code: 'ORIGIN_NOT_ALLOWED' } } });
    const ownPage = await raw(h.base, 'PUT', '/api/v1/settings', { Referer: `${own}/docs/`, 'Content-Type': 'application/json' }, JSON.stringify({ business_mode: false }));
    expect(ownPage.status).toBe(200);
  });

  test('clients without Origin and the service’s own pages are unaffected', async () => {
    const curl = await raw(h.base, 'PUT', '/api/v1/settings', { 'Content-Type': 'application/json' }, JSON.stringify({ business_mode: true }));
    expect(curl.status).toBe(200);
    expect((await h.get('/api/v1/settings')).body.business_mode).toBe(true);
    const ownPage = await raw(h.base, 'PUT', '/api/v1/settings', { Origin: own, 'Sec-Fetch-Site': 'same-origin', 'Content-Type': 'application/json' }, JSON.stringify({ business_mode: false }));
    expect(ownPage.status).toBe(200);
    expect((await h.get('/api/v1/settings')).body.business_mode).toBe(false);
  });

  test('a foreign page may send reads but gets no CORS grant, so the browser keeps the answer from it', async () => {
    const r = await raw(h.base, 'GET', '/api/v1/printers', { Origin: EVIL });
    expect(r.status).toBe(200);
    expect(r.headers['access-control-allow-origin']).toBeUndefined();
  });

  test('a rebound host name gets 421 on every path; IP addresses, localhost and LAN names are served', async () => {
    const port = new URL(h.base).port;
    for (const p of ['/api/v1/printers', '/health', '/docs/', '/api/v1/openapi.json']) {
      expectErrorBody(await raw(h.base, 'GET', p, { Host: `attacker.example:${port}` }), 421, 'HOST_NOT_ALLOWED');
    }
    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`, `printfarm:${port}`, `printfarm.local:${port}`]) {
      expect([host, (await raw(h.base, 'GET', '/api/v1/health', { Host: host })).status]).toEqual([host, 200]);
    }
  });

  test('/ws refuses other sites’ pages (403) and rebound hosts (421) with the error body', async () => {
    const foreign = await upgrade(h.base, {}, EVIL);
    expect(foreign).toMatchObject({ status: 403, body: { error: { code: 'ORIGIN_NOT_ALLOWED' } } });
    const rebound = await upgrade(h.base, { Host: 'attacker.example' });
    expect(rebound).toMatchObject({ status: 421, body: { error: { code: 'HOST_NOT_ALLOWED' } } });
    expect(await upgrade(h.base, {}, own)).toEqual({ open: true });
    expect(await upgrade(h.base, {})).toEqual({ open: true });
  });

  test('nosniff on every answer; the docs may be framed by our own pages only', async () => {
    for (const p of ['/api/v1/health', '/api/v1/nope', '/docs/', '/redoc']) {
      expect([p, (await raw(h.base, 'GET', p, {})).headers['x-content-type-options']]).toEqual([p, 'nosniff']);
    }
    for (const p of ['/docs/', '/redoc']) {
      const r = await raw(h.base, 'GET', p, {});
      expect(r.headers['x-frame-options']).toBe('SAMEORIGIN');
      expect(r.headers['content-security-policy']).toBe("frame-ancestors 'self'");
    }
  });

  test('the OpenAPI document lists 403 on state-changing operations and 421 everywhere (not 403 on the open /health)', async () => {
    const doc = (await h.get('/api/v1/openapi.json')).body;
    expect(Object.keys(doc.paths['/api/v1/settings'].put.responses)).toEqual(expect.arrayContaining(['403', '421']));
    expect(Object.keys(doc.paths['/api/v1/printers'].get.responses)).toContain('421');
    expect(Object.keys(doc.paths['/api/v1/health'].get.responses)).toContain('421');
    expect(Object.keys(doc.paths['/api/v1/health'].get.responses)).not.toContain('403');
  });
});

describe('browser guard with ALLOWED_ORIGINS and ALLOWED_HOSTS', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startService({ env: { ALLOWED_ORIGINS: 'http://dash.example:1880, :1881', ALLOWED_HOSTS: 'farm.example.com,.lab.example' } });
  });
  afterAll(() => h.close());

  test('a listed origin may change things and read the answers (CORS, preflight included)', async () => {
    const pre = await raw(h.base, 'OPTIONS', '/api/v1/settings', {
      Origin: 'http://dash.example:1880',
      'Access-Control-Request-Method': 'PUT',
      'Access-Control-Request-Headers': 'content-type',
    });
    expect(pre.status).toBe(204);
    expect(pre.headers['access-control-allow-origin']).toBe('http://dash.example:1880');
    expect(pre.headers['access-control-allow-methods']).toContain('PUT');
    const put = await raw(h.base, 'PUT', '/api/v1/settings', { Origin: 'http://dash.example:1880', 'Content-Type': 'application/json' }, JSON.stringify({ business_mode: true }));
    expect(put.status).toBe(200);
    expect(put.headers['access-control-allow-origin']).toBe('http://dash.example:1880');
    expect(await upgrade(h.base, {}, 'http://dash.example:1880')).toEqual({ open: true });
  });

  test('":1881" admits a page on this host at port 1881 (a Node-RED dashboard), not the same port elsewhere', async () => {
    const ok = await raw(h.base, 'POST', '/api/v1/usage-stats/opt-out', { Origin: 'http://127.0.0.1:1881' });
    expect(ok.status).toBe(200);
    expectErrorBody(await raw(h.base, 'POST', '/api/v1/usage-stats/opt-out', { Origin: 'http://evil.example:1881' }), 403, 'ORIGIN_NOT_ALLOWED');
    expectErrorBody(await raw(h.base, 'POST', '/api/v1/usage-stats/opt-out', { Origin: 'http://dash.example:1881' }), 403, 'ORIGIN_NOT_ALLOWED');
  });

  test('listed hosts and domains are served, others still get 421', async () => {
    expect((await raw(h.base, 'GET', '/api/v1/health', { Host: 'farm.example.com' })).status).toBe(200);
    expect((await raw(h.base, 'GET', '/api/v1/health', { Host: 'a.lab.example:8000' })).status).toBe(200);
    expectErrorBody(await raw(h.base, 'GET', '/api/v1/health', { Host: 'farm.example.org' }), 421, 'HOST_NOT_ALLOWED');
  });
});

describe('browser guard behind a trusted proxy (TRUST_PROXY)', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startService({ env: { TRUST_PROXY: 'true', ALLOWED_HOSTS: 'farm.example.com' } });
  });
  afterAll(() => h.close());

  test('a rebound page cannot name an allowed host in X-Forwarded-Host beside its own Host', async () => {
    // A proxy that passes Host on and leaves X-Forwarded-Host alone: the page (same-origin to the browser) sets it.
    const read = await raw(h.base, 'GET', '/api/v1/printers', { Host: 'rebind.evil.example', 'X-Forwarded-Host': 'localhost' });
    expectErrorBody(read, 421, 'HOST_NOT_ALLOWED');
    expect(read.body.error.details).toEqual({ host: 'rebind.evil.example' });
    expect(await upgrade(h.base, { Host: 'rebind.evil.example', 'X-Forwarded-Host': 'localhost' })).toMatchObject({ status: 421 });
    expectErrorBody(await raw(h.base, 'GET', '/api/v1/printers', { Host: '127.0.0.1', 'X-Forwarded-Host': 'rebind.evil.example' }), 421, 'HOST_NOT_ALLOWED');
  });

  test('what proxies send is served: the public name in Host, in X-Forwarded-Host, or both', async () => {
    expect((await raw(h.base, 'GET', '/api/v1/printers', { Host: 'farm.example.com', 'X-Forwarded-Host': 'farm.example.com' })).status).toBe(200);
    expect((await raw(h.base, 'GET', '/api/v1/printers', { Host: '127.0.0.1:8000', 'X-Forwarded-Host': 'farm.example.com' })).status).toBe(200);
    const own = await raw(h.base, 'PUT', '/api/v1/settings', { Host: 'printfarm:8000', 'X-Forwarded-Host': 'farm.example.com', Origin: 'https://farm.example.com', 'Content-Type': 'application/json' }, '{"business_mode":true}');
    expect(own.status).toBe(200);
  });
});
