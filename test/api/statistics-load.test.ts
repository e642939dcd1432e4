/**
 * Statistics over a large farm run on their own connection in a worker thread:
 * while a year's overview is computed, the service goes on answering.
 */
import path from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { addJobs, seedFleet } from '../../bench/stats';
import { DB_FILENAME } from '../../service/db';
import { startService, type Harness } from '../helpers/service';

describe('statistics under a large history', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startService();
    // Seeded straight into the file (as bench/stats.ts does): 150,000 jobs over two years.
    const raw = new BetterSqlite3(path.join(h.dataDir, DB_FILENAME));
    try {
      seedFleet(raw);
      addJobs(raw, 150_000, 1);
    } finally {
      raw.close();
    }
  }, 60_000);
  afterAll(() => h.close());

  test('requests made while a year overview runs are answered before it (the event loop is not held)', async () => {
    let done = false;
    const overview = h.get('/api/v1/statistics/overview?period=year').then((res) => {
      done = true;
      return res;
    });
    // Sent after the overview, one after another, until it is answered: were the
    // overview computed on the event loop, not one of them could come back first.
    let answeredBefore = 0;
    for (let i = 0; i < 5000 && !done; i++) {
      expect((await h.get('/api/v1/health')).status).toBe(200);
      if (!done) answeredBefore++;
    }
    const res = await overview;
    expect(res.status).toBe(200);
    expect(res.body.jobs.total_jobs).toBeGreaterThan(50_000);
    expect(answeredBefore).toBeGreaterThanOrEqual(1);
  }, 60_000);

  test('a query on a closed store fails as a database error, not a hang', async () => {
    const { store } = h.service.context;
    const other = await startService();
    await other.service.context.store.close();
    await expect(other.service.context.store.statistics.overview({ from: '2026-01-01T00:00:00Z', to: '2026-02-01T00:00:00Z', now: new Date().toISOString() })).rejects.toMatchObject({
      name: 'SqliteError',
    });
    await other.close().catch(() => undefined);
    expect(await store.ping()).toBe(true);
  });
});
