/**
 * The queries behind the job list, its summary and the printer detail must
 * stay index lookups: a farm's history reaches 10^6 jobs, and a query that
 * scans or sorts all of them holds the event loop for seconds (GET /jobs took
 * 2.5 s at 10^6 jobs before migration 008; at 10^7 even an index-only count
 * of every job is too slow, hence the tallies of migration 016). This reads the database's own
 * query plans of the statements the repository runs, so it holds without
 * timing: SQLite's EXPLAIN QUERY PLAN, and PostgreSQL's EXPLAIN with
 * sequential scans and sorts priced out of reach (on an empty table the
 * planner would rightly prefer them; what matters is that an index CAN serve
 * the statement, and then the plan has neither).
 */
import { dialectStore, plansOf, statementsOf } from '../helpers/dialect-store';
import { describeDialects } from '../helpers/dialects';

interface Planned {
  sql: string;
  plan: string[];
}

/**
 * SQLite: no sort of jobs, ever. A walk over all of jobs only where it stops early or stays in an index: a
 * page read in index order (LIMIT), or a bare count(*) over the smallest covering index.
 */
function expectSqliteIndexed(planned: Planned[]) {
  for (const { sql, plan } of planned) {
    const text = plan.join(' ; ');
    const walks = plan.filter((step) => /^SCAN jobs\b/.test(step));
    const allowed = (step: string) =>
      (/\blimit\b/i.test(sql) && /^SCAN jobs USING INDEX /.test(step)) || (/^select count\(\*\) as "\w+" from "jobs"/.test(sql) && /COVERING INDEX/.test(step));
    expect([text, walks.filter((step) => !allowed(step))]).toEqual([text, []]);
    expect([text, plan.some((step) => /USE TEMP B-TREE FOR ORDER BY/.test(step))]).toEqual([text, false]);
  }
}

/** PostgreSQL: jobs read through an index (no Seq Scan of jobs), and no Sort node (an index gives the order). */
function expectPostgresIndexed(planned: Planned[]) {
  for (const { plan } of planned) {
    const text = plan.join(' ; ');
    expect([text, plan.filter((step) => /Seq Scan on jobs\b/.test(step))]).toEqual([text, []]);
    expect([text, plan.filter((step) => /^(->\s+)?(Incremental )?Sort\s+\(/.test(step))]).toEqual([text, []]);
  }
}

describeDialects('job queries use indexes, not scans or sorts of the history', (db) => {
  const store = dialectStore(db, { per: 'block' });

  async function expectIndexed(run: () => Promise<unknown>): Promise<Planned[]> {
    const planned = await plansOf(store, await statementsOf(store, run));
    expect(planned.length).toBeGreaterThan(0);
    if (db.name === 'sqlite') expectSqliteIndexed(planned);
    else expectPostgresIndexed(planned);
    return planned;
  }

  const page = { page: 1, limit: 50, order_by: 'created_at', order_dir: 'desc' } as const;

  test.each([
    ['the default page (newest first)', {}],
    ['a page of one status', { statuses: ['completed'] }],
    ['a page of one printer', { printer_id: 'x1c-01' }],
    ['a page by start time, newest first', { order_by: 'start_time' as const }],
    // Migration 019: sorted every match before (all of a status, a printer's history, all jobs).
    ['a page of one status by start time, newest first', { statuses: ['completed'], order_by: 'start_time' as const }],
    ['a page of one printer by start time, newest first', { printer_id: 'x1c-01', order_by: 'start_time' as const }],
    ['a page by start time, oldest first', { order_by: 'start_time' as const, order_dir: 'asc' as const }],
    ['a page by duration, longest first', { order_by: 'duration' as const }],
    ['a page by duration, shortest first', { order_by: 'duration' as const, order_dir: 'asc' as const }],
    // Migration 023 and the SQLite hints of jobs.ts: sorted a printer's history, all completed jobs, or a printer's jobs since the date.
    ['a page of one printer by duration, longest first', { printer_id: 'x1c-01', order_by: 'duration' as const }],
    ['a page of completed jobs by duration, longest first', { statuses: ['completed'], order_by: 'duration' as const }],
    ['a page of one printer\'s completed jobs by duration, longest first', { printer_id: 'x1c-01', statuses: ['completed'], order_by: 'duration' as const }],
    ['a page of one printer since a date, newest first', { printer_id: 'x1c-01', from: '2026-01-01T00:00:00.000Z' }],
  ])('GET /jobs: %s', async (_what, filter) => {
    await expectIndexed(() => store.jobs.list({ ...page, ...filter }));
  });

  test('GET /jobs: a page of one printer and one status finds its jobs by both, not by walking the printer\'s history', async () => {
    const planned = await expectIndexed(() => store.jobs.list({ ...page, printer_id: 'x1c-01', statuses: ['queued'] }));
    const pages = planned.filter((p) => /^select "jobs"\.\*/.test(p.sql));
    expect(pages).toHaveLength(1);
    const text = pages[0].plan.join(' ; ');
    // Migration 022: both are index conditions (no status filter over the printer's jobs).
    if (db.name === 'sqlite') expect(text).toMatch(/SEARCH jobs USING INDEX \w+ \(printer_id=\? AND status=\?\)/);
    else expect([text, /Index Cond: \(\(printer_id = .*\) AND \(status = .*\)\)/.test(text), pages[0].plan.some((step) => /^Filter: .*status/.test(step))]).toEqual([text, true, false]);
  });

  test('the total of a page filtered by printer, status and business alone is a sum of tallies, not a count of jobs', async () => {
    for (const filter of [{}, { statuses: ['completed'] }, { printer_id: 'x1c-01', is_business: true }]) {
      const planned = await expectIndexed(() => store.jobs.list({ ...page, ...filter }));
      expect(planned.filter((p) => /count\(\*\)/i.test(p.sql)).map((p) => p.sql)).toEqual([]);
      expect(planned.some((p) => /from "job_tallies"/.test(p.sql))).toBe(true);
    }
  });

  test('the job list summary, for the farm and for one printer', async () => {
    await expectIndexed(() => store.jobs.summary(undefined, '2026-11-22T00:00:00.000Z'));
    await expectIndexed(() => store.jobs.summary('x1c-01', '2026-11-22T00:00:00.000Z'));
  });

  test('the printer detail: its totals and its running job', async () => {
    const totals = await expectIndexed(() => store.jobs.printerTotals('x1c-01'));
    // The totals are the printer's few tally rows (migration 016), found by their key: the jobs are not read.
    for (const { sql, plan } of totals) {
      expect(sql).toMatch(/from "job_tallies"/);
      expect(plan.join(' ; ')).toMatch(db.name === 'sqlite' ? /SEARCH job_tallies USING (PRIMARY KEY|INDEX \w+) \(printer_id=\?\)/ : /Index (Only )?Scan on job_tallies_pkey|Index (Only )?Scan using job_tallies_pkey/);
    }
    await expectIndexed(() => store.jobs.activeByPrinter(['x1c-01']));
    await expectIndexed(() => store.jobs.activeTrackedForPrinter('x1c-01'));
  });
});
