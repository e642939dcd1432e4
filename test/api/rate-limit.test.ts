/**
 * Rate limits (DECISIONS: off by default; `rate_limit_enabled` turns on the
 * spec's v1.0 per-client-IP figures): the X-RateLimit-* headers, 429
 * RATE_LIMIT_EXCEEDED with the error body, the per-minute status budget, file
 * downloads and /ws connections held at once, and clients behind a proxy.
 */
import http from 'node:http';
import WebSocket from 'ws';
import { V1_RATE_LIMITS } from '../../service/api/rate-limit';
import { bambu, expectError, startService, type Harness } from '../helpers/service';
import { connectWs, type WsClient } from '../helpers/ws';

/** Sends `count` requests, `parallel` at a time, and gives back their statuses in order. */
async function hammer(count: number, send: (i: number) => Promise<Response>, parallel = 8): Promise<number[]> {
  const statuses: number[] = new Array(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < count) {
        const i = next++;
        const res = await send(i);
        await res.arrayBuffer();
        statuses[i] = res.status;
      }
    }),
  );
  return statuses;
}

const headersOf = (res: Response) => ({
  limit: Number(res.headers.get('x-ratelimit-limit')),
  remaining: Number(res.headers.get('x-ratelimit-remaining')),
  reset: Number(res.headers.get('x-ratelimit-reset')),
});

async function uploadLocalFile(h: Harness, bytes: number): Promise<string> {
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(bytes).fill(59)]), 'big.gcode');
  const res = await fetch(`${h.base}/api/v1/files/upload`, { method: 'POST', body: form });
  expect(res.status).toBe(201);
  return ((await res.json()) as { id: string }).id;
}

/** A GET whose body the client does not read: the response stays in flight until `destroy`. */
function stalledGet(url: string): Promise<{ status: number; destroy: () => void }> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent: false }, (res) => {
      res.pause();
      resolve({ status: res.statusCode ?? 0, destroy: () => req.destroy() });
    });
    req.on('error', (err) => (err.message === 'socket hang up' ? undefined : reject(err)));
  });
}

/** The HTTP answer to a /ws upgrade that the server refuses. */
function refusedUpgrade(base: string): Promise<{ status: number; body: any; headers: http.IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(base.replace(/^http/, 'ws') + '/ws');
    socket.on('open', () => {
      socket.close();
      reject(new Error('the upgrade was accepted'));
    });
    socket.on('error', () => {});
    socket.on('unexpected-response', (_req, res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text), headers: res.headers }));
    });
  });
}

describe('rate limits are off by default', () => {
  let h: Harness;
  beforeAll(async () => (h = await startService()));
  afterAll(() => h.close());

  test('no X-RateLimit headers, and more status requests than the v1.0 budget all answer 200', async () => {
    const statuses = await hammer(V1_RATE_LIMITS.status.limit + 30, () => fetch(`${h.base}/api/v1/printers`));
    expect(new Set(statuses)).toEqual(new Set([200]));
    const res = await fetch(`${h.base}/api/v1/health`);
    expect(res.headers.get('x-ratelimit-limit')).toBeNull();
    expect((await h.get('/api/v1/settings')).body.rate_limit_enabled).toBe(false);
  });
});

