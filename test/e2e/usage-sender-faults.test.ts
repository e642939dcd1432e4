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
});
