/**
 * The usage counters while the database is slow: a burst of events must not queue one write per event
 * (each a closure held until the database catches up, without bound); they are added up in memory per
 * type and hour and written in batches, and every count arrives.
 */
import { startService, type Harness } from '../helpers/service';

let h: Harness;
afterEach(() => h?.close());

test('10 000 events while a counter write hangs become a couple of writes, and all 10 000 are counted', async () => {
  h = await startService({ env: { USAGE_STATS_ENDPOINT: 'https://127.0.0.1:9/submit' } });
  await h.post('/api/v1/usage-stats/opt-in');
  const { usage, store } = h.service.context;
  const add = store.usage.add.bind(store.usage);
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const spy = jest.spyOn(store.usage, 'add').mockImplementation(async (type, n, at) => {
    await gate;
    return add(type, n, at);
  });
  // What the collector does for each job_created event on the bus.
  for (let i = 0; i < 10_000; i++) usage.count('job_created');
  await new Promise((resolve) => setImmediate(resolve));
  release();
  const local = (await h.get('/api/v1/usage-stats/local')).body;
  expect(local.event_totals.job_created.pending).toBe(10_000);
  // The first event's write, then one for everything that came while it hung (uptime and app_start aside).
  expect(spy.mock.calls.filter(([type]) => type === 'job_created').length).toBeLessThanOrEqual(2);
  spy.mockRestore();
});
