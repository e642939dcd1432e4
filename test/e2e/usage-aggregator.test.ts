/**
 * The service's usage statistics end to end: the client submits over real TLS
 * (a test CA) to the aggregation service, through an HTTPS endpoint that can
 * inject faults (dropped connection, no answer, 429, 500) before passing
 * requests on. Backoff waits run on fake timers; the network is real.
 */
import { startService, type Harness } from '../helpers/service';
import { API_KEY, fakeClock, startAggregator, startFaultServer, testCa, until, type AggregatorHarness, type Fault, type FaultServer } from '../helpers/usage';

const DAY = 24 * 3600 * 1000;
let agg: AggregatorHarness;
let fault: FaultServer;
let ca: string;

beforeAll(async () => {
  ca = (await testCa()).ca;
  agg = await startAggregator({ rateLimitPerHour: 3 });
  fault = await startFaultServer(agg.base);
});
afterAll(async () => {
  await fault.close();
  await agg.close();
});

function start(env: Record<string, string> = {}) {
  return startService({
    usageStats: { ca, deploymentMode: 'standalone' },
    heartbeatMs: 20 * DAY,
    env: { USAGE_STATS_ENDPOINT: `${fault.url}/submit`, USAGE_STATS_API_KEY: API_KEY, USAGE_STATS_TIMEOUT: '5', USAGE_STATS_RETRY_COUNT: '3', TIMEZONE: 'America/Chicago', ...env },
  });
}

/** What the aggregation service holds of one installation. */
async function stored(installationId: string) {
  const exported = (await agg.call('GET', '/stats/export')).body;
  return exported.submissions.filter((s: { installation_id: string }) => s.installation_id === installationId) as Record<string, unknown>[];
}

/** Event types with counts not yet submitted (uptime keeps running and is left out). */
const unsent = (local: { event_totals: Record<string, { pending: number }> }) =>
  Object.entries(local.event_totals)
    .filter(([type, t]) => type !== 'uptime_seconds' && t.pending > 0)
    .map(([type]) => type);

const retryLogs = (h: Harness) => h.logs.filter((l) => l.msg === 'usage statistics submission attempt failed; retrying');

