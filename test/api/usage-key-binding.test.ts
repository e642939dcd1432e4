/**
 * The usage-statistics API key goes only where it was meant to go: changing `usage_stats_endpoint`
 * through the API drops the stored key unless the same request sets a new one, the key from the
 * environment stays with the endpoint from the environment, and nothing the remote end answers (body
 * text, socket errors) is echoed back to the API client, so the endpoint setting is no port scanner.
 */
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import { expectError, startService, type Harness } from '../helpers/service';
import { startFaultServer, testCa, type FaultServer } from '../helpers/usage';

const ENV_KEY = 'env-secret-key';
const BANNER = 'SSH-2.0-OpenSSH_9.6 secret-banner';

let home: FaultServer;
let sink: FaultServer;
let ca: string;
beforeAll(async () => {
  ca = (await testCa()).ca;
  home = await startFaultServer();
  sink = await startFaultServer();
});
afterAll(async () => {
  await home.close();
  await sink.close();
});

const options = () => ({
  usageStats: { ca, deploymentMode: 'standalone' as const },
  env: { USAGE_STATS_ENDPOINT: `${home.url}/submit`, USAGE_STATS_API_KEY: ENV_KEY, USAGE_STATS_RETRY_COUNT: '0', USAGE_STATS_TIMEOUT: '5' },
});

describe('usage statistics key binding', () => {
  let h: Harness;
  beforeEach(async () => {
    for (const s of [home, sink]) {
      s.attempts.length = 0;
      s.script([], { status: 500, body: { error: { code: 'BANNER', message: BANNER } } });
    }
    h = await startService(options());
    await h.post('/api/v1/usage-stats/opt-in');
  });
  afterEach(() => h.close());

  test('a new endpoint set through the API does not get the environment key', async () => {
    const put = await h.put('/api/v1/settings', { usage_stats_endpoint: `${sink.url}/collect` });
    expect(put.status).toBe(200);
    expect(put.body.updated).toEqual(expect.arrayContaining(['usage_stats_endpoint', 'usage_stats_api_key']));
    expect((await h.get('/api/v1/settings')).body.usage_stats_api_key).toBe('');
    await h.post('/api/v1/usage-stats/submit');
    const del = await h.del('/api/v1/usage-stats/delete-all?include_remote=true');
    expect(del.status).toBe(200);
    expect(sink.attempts.map((a) => [a.method, a.headers['x-api-key']])).toEqual([
      ['POST', ''],
      ['DELETE', ''],
    ]);
    expect(home.attempts).toEqual([]);
  });

  test('the same request may set a new key with the new endpoint; later endpoint changes drop it again', async () => {
    await h.put('/api/v1/settings', { usage_stats_endpoint: `${sink.url}/collect`, usage_stats_api_key: 'sink-key' });
    expect((await h.get('/api/v1/settings')).body.usage_stats_api_key).toBe('********');
    await h.post('/api/v1/usage-stats/submit');
    expect(sink.attempts.map((a) => a.headers['x-api-key'])).toEqual(['sink-key']);
    // Writing the same endpoint again (a form that sends everything) keeps the key.
    await h.put('/api/v1/settings', { usage_stats_endpoint: `${sink.url}/collect`, usage_stats_timeout: 6 });
    expect((await h.get('/api/v1/settings')).body.usage_stats_api_key).toBe('********');
    await h.put('/api/v1/settings', { usage_stats_endpoint: `${home.url}/other` });
    expect((await h.get('/api/v1/settings')).body.usage_stats_api_key).toBe('');
  });

  test('an endpoint stored before this rule (no stored key) does not get the environment key after a restart', async () => {
    await h.service.context.store.settings.setMany({ usage_stats_endpoint: `${sink.url}/collect` }, new Date().toISOString());
    h = await h.restart(options());
    expect((await h.get('/api/v1/settings')).body.usage_stats_api_key).toBe('');
    await h.post('/api/v1/usage-stats/submit');
    expect(sink.attempts.map((a) => a.headers['x-api-key'])).toEqual(['']);
  });

  test('the environment endpoint keeps the environment key', async () => {
    await h.post('/api/v1/usage-stats/submit');
    expect(home.attempts.map((a) => a.headers['x-api-key'])).toEqual([ENV_KEY]);
  });

  test('a key in the endpoint\'s query is shown as **** and kept when the shown endpoint is written back', async () => {
    const endpoint = `${sink.url}/collect?key=query-secret-key`;
    await h.put('/api/v1/settings', { usage_stats_endpoint: endpoint, usage_stats_api_key: 'sink-key' });
    const shown = (await h.get('/api/v1/settings')).body.usage_stats_endpoint;
    expect(shown).toBe(`${sink.url}/collect?key=****`);
    const local = await h.get('/api/v1/usage-stats/local');
    expect(local.body.settings.endpoint).toBe(shown);
    expect((await h.get('/api/v1/usage-stats/export')).text + local.text).not.toContain('query-secret-key');
    // A form that sends back what it was shown changes nothing: the endpoint and its key stay.
    expect((await h.put('/api/v1/settings', { usage_stats_endpoint: shown })).body.updated).toEqual([]);
    await h.post('/api/v1/usage-stats/submit');
    expect(sink.attempts.map((a) => [a.url, a.headers['x-api-key']])).toEqual([['/collect?key=query-secret-key', 'sink-key']]);
  });

  test('the remote answer is never echoed: only our words for its status class', async () => {
    await h.put('/api/v1/settings', { usage_stats_endpoint: `${sink.url}/collect` });
    const err = expectError(await h.post('/api/v1/usage-stats/submit'), 502, 'USAGE_SUBMISSION_FAILED');
    expect(err.message).toMatch(/HTTP 500 \(server error\)/);
    const everything = JSON.stringify([err, (await h.get('/api/v1/usage-stats/local')).body, (await h.del('/api/v1/usage-stats/delete-all?include_remote=true')).body]);
    expect(everything).not.toContain('secret-banner');
    expect(everything).not.toContain('BANNER');
  });

  test('socket errors are not echoed either (no port scanning through the endpoint)', async () => {
    const closed = net.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    await h.put('/api/v1/settings', { usage_stats_endpoint: `https://127.0.0.1:${port}/submit` });
    const err = expectError(await h.post('/api/v1/usage-stats/submit'), 502, 'USAGE_SUBMISSION_FAILED');
    expect(err.message).toMatch(/could not reach the aggregation service/);
    const remote = (await h.del('/api/v1/usage-stats/delete-all?include_remote=true')).body.remote;
    expect(remote).toMatchObject({ requested: true, deleted: false, status: null });
    const everything = JSON.stringify([err, remote, (await h.get('/api/v1/usage-stats/local')).body]);
    expect(everything).not.toMatch(/ECONNREFUSED|connect /);
    // The operator still finds the cause in the log.
    expect(h.logs.some((l) => String(l.detail ?? '').includes('ECONNREFUSED'))).toBe(true);
  });
});
