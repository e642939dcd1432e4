/**
 * Every combination of GET /jobs's filters (printer, status, business, start/end date) and orders, planned by
 * each database over a few thousand jobs: SQLite as the service runs it (no statistics: it never runs ANALYZE)
 * and after ANALYZE; PostgreSQL after ANALYZE with its real costs, and with scans and sorts priced out (can an
 * index serve it?). The combinations an operator uses (a status, a printer, a start date, newest first or
 * longest first) must read their page off an index and stop after `limit` rows; the others are listed with
 * PRINT_PLANS=1 (see docs/scaling.md for what still sorts and why).
 */
import fs from 'node:fs';
import { sql } from 'kysely';
import type { Store } from '../../service/db';
import type { JobQuery } from '../../service/db/repositories/jobs';
import { dialectStore, plansOf, statementsOf } from '../helpers/dialect-store';
import { describeDialects } from '../helpers/dialects';

const JOBS = 4000;
const PRINTERS = 8;

/** Two hours apart over about a year, 8 printers in turn; 7 in 10 completed, then failed, cancelled, queued; the last 10 printing. */
async function seed(store: Store) {
  const kinds = ['completed', 'completed', 'completed', 'completed', 'completed', 'completed', 'completed', 'failed', 'cancelled', 'queued'];
  const t0 = Date.parse('2025-11-01T00:00:00Z');
  const at = (i: number, plus: number) => new Date(t0 + i * 2 * 3600_000 + plus).toISOString();
  const rows = Array.from({ length: JOBS }, (_, i) => {
    const status = i >= JOBS - 10 ? 'printing' : kinds[i % kinds.length];
    const ended = status !== 'queued' && status !== 'printing';
    return {
      printer_id: `p${i % PRINTERS}`,
      printer_name: `P${i % PRINTERS}`,
      job_name: `job ${i}`,
      status,
      progress: ended ? 100 : 0,
      start_time: status === 'queued' ? null : at(i, 60_000),
      end_time: ended ? at(i, 3600_000) : null,
      estimated_duration: i % 5 === 0 ? null : 3000 + (i % 97) * 10,
      actual_duration: ended ? 3000 + (i % 89) * 10 : null,
      is_business: i % 3 === 0 ? 1 : 0,
      created_at: at(i, 0),
      updated_at: at(i, 0),
    };
  });
  for (let i = 0; i < rows.length; i += 200) await store.connection.db.insertInto('jobs').values(rows.slice(i, i + 200)).execute();
}

type Filter = Omit<JobQuery, 'page' | 'limit'>;

const FROM = '2026-01-01T00:00:00.000Z';
const TO = '2026-01-31T23:59:59.999Z';

/** Every combination of the spec's filters and orders. */
function combinations(): Filter[] {
  const out: Filter[] = [];
  for (const printer_id of [undefined, 'p1'])
    for (const statuses of [undefined, ['completed'], ['failed'], ['queued'], ['printing']])
      for (const is_business of [undefined, true])
        for (const dates of [{}, { from: FROM }, { to: TO }, { from: FROM, to: TO }])
          for (const order_by of ['created_at', 'start_time', 'duration'] as const)
            for (const order_dir of ['desc', 'asc'] as const) out.push({ printer_id, statuses, is_business, ...dates, order_by, order_dir });
  return out;
}

/**
 * The ones an operator uses: one status and/or one printer, newest first (the default) since a date or not,
 * or longest first. (Longest first since a date sorts the range on SQLite: bounded by the range asked for,
 * where a walk in duration order would read the whole history for a recent date's few jobs.)
 */
function operatorUses(f: Filter): boolean {
  if (f.is_business !== undefined || f.to !== undefined || f.order_dir !== 'desc') return false;
  return f.order_by === 'created_at' || (f.order_by === 'duration' && f.from === undefined);
}

const ACTIVE = ['queued', 'printing'];

function describeFilter(f: Filter): string {
  const parts = [f.printer_id && 'printer', f.statuses?.join(), f.is_business && 'business', f.from && 'from', f.to && 'to', `${f.order_by} ${f.order_dir}`];
  return parts.filter(Boolean).join(' ');
}