describe('client -> aggregation service over TLS', () => {
  let h: Harness;
  beforeEach(() => {
    fault.script([], 'forward');
    fault.attempts.length = 0;
  });
  afterEach(async () => {
    jest.useRealTimers();
    await h?.close();
  });

  test('opt-in and a manual submission: the aggregator stores it, the client marks its events submitted', async () => {
    h = await start();
    const { installation_id } = (await h.post('/api/v1/usage-stats/opt-in')).body;
    await h.post('/api/v1/printers', { id: 'b1', name: 'Bench', type: 'bambu_lab', ip_address: '192.168.7.7', access_code: '12345678', serial_number: '00M09A000000777' });
    await h.post('/api/v1/jobs', { printer_id: 'b1', job_name: 'Bracket' });
    const res = await h.post('/api/v1/usage-stats/submit');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'submitted', installation_id, attempts: 1 });
    const rows = await stored(installation_id);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      installation_id,
      submitted_at: res.body.submitted_at,
      country_code: 'US',
      deployment_mode: 'standalone',
      printer_count: 1,
      printer_type_counts: { bambu_lab: 1 },
      total_jobs_created: 1,
      app_version: h.service.context.version,
    });
    const local = (await h.get('/api/v1/usage-stats/local')).body;
    expect(local).toMatchObject({ last_submission_at: res.body.submitted_at, submission_count: 1 });
    expect(unsent(local)).toEqual([]);
    expect(local.event_totals.job_created).toEqual({ pending: 0, total: 1 });
  });

  test('the scheduler submits 5 minutes after start', async () => {
    fakeClock(Date.parse('2026-04-01T06:00:00.000Z'));
    h = await start();
    const { installation_id } = (await h.post('/api/v1/usage-stats/opt-in')).body;
    await jest.advanceTimersByTimeAsync(5 * 60_000);
    await until(() => h.logs.some((l) => l.msg === 'usage statistics submitted'), 'the scheduled submission');
    const rows = await stored(installation_id);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ submitted_at: '2026-04-01T06:05:00.000Z', period_start: '2026-04-01T06:00:00.000Z', period_end: '2026-04-01T06:05:00.000Z' });
  });

  test.each<[string, Fault]>([
    ['a network error', 'reset'],
    ['a timeout', 'stall'],
    ['HTTP 429', { status: 429, body: { error: { code: 'RATE_LIMIT_EXCEEDED', message: 'slow down' } } }],
    ['HTTP 500', { status: 500 }],
  ])('%s is retried after 2 s and the retry gets through', async (_label, injected) => {
    fakeClock(Date.parse('2026-04-02T06:00:00.000Z'));
    h = await start();
    const { installation_id } = (await h.post('/api/v1/usage-stats/opt-in')).body;
    fault.script([injected], 'forward');
    const pending = h.post('/api/v1/usage-stats/submit');
    await until(() => fault.attempts.length === 1, 'the first attempt');
    // The stalled attempt ends at the usage_stats_timeout (5 s).
    if (injected === 'stall') await jest.advanceTimersByTimeAsync(5000);
    await until(() => retryLogs(h).length === 1, 'the retry log');
    expect(retryLogs(h)[0]).toMatchObject({ attempt: 1, attempts: 4, retry_in_ms: 2000 });
    await jest.advanceTimersByTimeAsync(1999);
    expect(fault.attempts).toHaveLength(1);
    await jest.advanceTimersByTimeAsync(1);
    const res = await pending;
    expect(res.status).toBe(200);
    expect(res.body.attempts).toBe(2);
    expect(fault.attempts[1].at - fault.attempts[0].at).toBe(injected === 'stall' ? 7000 : 2000);
    // The same payload both times; stored once.
    expect(fault.attempts[1].body).toEqual(fault.attempts[0].body);
    expect(await stored(installation_id)).toHaveLength(1);
  });

  test('backs off 2 s, 4 s and 8 s, then gives up after usage_stats_retry_count retries; nothing is marked submitted', async () => {
    fakeClock(Date.parse('2026-04-03T06:00:00.000Z'));
    h = await start();
    const { installation_id } = (await h.post('/api/v1/usage-stats/opt-in')).body;
    await h.post('/api/v1/printers', { id: 'p1', name: 'P', type: 'prusa_core', ip_address: '10.0.0.9', access_code: 'pw' });
    await h.post('/api/v1/jobs', { printer_id: 'p1', job_name: 'Clip' });
    fault.script([], { status: 500 });
    const pending = h.post('/api/v1/usage-stats/submit');
    for (const [k, wait] of [[1, 2000], [2, 4000], [3, 8000]]) {
      await until(() => retryLogs(h).length === k, `retry log ${k}`);
      expect(retryLogs(h)[k - 1]).toMatchObject({ attempt: k, status: 500, retry_in_ms: wait });
      await jest.advanceTimersByTimeAsync(wait);
    }
    const res = await pending;
    expect(res.status).toBe(502);
    expect(res.body.error).toMatchObject({ code: 'USAGE_SUBMISSION_FAILED', details: { attempts: 4, status: 500, retryable: true } });
    const at = fault.attempts.map((x) => x.at);
    expect(at.slice(1).map((t, i) => t - at[i])).toEqual([2000, 4000, 8000]);
    expect(await stored(installation_id)).toEqual([]);
    const local = (await h.get('/api/v1/usage-stats/local')).body;
    expect(local).toMatchObject({ last_submission_at: null, last_error: expect.stringMatching(/HTTP 500/) });
    expect(unsent(local)).toContain('job_created');
    // Once the aggregation service is back, the same counters go through.
    fault.script([], 'forward');
    const ok = await h.post('/api/v1/usage-stats/submit');
    expect(ok.status).toBe(200);
    expect(await stored(installation_id)).toHaveLength(1);
    expect(unsent((await h.get('/api/v1/usage-stats/local')).body)).toEqual([]);
  });

  test('a rejected API key (401) is not retried', async () => {
    h = await start({ USAGE_STATS_API_KEY: 'not-the-key' });
    const { installation_id } = (await h.post('/api/v1/usage-stats/opt-in')).body;
    const res = await h.post('/api/v1/usage-stats/submit');
    expect(res.status).toBe(502);
    expect(res.body.error).toMatchObject({ code: 'USAGE_SUBMISSION_FAILED', details: { attempts: 1, status: 401, retryable: false } });
    expect(res.body.error.message).toMatch(/HTTP 401 \(client error: the API key was refused\)/);
    expect(fault.attempts).toHaveLength(1);
    expect(retryLogs(h)).toEqual([]);
    expect(await stored(installation_id)).toEqual([]);
  });

  test("the aggregator's per-installation rate limit answers 429, which the client reports", async () => {
    h = await start({ USAGE_STATS_RETRY_COUNT: '0' });
    const { installation_id } = (await h.post('/api/v1/usage-stats/opt-in')).body;
    for (let i = 0; i < 3; i++) expect((await h.post('/api/v1/usage-stats/submit')).status).toBe(200);
    const limited = await h.post('/api/v1/usage-stats/submit');
    expect(limited.status).toBe(502);
    expect(limited.body.error).toMatchObject({ details: { attempts: 1, status: 429, retryable: true } });
    expect(limited.body.error.message).toMatch(/HTTP 429 \(client error: rate limited\)/);
    expect(await stored(installation_id)).toHaveLength(3);
    expect(await agg.agg.repo.rateLimit(installation_id)).toMatchObject({ installation_id, submission_count: 3 });
  });

  test('delete-all with include_remote removes the installation from the aggregator too', async () => {
    h = await start();
    const { installation_id } = (await h.post('/api/v1/usage-stats/opt-in')).body;
    expect((await h.post('/api/v1/usage-stats/submit')).status).toBe(200);
    expect(await stored(installation_id)).toHaveLength(1);
    const res = await h.del('/api/v1/usage-stats/delete-all?include_remote=true');
    expect(res.status).toBe(200);
    expect(res.body.remote).toEqual({ requested: true, deleted: true, status: 200, error: null });
    expect(res.body.installation_id).not.toBe(installation_id);
    expect(await stored(installation_id)).toEqual([]);
    expect(await agg.agg.repo.rateLimit(installation_id)).toBeUndefined();
    expect((await h.get('/api/v1/usage-stats/export')).body.events).toEqual([]);
    // The new id never submitted: the aggregator knows nothing of it (404), which counts as deleted.
    await h.post('/api/v1/usage-stats/opt-out');
    const again = await h.del('/api/v1/usage-stats/delete-all?include_remote=true');
    expect(again.body.remote).toEqual({ requested: true, deleted: true, status: 404, error: null });
    // Opted out and deleted: no id left, nothing to ask for.
    const third = await h.del('/api/v1/usage-stats/delete-all?include_remote=true');
    expect(third.body).toMatchObject({ installation_id: null, remote: { requested: false, deleted: false, status: null } });
  });
});
