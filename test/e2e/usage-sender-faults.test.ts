/**
 * The farm-side sender when things go wrong around a submission: an opt-out while it still retries, and
 * answers that are lost (the aggregation service stored the submission, the farm never heard so). Over
 * real TLS to the aggregation service through the fault-injecting endpoint; backoff on fake timers.
 */
import { startService, type Harness } from '../helpers/service';
import { API_KEY, fakeClock, startAggregator, startFaultServer, testCa, until, type AggregatorHarness, type FaultServer } from '../helpers/usage';

const DAY = 24 * 3600 * 1000;
let agg: AggregatorHarness;
let fault: FaultServer;
let ca: string;

beforeAll(async () => {
  ca = (await testCa()).ca;
  agg = await startAggregator();
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
    env: { USAGE_STATS_ENDPOINT: `${fault.url}/submit`, USAGE_STATS_API_KEY: API_KEY, USAGE_STATS_TIMEOUT: '5', USAGE_STATS_RETRY_COUNT: '3', ...env },
  });
}

const retryLogs = (h: Harness) => h.logs.filter((l) => l.msg === 'usage statistics submission attempt failed; retrying');

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

/** Lets the retry waits of 2, 4 and 8 s pass, one after the other. */
async function runOutRetries(h: Harness) {
  for (const [k, wait] of [[1, 2000], [2, 4000], [3, 8000]]) {
    await until(() => retryLogs(h).length === k, `retry log ${k}`);
    await jest.advanceTimersByTimeAsync(wait);
  }
}

