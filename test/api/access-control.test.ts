/**
 * Optional access control: off while no token exists (the API stays open, as the spec says); with
 * AUTH_TOKENS or tokens from `printfarm token create`, /api/v1 and /ws need a bearer token, and the
 * roles decide: viewer reads (no access codes), operator also controls, admin also configures.
 * /health stays open. Real HTTP and WebSocket; the client library sends its token.
 */
import fs from 'node:fs';
import path from 'node:path';
import WebSocket from 'ws';
import { createToken, TOKENS_FILE } from '../../service/auth/tokens';
import { exposureWarning } from '../../service/app';
import { main } from '../../service/cli';
import { PrintfarmClient } from '../../service/client';
import { prusa, startService, tempDir, type Harness } from '../helpers/service';

const TOKENS = { viewer: 'viewer-token-0123456789', operator: 'operator-token-0123456789', admin: 'admin-token-0123456789' };
const AUTH_TOKENS = Object.entries(TOKENS)
  .map(([role, token]) => `${role}:${token}`)
  .join(',');

const as = (token: string | null): Record<string, string> => (token ? { authorization: `Bearer ${token}` } : {});

function upgrade(base: string, headers: Record<string, string>, query = ''): Promise<'open' | { status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(`${base.replace(/^http/, 'ws')}/ws${query}`, { headers });
    socket.once('open', () => {
      socket.close();
      resolve('open');
    });
    socket.once('unexpected-response', (_req, res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
    });
    socket.once('error', reject);
  });
}

describe('access control with AUTH_TOKENS', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startService({ env: { AUTH_TOKENS } });
    expect((await h.request('POST', '/api/v1/printers', prusa('mk4-01'), as(TOKENS.admin))).status).toBe(201);
  });
  afterAll(() => h.close());

  test('no token or an unknown one gets 401 with the error body; /health and the API description stay open', async () => {
    for (const token of [null, 'not-a-known-token-at-all']) {
      const res = await h.request('GET', '/api/v1/printers', undefined, as(token));
      expect(res.status).toBe(401);
      expect(res.body.error).toMatchObject({ code: 'UNAUTHORIZED', request_id: res.headers.get('x-request-id') });
      expect(res.headers.get('www-authenticate')).toBe('Bearer realm="printfarm"');
    }
    expect((await h.get('/api/v1/health')).status).toBe(200);
    const doc = (await h.get('/api/v1/openapi.json')).body;
    expect(doc.components.securitySchemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(doc.paths['/api/v1/health'].get.security).toEqual([]);
    expect(Object.keys(doc.paths['/api/v1/printers'].get.responses)).toEqual(expect.arrayContaining(['401', '403']));
  });

  test('a viewer reads, without access codes, and may not control printers', async () => {
    const list = await h.request('GET', '/api/v1/printers', undefined, as(TOKENS.viewer));
    expect(list.status).toBe(200);
    const detail = await h.request('GET', '/api/v1/printers/mk4-01', undefined, as(TOKENS.viewer));
    expect(detail.status).toBe(200);
    expect(detail.body.id).toBe('mk4-01');
    expect(detail.body).not.toHaveProperty('access_code');
    const pause = await h.request('POST', '/api/v1/printers/mk4-01/pause', undefined, as(TOKENS.viewer));
    expect(pause.status).toBe(403);
    expect(pause.body.error).toMatchObject({ code: 'FORBIDDEN', details: { role: 'viewer', required_role: 'operator' } });
  });

  test('a viewer sees notification webhooks by their origin only (an ntfy topic is a secret); an admin sees them whole', async () => {
    const hooks = [{ url: 'https://ntfy.sh/farm-secret-topic?auth=tok', kinds: ['attention'] }];
    expect((await h.request('PUT', '/api/v1/settings', { notify_webhooks: hooks }, as(TOKENS.admin))).status).toBe(200);
    const seen = await h.request('GET', '/api/v1/settings', undefined, as(TOKENS.viewer));
    expect(seen.body.notify_webhooks).toEqual([{ url: 'https://ntfy.sh/********', kinds: ['attention'] }]);
    expect(seen.text).not.toContain('farm-secret-topic');
    expect((await h.request('GET', '/api/v1/settings', undefined, as(TOKENS.admin))).body.notify_webhooks).toEqual(hooks);
  });

  test('an operator, who may not set webhooks, does not read them whole either (only an admin does)', async () => {
    const hooks = [{ url: 'https://ntfy.sh/farm-operator-topic', kinds: ['print_failed'] }];
    expect((await h.request('PUT', '/api/v1/settings', { notify_webhooks: hooks }, as(TOKENS.admin))).status).toBe(200);
    const seen = await h.request('GET', '/api/v1/settings', undefined, as(TOKENS.operator));
    expect(seen.body.notify_webhooks).toEqual([{ url: 'https://ntfy.sh/********', kinds: ['print_failed'] }]);
    expect(seen.text).not.toContain('farm-operator-topic');
    // Operators run the printers: they keep the access codes.
    expect((await h.request('GET', '/api/v1/printers/mk4-01', undefined, as(TOKENS.operator))).body.access_code).toBe(prusa('mk4-01').access_code);
  });

  test('an operator controls jobs but may not configure printers or settings', async () => {
    const job = await h.request('POST', '/api/v1/jobs', { printer_id: 'mk4-01', job_name: 'Clip' }, as(TOKENS.operator));
    expect(job.status).toBe(201);
    const settings = await h.request('PUT', '/api/v1/settings', { business_mode: true }, as(TOKENS.operator));
    expect(settings.status).toBe(403);
    expect(settings.body.error.details).toEqual({ role: 'operator', required_role: 'admin' });
    expect((await h.request('DELETE', '/api/v1/printers/mk4-01', undefined, as(TOKENS.operator))).status).toBe(403);
    expect((await h.request('POST', '/api/v1/usage-stats/opt-in', undefined, as(TOKENS.operator))).status).toBe(403);
  });

  test('an admin configures and sees access codes', async () => {
    expect((await h.request('PUT', '/api/v1/settings', { business_mode: true }, as(TOKENS.admin))).status).toBe(200);
    const detail = await h.request('GET', '/api/v1/printers/mk4-01', undefined, as(TOKENS.admin));
    expect(detail.body.access_code).toBe(prusa('mk4-01').access_code);
  });

  test('/ws needs a token too: header, or ?access_token= for browsers', async () => {
    expect(await upgrade(h.base, {})).toMatchObject({ status: 401, body: { error: { code: 'UNAUTHORIZED' } } });
    expect(await upgrade(h.base, as('wrong-token-0123456789'))).toMatchObject({ status: 401 });
    expect(await upgrade(h.base, as(TOKENS.viewer))).toBe('open');
    expect(await upgrade(h.base, {}, `?access_token=${TOKENS.viewer}`)).toBe('open');
  });

  test('the client library sends its token', async () => {
    const withToken = new PrintfarmClient(h.base, { token: TOKENS.viewer });
    expect((await withToken.printers.list()).printers.map((p: { id: string }) => p.id)).toEqual(['mk4-01']);
    await expect(new PrintfarmClient(h.base).printers.list()).rejects.toMatchObject({ status: 401, code: 'UNAUTHORIZED' });
  });
});

