
import { describeDialects } from '../helpers/dialects';
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { VERSION } from '../../service/config';
import { bambu, prusa, startService, type Harness } from '../helpers/service';

/** A local stand-in for the update source; `respond` decides per request (or never answers when it returns false). */
async function updateSource(respond: (req: http.IncomingMessage, res: http.ServerResponse) => boolean | void) {
  const requests: http.IncomingMessage[] = [];
  const server = http.createServer((req, res) => {
    requests.push(req);
    respond(req, res);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/repos/printfarm/releases/latest`,
    requests,
    server,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const json = (res: http.ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

describeDialects('health and system info', (db) => {
  let h: Harness;
  const type = db.name === 'postgres' ? 'postgresql' : 'sqlite';
  beforeEach(async () => {
    h = await startService(await db.options());
  });
  afterEach(() => h.close());

  test('GET /health reports status, version, database, active printers and uptime', async () => {
    const res = await h.get('/api/v1/health');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      status: 'healthy',
      timestamp: expect.any(String),
      version: VERSION,
      database: 'connected',
      active_printers: 0,
      uptime_seconds: expect.any(Number),
      ffmpeg: expect.objectContaining({ available: expect.any(Boolean), message: expect.stringContaining('RTSPS cameras') }),
    });
    expect(typeof res.body.ffmpeg.version).toBe(res.body.ffmpeg.available ? 'string' : 'object');
    expect(Number.isNaN(Date.parse(res.body.timestamp))).toBe(false);
    expect(Number.isInteger(res.body.uptime_seconds)).toBe(true);
    expect(res.body.uptime_seconds).toBeGreaterThanOrEqual(0);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  });

  test('GET /api/v1 (the address the startup banner prints) says where the documents, the health check and /ws are, and each answers', async () => {
    for (const at of ['/api/v1', '/api/v1/']) {
      const index = await h.get(at);
      expect(index.status).toBe(200);
      expect(index.body).toEqual({ name: 'Printfarm API', version: expect.any(String), openapi: '/api/v1/openapi.json', docs: '/docs', redoc: '/redoc', health: '/api/v1/health', websocket: '/ws' });
    }
    const { body } = await h.get('/api/v1');
    for (const link of [body.openapi, body.docs, body.redoc, body.health]) expect((await fetch(h.base + link)).status).toBe(200);
  });

  test('active_printers counts the active printers only', async () => {
    await h.post('/api/v1/printers', bambu('a1'));
    await h.post('/api/v1/printers', prusa('p1'));
    await h.post('/api/v1/printers', prusa('p2', { is_active: false }));
    let health = (await h.get('/api/v1/health')).body;
    expect(health.active_printers).toBe(2);
    expect(Number.isInteger(health.active_printers)).toBe(true);

    await h.put('/api/v1/printers/a1', { is_active: false });
    expect((await h.get('/api/v1/health')).body.active_printers).toBe(1);
    await h.put('/api/v1/printers/p2', { is_active: true });
    expect((await h.get('/api/v1/health')).body.active_printers).toBe(2);
    await h.del('/api/v1/printers/p1');
    health = (await h.get('/api/v1/health')).body;
    expect(health.active_printers).toBe(1);
  });

  test('GET /system/info has the spec shape with real counts', async () => {
    const empty = await h.get('/api/v1/system/info');
    expect(empty.status).toBe(200);
    expect(empty.body).toEqual({
      system: { version: VERSION, timezone: expect.any(String), language: 'en', business_mode: false },
      database: { type, jobs_count: 0, files_count: 0, printers_count: 0 },
      features: { job_monitoring: true, file_management: true, business_analytics: false, preview_system: true },
    });

    await h.post('/api/v1/printers', bambu('a1'));
    await h.post('/api/v1/printers', prusa('p1', { is_active: false }));
    for (const name of ['one', 'two', 'three']) {
      expect((await h.post('/api/v1/jobs', { printer_id: 'a1', job_name: name })).status).toBe(201);
    }
    await h.put('/api/v1/settings', { business_mode: true, job_creation_auto_create: false, language: 'de', timezone: 'Europe/Berlin' });

    const info = (await h.get('/api/v1/system/info')).body;
    expect(info.database).toEqual({ type, jobs_count: 3, files_count: 0, printers_count: 2 });
    expect(info.system).toEqual({ version: VERSION, timezone: 'Europe/Berlin', language: 'de', business_mode: true });
    expect(info.features).toEqual({ job_monitoring: false, file_management: true, business_analytics: true, preview_system: true });
    for (const key of ['jobs_count', 'files_count', 'printers_count']) expect(Number.isInteger(info.database[key])).toBe(true);
  });

  test('GET /metrics gives the size of the database in use (the SQLite file, or the PostgreSQL database), and it grows with the data', async () => {
    const size = async () => {
      const text = await (await fetch(`${h.base}/metrics`)).text();
      return Number(/^printfarm_database_size_bytes (\S+)$/m.exec(text)?.[1]);
    };
    const before = await size();
    expect(before).toBeGreaterThan(0);
    await h.post('/api/v1/printers', bambu('a1'));
    const notes = 'n'.repeat(8000);
    for (let i = 0; i < 300; i++) expect((await h.post('/api/v1/jobs', { printer_id: 'a1', job_name: `job ${i}`, notes })).status).toBe(201);
    expect(await size()).toBeGreaterThan(before);
  });
});

describe('GET /update-check', () => {
  let h: Harness | undefined;
  let source: Awaited<ReturnType<typeof updateSource>> | undefined;
  afterEach(async () => {
    await h?.close();
    await source?.close();
    h = source = undefined;
  });

  test('a GitHub-release answer with a newer tag offers the update', async () => {
    source = await updateSource((_req, res) => json(res, 200, { tag_name: 'v9.9.9', html_url: 'https://github.com/printfarm/node-red-printfarm/releases/tag/v9.9.9' }));
    h = await startService({ updateCheckUrl: source.url });
    const res = await h.get('/api/v1/update-check');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      current_version: VERSION,
      latest_version: '9.9.9',
      update_available: true,
      release_url: 'https://github.com/printfarm/node-red-printfarm/releases/tag/v9.9.9',
      checked_at: expect.any(String),
    });
    expect(source.requests).toHaveLength(1);
    expect(source.requests[0].headers.accept).toMatch(/application\/json/);
    expect(source.requests[0].headers['user-agent']).toBe(`printfarm/${VERSION}`);

    // The answer is cached: a second check does not ask again.
    expect((await h.get('/api/v1/update-check')).body.latest_version).toBe('9.9.9');
    expect(source.requests).toHaveLength(1);
  });

  test('an npm-registry answer with an older or equal version offers nothing', async () => {
    source = await updateSource((_req, res) => json(res, 200, { name: '@printfarm/node-red-printfarm', version: VERSION }));
    h = await startService({ updateCheckUrl: source.url });
    const res = await h.get('/api/v1/update-check');
    expect(res.body).toMatchObject({ current_version: VERSION, latest_version: VERSION, update_available: false, release_url: expect.any(String) });
  });

  test('concurrent checks share one lookup', async () => {
    source = await updateSource((_req, res) => json(res, 200, { tag_name: 'v10.0.0' }));
    h = await startService({ updateCheckUrl: source.url });
    const answers = await Promise.all([h.get('/api/v1/update-check'), h.get('/api/v1/update-check'), h.get('/api/v1/update-check')]);
    for (const a of answers) expect(a.body).toMatchObject({ latest_version: '10.0.0', update_available: true });
    expect(source.requests).toHaveLength(1);
  });

  test.each([
    ['an HTTP 500', (res: http.ServerResponse) => json(res, 500, { message: 'boom' })],
    ['a 404', (res: http.ServerResponse) => json(res, 404, { message: 'Not Found' })],
    ['a body that is not JSON', (res: http.ServerResponse) => res.end('<html>rate limited</html>')],
    ['JSON without a version', (res: http.ServerResponse) => json(res, 200, { tag_name: 'nightly' })],
    ['a JSON array', (res: http.ServerResponse) => json(res, 200, [{ tag_name: 'v9.9.9' }])],
  ])('%s from the source means no update', async (_name, answer) => {
    source = await updateSource((_req, res) => answer(res));
    h = await startService({ updateCheckUrl: source.url });
    const res = await h.get('/api/v1/update-check');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ current_version: VERSION, latest_version: VERSION, update_available: false, release_url: expect.any(String) });
    expect(source.requests).toHaveLength(1);
  });

  test('a source that never answers costs the timeout, and other requests are not held up meanwhile', async () => {
    source = await updateSource(() => false); // never answers
    h = await startService({ updateCheckUrl: source.url, updateCheckTimeout: 1 });
    const order: string[] = [];
    const asked = once(source.server, 'request');
    const check = h.get('/api/v1/update-check').then((res) => {
      order.push('update-check');
      return res;
    });
    await asked; // the service is now waiting for the source

    const health = await h.get('/api/v1/health');
    order.push('health');
    expect(health.status).toBe(200);
    const printers = await h.get('/api/v1/printers');
    order.push('printers');
    expect(printers.status).toBe(200);

    const res = await check;
    expect(order).toEqual(['health', 'printers', 'update-check']);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ current_version: VERSION, update_available: false, release_url: expect.any(String) });
    expect(res.body.latest_version).toBe(res.body.current_version);
    expect(h.logs.some((l) => l.msg === 'update check: source not reachable')).toBe(true);
  });

  test('shutting down does not wait for a hanging update check', async () => {
    source = await updateSource(() => false);
    h = await startService({ updateCheckUrl: source.url, updateCheckTimeout: 30 });
    const asked = once(source.server, 'request');
    const check = h.get('/api/v1/update-check');
    await asked;
    const closed = h.stop();
    const res = await check;
    await closed;
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ current_version: VERSION, latest_version: VERSION, update_available: false });
  });

  test('an unreachable source means no update', async () => {
    // The harness default points at a closed port.
    h = await startService();
    const res = await h.get('/api/v1/update-check');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      current_version: VERSION,
      latest_version: VERSION,
      update_available: false,
      release_url: expect.stringMatching(/^https:\/\//),
      checked_at: expect.any(String),
    });
  });

  test('a host name that does not resolve means no update', async () => {
    h = await startService({ updateCheckUrl: 'http://update-source.invalid/releases/latest' });
    const res = await h.get('/api/v1/update-check');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ latest_version: VERSION, update_available: false });
  });
});