describe('the usage-statistics sender', () => {
  let h: Harness;
  beforeEach(() => {
    fault.script([], 'forward');
    fault.attempts.length = 0;
  });
  afterEach(async () => {
    jest.useRealTimers();
    await h?.close();
  });

  test('opting out while a submission waits to retry ends it at once: no further attempt is sent', async () => {
    fakeClock(Date.parse('2026-05-01T06:00:00.000Z'));
    h = await start();
    await h.post('/api/v1/usage-stats/opt-in');
    fault.script([], { status: 500 });
    const pending = h.post('/api/v1/usage-stats/submit');
    await until(() => retryLogs(h).length === 1, 'the first retry wait');
    const out = await h.post('/api/v1/usage-stats/opt-out');
    expect(out.status).toBe(200);
    const res = await pending;
    expect(res.status).toBe(502);
    expect(res.body.error.message).toMatch(/aborted \(opted out\)/);
    // The waits of 2, 4 and 8 s pass: nothing more goes out.
    await jest.advanceTimersByTimeAsync(60_000);
    expect(fault.attempts).toHaveLength(1);
  });

  test('opting out while a submission is still being built stops it before it is sent', async () => {
    h = await start();
    await h.post('/api/v1/usage-stats/opt-in');
    const { usage, store } = h.service.context;
    const pendingRows = store.usage.pending.bind(store.usage);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const spy = jest.spyOn(store.usage, 'pending').mockImplementationOnce(async () => {
      await gate;
      return pendingRows();
    });
    const submitted = h.post('/api/v1/usage-stats/submit');
    await until(() => spy.mock.calls.length === 1, 'the payload being built');
    const out = h.post('/api/v1/usage-stats/opt-out');
    await until(() => !usage.optedIn, 'the opt-out');
    release();
    expect((await out).status).toBe(200);
    expect((await submitted).body.error.message).toMatch(/aborted \(opted out\)/);
    expect(fault.attempts).toHaveLength(0);
    spy.mockRestore();
  });

  test('delete-all while a submission waits to retry ends it at once instead of waiting out its retries', async () => {
    fakeClock(Date.parse('2026-05-01T08:00:00.000Z'));
    h = await start();
    await h.post('/api/v1/usage-stats/opt-in');
    fault.script([], { status: 500 });
    const pending = h.post('/api/v1/usage-stats/submit');
    await until(() => retryLogs(h).length === 1, 'the first retry wait');
    const deleted = await h.del('/api/v1/usage-stats/delete-all');
    expect(deleted.status).toBe(200);
    expect((await pending).body.error.message).toMatch(/aborted \(local data deleted\)/);
    await jest.advanceTimersByTimeAsync(60_000);
    expect(fault.attempts).toHaveLength(1);
  });

  test('a submission stored by the aggregation service whose answers were all lost is sent again unchanged: its period is counted once', async () => {
    fakeClock(Date.parse('2026-05-02T06:00:00.000Z'));
    h = await start();
    const { installation_id } = (await h.post('/api/v1/usage-stats/opt-in')).body;
    await h.post('/api/v1/printers', { id: 'p1', name: 'P', type: 'prusa_core', ip_address: '10.0.0.9', access_code: 'pw' });
    await h.post('/api/v1/jobs', { printer_id: 'p1', job_name: 'Clip' });
    fault.script([], 'lost');
    const pending = h.post('/api/v1/usage-stats/submit');
    await runOutRetries(h);
    expect((await pending).status).toBe(502);
    // The first attempt was stored, the retries were its duplicates; the farm heard nothing.
    expect(await stored(installation_id)).toHaveLength(1);
    expect(unsent((await h.get('/api/v1/usage-stats/local')).body)).toContain('job_created');

    fault.script([], 'forward');
    await jest.advanceTimersByTimeAsync(3600_000);
    const ok = await h.post('/api/v1/usage-stats/submit');
    expect(ok.status).toBe(200);
    expect(fault.attempts.at(-1)!.body).toEqual(fault.attempts[0].body);
    const rows = await stored(installation_id);
    expect(rows).toHaveLength(1);
    expect(rows[0].total_jobs_created).toBe(1);
    expect(unsent((await h.get('/api/v1/usage-stats/local')).body)).toEqual([]);
  });

  test('a restart between sending and hearing back sends the same submission again, not a second one', async () => {
    fakeClock(Date.parse('2026-05-03T06:00:00.000Z'));
    h = await start();
    const { installation_id } = (await h.post('/api/v1/usage-stats/opt-in')).body;
    await h.post('/api/v1/printers', { id: 'p1', name: 'P', type: 'prusa_core', ip_address: '10.0.0.9', access_code: 'pw' });
    await h.post('/api/v1/jobs', { printer_id: 'p1', job_name: 'Clip' });
    fault.script(['lost'], { status: 503 });
    const pending = h.post('/api/v1/usage-stats/submit');
    await until(() => retryLogs(h).length === 1, 'the first retry wait');
    h = await h.restart();
    expect((await pending).status).toBe(502);
    expect(await stored(installation_id)).toHaveLength(1);

    fault.script([], 'forward');
    const ok = await h.post('/api/v1/usage-stats/submit');
    expect(ok.status).toBe(200);
    expect(ok.body.submitted_at).toBe(fault.attempts[0].body.submitted_at);
    const rows = await stored(installation_id);
    expect(rows).toHaveLength(1);
    expect(rows[0].total_jobs_created).toBe(1);
    // The second start's app_start came after the submission was built: it waits for the next one.
    expect(unsent((await h.get('/api/v1/usage-stats/local')).body)).toEqual(['app_start']);
  });

  test('a submission the aggregation service refuses (422) is not sent again: the next one is built afresh from the open counters', async () => {
    fakeClock(Date.parse('2026-05-04T06:00:00.000Z'));
    h = await start();
    const { installation_id } = (await h.post('/api/v1/usage-stats/opt-in')).body;
    fault.script([{ status: 422 }], 'forward');
    expect((await h.post('/api/v1/usage-stats/submit')).status).toBe(502);
    await jest.advanceTimersByTimeAsync(60_000);
    const ok = await h.post('/api/v1/usage-stats/submit');
    expect(ok.status).toBe(200);
    expect(ok.body.submitted_at).not.toBe(fault.attempts[0].body.submitted_at);
    expect(await stored(installation_id)).toHaveLength(1);
  });
});