/** A step that reads all of jobs, or sorts what it read. */
function whyNotIndexed(dialect: string, plan: string[]): string[] {
  if (dialect === 'sqlite') return plan.filter((s) => /^SCAN jobs$/.test(s) || /USE TEMP B-TREE FOR ORDER BY/.test(s));
  return plan.filter((s) => /Seq Scan on jobs\b/.test(s) || /^(->\s+)?(Incremental )?Sort\s+\(/.test(s));
}

/** PostgreSQL's plan at its real costs (plansOf prices scans and sorts out of reach). */
async function costedPlans(store: Store, statements: { sql: string; parameters: readonly unknown[] }[]) {
  const c = store.connection;
  if (c.dialect === 'sqlite') return plansOf(store, statements);
  const out = [];
  for (const { sql: text, parameters } of statements) {
    const { rows } = await c.pool.query(`EXPLAIN ${text}`, parameters as unknown[]);
    out.push({ sql: text, plan: rows.map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN'].trim()) });
  }
  return out;
}

describeDialects('GET /jobs: every filter and order, planned over a few thousand jobs', (db) => {
  const store = dialectStore(db, { per: 'block', seed });

  /** The page statement's plan and the count's (when the total is counted) of each combination. */
  async function planAll(planner: typeof costedPlans) {
    const out: { filter: Filter; page: string[]; count?: string[] }[] = [];
    for (const filter of combinations()) {
      const planned = await planner(store, await statementsOf(store, () => store.jobs.list({ ...filter, page: 1, limit: 50 })));
      const page = planned.find((p) => /^select "jobs"\.\*/.test(p.sql));
      const count = planned.find((p) => /^select count\(\*\)/.test(p.sql));
      out.push({ filter, page: page!.plan, count: count?.plan });
    }
    if (process.env.PRINT_PLANS) {
      const lines = out.filter((p) => whyNotIndexed(db.name, [...p.page, ...(p.count ?? [])]).length).map((p) => `${describeFilter(p.filter).padEnd(48)} ${p.page.join(' ; ')}`);
      fs.writeSync(2, `\n${db.name}: ${lines.length} of ${out.length} still scan or sort\n${lines.join('\n')}\n`);
    }
    return out;
  }

  function expectOperatorUsesIndexed(planned: Awaited<ReturnType<typeof planAll>>) {
    const used = planned.filter((p) => operatorUses(p.filter));
    expect(used.length).toBe(30);
    for (const { filter, page, count } of used) {
      const text = `${describeFilter(filter)}: ${page.join(' ; ')}`;
      expect([text, whyNotIndexed(db.name, count ?? [])]).toEqual([text, []]);
      // A printer's or the farm's few queued or running jobs by duration are found by their status and sorted (bounded by the farm).
      const fewSorted = filter.order_by === 'duration' && filter.statuses?.every((s) => ACTIVE.includes(s));
      if (fewSorted && db.name === 'sqlite') expect(text).toMatch(/SEARCH jobs USING INDEX \w+ \((printer_id=\? AND )?status=\?\)/);
      else expect([text, whyNotIndexed(db.name, page)]).toEqual([text, []]);
    }
  }

  test('every combination answers the jobs a sort of all of them gives, pages 1 and 3 (the plans change, not the answers)', async () => {
    const all = await store.connection.db.selectFrom('jobs').selectAll().execute();
    const keyOf = (f: Filter, j: (typeof all)[number]) =>
      f.order_by === 'duration' ? (j.actual_duration ?? j.estimated_duration) : f.order_by === 'start_time' ? j.start_time : j.created_at;
    for (const filter of combinations()) {
      const period = (j: (typeof all)[number]) => j.start_time ?? j.created_at;
      const matches = all.filter(
        (j) =>
          (filter.printer_id === undefined || j.printer_id === filter.printer_id) &&
          (filter.statuses === undefined || filter.statuses.includes(j.status)) &&
          (filter.is_business === undefined || j.is_business === (filter.is_business ? 1 : 0)) &&
          (filter.from === undefined || period(j) >= filter.from) &&
          (filter.to === undefined || period(j) <= filter.to),
      );
      const sign = filter.order_dir === 'asc' ? 1 : -1;
      // Jobs without the key last in either direction, then the id in the page's direction (jobs.ts).
      matches.sort((a, b) => {
        const ka = keyOf(filter, a);
        const kb = keyOf(filter, b);
        if ((ka == null) !== (kb == null)) return ka == null ? 1 : -1;
        if (ka != null && kb != null && ka !== kb) return (ka < kb ? -1 : 1) * sign;
        return (Number(a.id) - Number(b.id)) * sign;
      });
      for (const page of [1, 3]) {
        const got = await store.jobs.list({ ...filter, page, limit: 20 });
        const want = matches.slice((page - 1) * 20, page * 20).map((j) => Number(j.id));
        expect([describeFilter(filter), page, got.jobs.map((j) => Number(j.id)), got.total]).toEqual([describeFilter(filter), page, want, matches.length]);
      }
    }
  }, 60_000);

  if (db.name === 'sqlite') {
    test('as the service runs SQLite (no statistics), the pages an operator asks for are read off an index', async () => {
      expectOperatorUsesIndexed(await planAll(plansOf));
    });
  } else {
    test('with scans and sorts priced out, the pages an operator asks for can be read off an index', async () => {
      expectOperatorUsesIndexed(await planAll(plansOf));
    });
  }

  test('after ANALYZE, at the planner\'s real costs, too; a printer\'s longest prints come off jobs_printer_duration (migration 023)', async () => {
    await sql`ANALYZE`.execute(store.connection.db);
    const planned = await planAll(costedPlans);
    expectOperatorUsesIndexed(planned);
    for (const { filter, page } of planned.filter((p) => p.filter.printer_id && p.filter.order_by === 'duration' && p.filter.order_dir === 'desc' && !p.filter.to && !p.filter.statuses)) {
      const text = `${describeFilter(filter)}: ${page.join(' ; ')}`;
      expect(text).toMatch(db.name === 'sqlite' ? /SEARCH jobs USING INDEX jobs_printer_duration \(printer_id=\?\)/ : /Index Scan using jobs_printer_duration on jobs/);
    }
  });
});
