/**
 * The queries behind the job list, its summary and the printer detail must
 * stay index lookups: a farm's history reaches 10^6 jobs, and a query that
 * scans or sorts all of them holds the event loop for seconds (GET /jobs took
 * 2.5 s at 10^6 jobs before migration 008). This reads SQLite's own query
 * plans of the statements the repository runs, so it holds without timing.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openStore, type Store } from '../../service/db';

describe('job queries use indexes, not scans or sorts of the history', () => {
  let dir: string;
  let store: Store;
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'printfarm-plans-'));
    store = await openStore(dir);
  });
  afterAll(async () => {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  interface Planned {
    sql: string;
    plan: string[];
  }

  /** The plan of every statement `run` sends to SQLite, one line per step. */
  async function plansOf(run: () => Promise<unknown>): Promise<Planned[]> {
    const { sqlite } = store.connection;
    const seen: string[] = [];
    const prepare = sqlite.prepare.bind(sqlite);
    const spy = jest.spyOn(sqlite, 'prepare').mockImplementation((source: string) => {
      seen.push(source);
      return prepare(source);
    });
    try {
      await run();
    } finally {
      spy.mockRestore();
    }
    expect(seen.length).toBeGreaterThan(0);
    return seen.map((source) => {
      const params = (source.match(/\?/g) ?? []).map(() => 'x');
      return { sql: source, plan: (sqlite.prepare(`EXPLAIN QUERY PLAN ${source}`).all(...params) as { detail: string }[]).map((r) => r.detail) };
    });
  }

  /**
   * No sort of jobs, ever. A walk over all of jobs only where it stops early or stays in an index: a page
   * read in index order (LIMIT), or a bare count(*) over the smallest covering index.
   */
  function expectIndexed(planned: Planned[]) {
    for (const { sql, plan } of planned) {
      const text = plan.join(' ; ');
      const walks = plan.filter((step) => /^SCAN jobs\b/.test(step));
      const allowed = (step: string) =>
        (/\blimit\b/i.test(sql) && /^SCAN jobs USING INDEX /.test(step)) || (/^select count\(\*\) as "\w+" from "jobs"/.test(sql) && /COVERING INDEX/.test(step));
      expect([text, walks.filter((step) => !allowed(step))]).toEqual([text, []]);
      expect([text, plan.some((step) => /USE TEMP B-TREE FOR ORDER BY/.test(step))]).toEqual([text, false]);
    }
  }

  const page = { page: 1, limit: 50, order_by: 'created_at', order_dir: 'desc' } as const;

  test.each([
    ['the default page (newest first)', {}],
    ['a page of one status', { statuses: ['completed'] }],
    ['a page of one printer', { printer_id: 'x1c-01' }],
    ['a page by start time, newest first', { order_by: 'start_time' as const }],
  ])('GET /jobs: %s', async (_what, filter) => {
    expectIndexed(await plansOf(() => store.jobs.list({ ...page, ...filter })));
  });

  test('the job list summary, for the farm and for one printer', async () => {
    expectIndexed(await plansOf(() => store.jobs.summary(undefined, '2026-11-22T00:00:00.000Z')));
    expectIndexed(await plansOf(() => store.jobs.summary('x1c-01', '2026-11-22T00:00:00.000Z')));
  });

  test('the printer detail: its totals and its running job', async () => {
    const totals = await plansOf(() => store.jobs.printerTotals('x1c-01'));
    expectIndexed(totals);
    expect(totals.flatMap((t) => t.plan).join(' ; ')).toMatch(/COVERING INDEX jobs_printer_totals/);
    expectIndexed(await plansOf(() => store.jobs.activeByPrinter(['x1c-01'])));
    expectIndexed(await plansOf(() => store.jobs.activeTrackedForPrinter('x1c-01')));
  });
});