describe('with rate_limit_enabled (the v1.0 figures)', () => {
  let h: Harness;
  beforeEach(async () => (h = await startService({ env: { RATE_LIMIT_ENABLED: 'true' } })));
  afterEach(() => h.close());

  test('every API answer carries the hourly budget; request 1001 gets 429 RATE_LIMIT_EXCEEDED, /metrics stays open', async () => {
    const before = Math.floor(Date.now() / 1000);
    const first = await fetch(`${h.base}/api/v1/jobs`);
    expect(headersOf(first)).toEqual({ limit: 1000, remaining: 999, reset: expect.any(Number) });
    // The reset is a Unix time one hour after the window opened.
    expect(headersOf(first).reset).toBeGreaterThanOrEqual(before + 3600);
    expect(headersOf(first).reset).toBeLessThanOrEqual(before + 3602);

    // Unknown paths under /api/v1 count too: a scanner spends the same budget.
    const statuses = await hammer(999, (i) => fetch(`${h.base}/api/v1/${i % 2 ? 'jobs' : 'no-such-thing'}`));
    expect(statuses.filter((s) => s === 429)).toEqual([]);

    const refused = await h.get('/api/v1/jobs');
    expectError(refused, 429, 'RATE_LIMIT_EXCEEDED');
    expect(refused.body.error.details).toMatchObject({ limit: 'general', max: 1000, reset: headersOf(first).reset });
    expect(refused.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(3500);

    // Monitoring keeps working when the API budget is spent, and it counted the refusal.
    const metrics = await fetch(`${h.base}/metrics`);
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toMatch(/^printfarm_rate_limited_total\{limit="general"\} 1$/m);
    // The v1.0 budget itself sets the work: 1 000 requests, about 4 s alone and more than the default 20 s
    // beside the suite on two busy cores. Bounded by the count (no wait inside), hence a larger limit.
  }, 60_000);

  test('status requests have their own per-minute budget of 120; other endpoints go on', async () => {
    await h.post('/api/v1/printers', bambu());
    const statuses = await hammer(120, (i) => fetch(`${h.base}/api/v1/printers${i % 3 ? '' : '/x1c-01'}`));
    expect(new Set(statuses)).toEqual(new Set([200]));

    const last = await fetch(`${h.base}/api/v1/printers/x1c-01`);
    expect(last.status).toBe(429);
    expect(headersOf(last)).toMatchObject({ limit: 120, remaining: 0 });
    const body = (await last.json()) as { error: { code: string; details: { limit: string } } };
    expect(body.error).toMatchObject({ code: 'RATE_LIMIT_EXCEEDED', details: { limit: 'status' } });

    // The hour has counted the POST, the 120 status requests, the refused one and this one.
    const jobs = await fetch(`${h.base}/api/v1/jobs`);
    expect(jobs.status).toBe(200);
    expect(headersOf(jobs)).toMatchObject({ limit: 1000, remaining: 1000 - 123 });
  });

  test('10 /ws connections per client; the 11th upgrade gets 429 with the error body; a closed one frees its slot', async () => {
    const clients: WsClient[] = [];
    try {
      for (let i = 0; i < 10; i++) clients.push(await connectWs(h.base));
      const refused = await refusedUpgrade(h.base);
      expect(refused.status).toBe(429);
      expect(refused.body.error).toMatchObject({ code: 'RATE_LIMIT_EXCEEDED', details: { limit: 'websockets', max: 10 } });
      expect(refused.body.error.request_id).toBe(refused.headers['x-request-id']);

      await clients.shift()!.close();
      // The slot comes back when the server sees the close, which may be a moment after the client's.
      let again: WsClient | undefined;
      for (const deadline = Date.now() + 5000; !again; ) {
        again = await connectWs(h.base).catch((err) => {
          if (Date.now() > deadline) throw err;
          return undefined;
        });
      }
      clients.push(again);
      expect(clients).toHaveLength(10);
    } finally {
      await Promise.all(clients.map((c) => c.close()));
    }
  });

  test('the setting turns limits off and on at run time', async () => {
    expect((await h.put('/api/v1/settings', { rate_limit_enabled: false })).status).toBe(200);
    expect((await fetch(`${h.base}/api/v1/jobs`)).headers.get('x-ratelimit-limit')).toBeNull();
    expect((await h.put('/api/v1/settings', { rate_limit_enabled: true })).status).toBe(200);
    expect((await fetch(`${h.base}/api/v1/jobs`)).headers.get('x-ratelimit-limit')).toBe('1000');
  });
});

describe('with shortened limits', () => {
  let h: Harness;
  afterEach(() => h.close());

  test('file downloads held at once are limited; a finished one gives its slot back', async () => {
    h = await startService({
      env: { RATE_LIMIT_ENABLED: 'true' },
      rateLimits: { ...V1_RATE_LIMITS, downloads: 2 },
    });
    // Larger than what the loopback socket buffers take, so an unread response stays in flight.
    const id = await uploadLocalFile(h, 24 * 1024 * 1024);
    const url = `${h.base}/api/v1/files/${id}/content`;
    const held = [await stalledGet(url), await stalledGet(url)];
    expect(held.map((r) => r.status)).toEqual([200, 200]);

    const third = await fetch(url);
    expect(third.status).toBe(429);
    const body = (await third.json()) as { error: { details: { limit: string; max: number } } };
    expect(body.error.details).toMatchObject({ limit: 'downloads', max: 2 });

    held[0].destroy();
    const res = await (async () => {
      for (const deadline = Date.now() + 5000; ; ) {
        const attempt = await fetch(url);
        if (attempt.status !== 429 || Date.now() > deadline) return attempt;
        await attempt.arrayBuffer();
      }
    })();
    expect(res.status).toBe(200);
    expect((await res.arrayBuffer()).byteLength).toBe(24 * 1024 * 1024);
    held[1].destroy();
  });

  test('a window that has passed starts again at the full budget', async () => {
    h = await startService({ env: { RATE_LIMIT_ENABLED: 'true' }, rateLimits: { ...V1_RATE_LIMITS, general: { limit: 3, windowMs: 1000 } } });
    const statuses = await hammer(4, () => fetch(`${h.base}/api/v1/jobs`), 1);
    expect(statuses).toEqual([200, 200, 200, 429]);
    const reset = Number((await fetch(`${h.base}/api/v1/jobs`)).headers.get('x-ratelimit-reset'));
    // Wait for the announced reset instant itself, then the budget is whole again.
    while (Date.now() < reset * 1000) await new Promise((r) => setTimeout(r, 50));
    const fresh = await fetch(`${h.base}/api/v1/jobs`);
    expect(fresh.status).toBe(200);
    expect(headersOf(fresh).remaining).toBe(2);
  });

  test('behind a trusted proxy each client (the entry the proxy appended) has its own budget', async () => {
    h = await startService({
      env: { RATE_LIMIT_ENABLED: 'true', TRUST_PROXY: 'true' },
      rateLimits: { ...V1_RATE_LIMITS, general: { limit: 2, windowMs: 3_600_000 } },
    });
    // This test is the proxy: it appends the address it was reached from to whatever the client sent.
    const from = (client: string, sent?: string) => fetch(`${h.base}/api/v1/jobs`, { headers: { 'x-forwarded-for': sent ? `${sent}, ${client}` : client } }).then((r) => r.status);
    expect([await from('192.0.2.1'), await from('192.0.2.1'), await from('192.0.2.1')]).toEqual([200, 200, 429]);
    expect(await from('192.0.2.2')).toBe(200);
    // What the client wrote into the header itself buys no new budget.
    expect(await from('192.0.2.1', '198.51.100.7')).toBe(429);
    expect(await from('192.0.2.1', '198.51.100.8, 198.51.100.9')).toBe(429);
  });

  test('TRUST_PROXY as a count: two proxies in front, the entry the outer one appended is the client', async () => {
    h = await startService({
      env: { RATE_LIMIT_ENABLED: 'true', TRUST_PROXY: '2' },
      rateLimits: { ...V1_RATE_LIMITS, general: { limit: 1, windowMs: 3_600_000 } },
    });
    const from = (header: string) => fetch(`${h.base}/api/v1/jobs`, { headers: { 'x-forwarded-for': header } }).then((r) => r.status);
    expect(await from('192.0.2.1, 10.0.0.5')).toBe(200);
    expect(await from('198.51.100.7, 192.0.2.1, 10.0.0.5')).toBe(429);
    expect(await from('192.0.2.2, 10.0.0.5')).toBe(200);
  });

  test('behind a trusted proxy a client-written X-Forwarded-For does not lift the /ws limit', async () => {
    h = await startService({ env: { RATE_LIMIT_ENABLED: 'true', TRUST_PROXY: 'true' }, rateLimits: { ...V1_RATE_LIMITS, websockets: 1 } });
    const first = new WebSocket(h.base.replace(/^http/, 'ws') + '/ws', { headers: { 'x-forwarded-for': '192.0.2.1' } });
    await new Promise((resolve, reject) => first.once('open', resolve).once('error', reject));
    const second = new WebSocket(h.base.replace(/^http/, 'ws') + '/ws', { headers: { 'x-forwarded-for': '198.51.100.7, 192.0.2.1' } });
    const status = await new Promise<number>((resolve) => {
      second.once('open', () => resolve(101));
      second.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      second.once('error', () => resolve(0));
    });
    second.terminate();
    first.close();
    await new Promise((r) => first.once('close', r));
    expect(status).toBe(429);
  });
});