describe('tokens made with printfarm token create', () => {
  test('are stored hashed, turn access control on, and work without a restart', async () => {
    const dataDir = tempDir();
    const open = await startService({}, dataDir);
    try {
      // No token yet: open, as the spec says.
      expect((await open.get('/api/v1/printers')).status).toBe(200);
      const written: string[] = [];
      const spy = jest.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
        written.push(String(chunk));
        return true;
      });
      try {
        await main(['token', 'create', '--role', 'operator', '--data-dir', dataDir]);
      } finally {
        spy.mockRestore();
      }
      const token = written.join('').split('\n')[0];
      expect(token).toMatch(/^pf_[\w-]{32}$/);
      const stored = fs.readFileSync(path.join(dataDir, TOKENS_FILE), 'utf8');
      expect(stored).not.toContain(token);
      expect(JSON.parse(stored).tokens[0]).toMatchObject({ role: 'operator', hash: expect.stringMatching(/^sha256:[0-9a-f]{64}$/) });
      expect((fs.statSync(path.join(dataDir, TOKENS_FILE)).mode & 0o777).toString(8)).toBe('600');
      // The running service sees the new token at once.
      expect((await open.get('/api/v1/printers')).status).toBe(401);
      expect((await open.request('GET', '/api/v1/printers', undefined, as(token))).status).toBe(200);
      const viewer = createToken(dataDir, 'viewer').token;
      expect((await open.request('POST', '/api/v1/jobs', { printer_id: 'x', job_name: 'y' }, as(viewer))).status).toBe(403);
    } finally {
      await open.close();
    }
  });

  test('an open /ws connection ends (1008) when its token is removed from tokens.json; others stay open', async () => {
    const dataDir = tempDir();
    const h = await startService({}, dataDir);
    const sockets: WebSocket[] = [];
    try {
      const gone = createToken(dataDir, 'viewer').token;
      const kept = createToken(dataDir, 'operator').token;
      const connect = async (token: string, query = false) => {
        const socket = new WebSocket(`${h.base.replace(/^http/, 'ws')}/ws${query ? `?access_token=${token}` : ''}`, { headers: query ? {} : as(token) });
        sockets.push(socket);
        await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
        return { socket, closed: new Promise<[number, string]>((resolve) => socket.once('close', (code, reason) => resolve([code, reason.toString()]))) };
      };
      const [revoked, byQuery, other] = [await connect(gone), await connect(gone, true), await connect(kept)];
      // The token's entry leaves the file (an operator edits it by hand: there is no revoke command); no request follows.
      const file = path.join(dataDir, TOKENS_FILE);
      const stored = JSON.parse(fs.readFileSync(file, 'utf8'));
      fs.writeFileSync(file, JSON.stringify({ tokens: stored.tokens.slice(1) }));
      const within = (ms: number) => new Promise((resolve) => setTimeout(() => resolve('still open'), ms).unref());
      expect(await Promise.race([revoked.closed, within(5000)])).toEqual([1008, 'access revoked']);
      expect(await Promise.race([byQuery.closed, within(1000)])).toEqual([1008, 'access revoked']);
      expect(other.socket.readyState).toBe(WebSocket.OPEN);
      expect(await upgrade(h.base, as(gone))).toMatchObject({ status: 401 });
      expect(h.logs.some((l) => JSON.stringify(l).includes(gone))).toBe(false);
    } finally {
      for (const s of sockets) s.terminate();
      await h.close();
    }
  });

  test('a token file entry that is no token stops the start instead of leaving the API open', async () => {
    const dataDir = tempDir();
    const hash = `sha256:${'0'.repeat(64)}`;
    // Why the start failed, or 'started' (then the service is stopped again, its data dir kept).
    const refusal = () =>
      startService({}, dataDir).then(
        (h) => h.stop().then(() => 'started'),
        (err: Error) => err.message,
      );
    fs.writeFileSync(path.join(dataDir, TOKENS_FILE), JSON.stringify({ tokens: [{ id: 'a1', role: 'Admin', name: '', hash, created_at: '2026-01-01T00:00:00Z' }] }));
    expect(await refusal()).toMatch(/tokens\.json: entry 1 is no token/);
    fs.writeFileSync(path.join(dataDir, TOKENS_FILE), JSON.stringify({ tokens: [{ id: 'a1', role: 'admin', name: '', hash: 'sha256:abc', created_at: '2026-01-01T00:00:00Z' }] }));
    expect(await refusal()).toMatch(/entry 1 is no token/);
    // An empty list is no tokens: open, as the spec says.
    fs.writeFileSync(path.join(dataDir, TOKENS_FILE), JSON.stringify({ tokens: [] }));
    const open = await startService({}, dataDir);
    try {
      expect((await open.get('/api/v1/printers')).status).toBe(200);
    } finally {
      await open.close();
    }
  });

  test('a bad AUTH_TOKENS entry stops the start with a clear message', async () => {
    await expect(startService({ env: { AUTH_TOKENS: 'guest:0123456789abcdef' } })).rejects.toThrow(/AUTH_TOKENS: unknown role "guest"/);
    await expect(startService({ env: { AUTH_TOKENS: 'admin:short' } })).rejects.toThrow(/at least 16 characters/);
  });
});

describe('the start-up warning', () => {
  test('names who can reach an open API beyond loopback, and is silent on loopback or with tokens', async () => {
    expect(exposureWarning('0.0.0.0', 8000, false)).toMatch(/anyone who can reach port 8000 on any address of this machine can control the printers/);
    expect(exposureWarning('192.168.1.20', 8000, false)).toMatch(/on 192\.168\.1\.20 /);
    expect(exposureWarning('0.0.0.0', 8000, true)).toBeNull();
    for (const host of ['127.0.0.1', '::1', 'localhost']) expect(exposureWarning(host, 8000, false)).toBeNull();
    // The service on loopback (tests bind 127.0.0.1) logs no such warning, and says whether access control is on.
    const h = await startService();
    try {
      expect(h.logs.some((l) => String(l.msg).startsWith('the API is open'))).toBe(false);
      expect(h.logs.find((l) => l.msg === 'printfarm service ready')).toMatchObject({ access_control: false });
    } finally {
      await h.close();
    }
  });
});
