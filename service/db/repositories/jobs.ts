import { sql, type Insertable, type Selectable, type Updateable } from 'kysely';
import type { Db } from '../connection';
import { flavourOf, readSnapshot } from '../dialect';
import type { JobsTable } from '../schema';
import { JobTalliesRepository } from './job-tallies';

type JsonObject = Record<string, unknown>;

/** A job as the domain sees it: booleans and parsed JSON instead of SQLite's integers and text. */
export interface JobRecord extends Omit<Selectable<JobsTable>, 'is_business' | 'customer_info' | 'print_settings' | 'quality_metrics'> {
  is_business: boolean;
  customer_info: JsonObject | null;
  print_settings: JsonObject | null;
  quality_metrics: JsonObject | null;
  /** The printer's current name, or the name kept on the job when the printer is gone. */
  printer_display_name: string | null;
}

export type NewJob = Partial<Omit<JobRecord, 'id' | 'printer_display_name'>> &
  Pick<JobRecord, 'printer_id' | 'job_name' | 'status' | 'created_at' | 'updated_at'>;
export type JobPatch = Partial<Omit<JobRecord, 'id' | 'printer_display_name' | 'created_at'>>;

export interface JobQuery {
  printer_id?: string;
  queue_item_id?: string;
  statuses?: readonly string[];
  is_business?: boolean;
  from?: string;
  to?: string;
  page: number;
  limit: number;
  order_by: 'created_at' | 'start_time' | 'duration';
  order_dir: 'asc' | 'desc';
}

const JSON_COLUMNS = ['customer_info', 'print_settings', 'quality_metrics'] as const;
/** Ids one `in (...)` holds (SQLite takes 32766 parameters, PostgreSQL 65535). */
const IN_BATCH = 1000;

function toRow(values: JobPatch | NewJob): Updateable<JobsTable> {
  const row: Record<string, unknown> = { ...values };
  for (const col of JSON_COLUMNS) {
    if (col in values) row[col] = values[col] == null ? null : JSON.stringify(values[col]);
  }
  if (values.is_business !== undefined) row.is_business = values.is_business ? 1 : 0;
  return row as Updateable<JobsTable>;
}

function toRecord(row: Selectable<JobsTable> & { printer_display_name: string | null }): JobRecord {
  const parse = (v: string | null) => (v == null ? null : (JSON.parse(v) as JsonObject));
  return {
    ...row,
    is_business: row.is_business === 1,
    customer_info: parse(row.customer_info),
    print_settings: parse(row.print_settings),
    quality_metrics: parse(row.quality_metrics),
  };
}

/** Newest first: by start (or creation when never started), then by id. */
function byNewest(a: { start_time: string | null; created_at: string; id: number | bigint }, b: { start_time: string | null; created_at: string; id: number | bigint }): number {
  const when = (r: typeof a) => r.start_time ?? r.created_at;
  return when(a) < when(b) ? 1 : when(a) > when(b) ? -1 : Number(b.id) - Number(a.id);
}

/** Filter terms of a page that SQLite is not to pick its index by (see sqliteHints). */
interface PlanHints {
  status: boolean;
  period: boolean;
  /** The order's key, kept from serving the order off an index (the matches are few: found and sorted). */
  key: boolean;
}
const NO_HINTS: PlanHints = { status: false, period: false, key: false };
/** The statuses a history is made of: most of the jobs (the others are the few queued and running ones). */
const HISTORY_STATUSES = new Set(['completed', 'failed', 'cancelled']);

/**
 * SQLite plans without statistics (the service never runs ANALYZE): it reads the index with the most equality
 * and range terms and sorts what it finds. Where those terms match most of a long history, that sorted every
 * match for one page; hiding them from the index choice makes it read the page in order off the order's index
 * (008, 019, 023) and stop after `limit` matches, which come densely:
 *  - by duration, of history statuses only: completed jobs are most of all (2 in 3 and more), failed and
 *    cancelled ones still one in a few dozen; the few queued or running ones stay found by status and sorted;
 *  - newest first by creation or start, since a date (no end date): the newest jobs are in the range.
 * The other way round, a printer's queued or running jobs by duration are found by (printer_id, status) and
 * sorted: read in order off jobs_printer_duration they were a walk over the printer's history.
 * PostgreSQL weighs its own statistics (kept by autovacuum) and needs none of this.
 */
function sqliteHints(q: JobQuery): PlanHints {
  return {
    status: q.order_by === 'duration' && q.statuses !== undefined && q.statuses.every((s) => HISTORY_STATUSES.has(s)),
    period: q.order_by !== 'duration' && q.order_dir === 'desc' && q.from !== undefined && q.to === undefined,
    key: q.order_by === 'duration' && q.statuses !== undefined && !q.statuses.every((s) => HISTORY_STATUSES.has(s)),
  };
}

export class JobsRepository {
  private readonly tallies: JobTalliesRepository;
  constructor(private readonly db: Db) {
    this.tallies = new JobTalliesRepository(db);
  }

  private select() {
    return this.db
      .selectFrom('jobs')
      .leftJoin('printers', 'printers.id', 'jobs.printer_id')
      .selectAll('jobs')
      .select(sql<string | null>`coalesce(printers.name, jobs.printer_name)`.as('printer_display_name'));
  }

  async get(id: number): Promise<JobRecord | undefined> {
    const row = await this.select().where('jobs.id', '=', id).executeTakeFirst();
    return row && toRecord(row);
  }

  /** The progress of each of `ids` that exists, in a statement per IN_BATCH ids (a restart resumes every dispatch's job at once). */
  async progressOf(ids: readonly number[]): Promise<Map<number, number>> {
    const out = new Map<number, number>();
    const unique = [...new Set(ids)];
    for (let from = 0; from < unique.length; from += IN_BATCH) {
      const rows = await this.db.selectFrom('jobs').select(['id', 'progress']).where('id', 'in', unique.slice(from, from + IN_BATCH)).execute();
      for (const row of rows) out.set(Number(row.id), row.progress);
    }
    return out;
  }

  async insert(job: NewJob): Promise<number> {
    const result = await this.db
      .insertInto('jobs')
      .values(toRow(job) as Insertable<JobsTable>)
      .returning('id')
      .executeTakeFirstOrThrow();
    return Number(result.id);
  }

  async update(id: number, patch: JobPatch): Promise<boolean> {
    const result = await this.db.updateTable('jobs').set(toRow(patch)).where('id', '=', id).executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /** Changes the status only while the job is still in one of `from` (a compare-and-set, so two cancels can't both win). */
  async transition(id: number, from: readonly string[], patch: JobPatch): Promise<boolean> {
    const result = await this.db.updateTable('jobs').set(toRow(patch)).where('id', '=', id).where('status', 'in', from).executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  async delete(id: number): Promise<boolean> {
    const result = await this.db.deleteFrom('jobs').where('id', '=', id).executeTakeFirst();
    return result.numDeletedRows > 0n;
  }

  async list(q: JobQuery): Promise<{ jobs: JobRecord[]; total: number }> {
    const pg = flavourOf(this.db).name === 'postgres';
    const hints = pg ? NO_HINTS : sqliteHints(q);
    // `hidden` terms filter the page without leading SQLite's index choice (unary + is a no-op on the value);
    // the count keeps every term an index can serve.
    const filtered = (hidden: PlanHints) => {
      let base = this.db.selectFrom('jobs');
      if (q.printer_id !== undefined) base = base.where('jobs.printer_id', '=', q.printer_id);
      if (q.queue_item_id !== undefined) base = base.where('jobs.queue_item_id', '=', q.queue_item_id);
      if (q.statuses !== undefined) base = base.where(hidden.status ? sql`+jobs.status` : sql.ref('jobs.status'), 'in', q.statuses);
      if (q.is_business !== undefined) base = base.where('jobs.is_business', '=', q.is_business ? 1 : 0);
      const when = hidden.period ? sql<string>`+coalesce(jobs.start_time, jobs.created_at)` : sql<string>`coalesce(jobs.start_time, jobs.created_at)`;
      if (q.from !== undefined) base = base.where(when, '>=', q.from);
      if (q.to !== undefined) base = base.where(when, '<=', q.to);
      return base;
    };

    // Filtered by the tally key alone (or not at all), the total is a sum over job_tallies; else the jobs are counted.
    const byKeyOnly = q.queue_item_id === undefined && q.from === undefined && q.to === undefined;
    const total = byKeyOnly
      ? await this.tallies.count(q)
      : (await filtered(NO_HINTS).select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow()).total;

    const dir = q.order_dir === 'asc' ? sql`asc` : sql`desc`;
    const key =
      q.order_by === 'duration'
        ? hints.key
          ? sql`+coalesce(jobs.actual_duration, jobs.estimated_duration)`
          : sql`coalesce(jobs.actual_duration, jobs.estimated_duration)`
        : q.order_by === 'start_time'
          ? sql`jobs.start_time`
          : sql`jobs.created_at`;
    // Jobs without the sort key (not started, no duration) go last in either direction. created_at is never
    // null. Where a database would put NULL first by itself (SQLite ascending, PostgreSQL descending), SQLite
    // leads with `key is null` and PostgreSQL says NULLS LAST; each order then reads straight off an index
    // (migrations 008, 019 and 023) instead of sorting every match.
    const nullsFirstByItself = q.order_by !== 'created_at' && (pg ? q.order_dir === 'desc' : q.order_dir === 'asc');
    let page = filtered(hints)
      .leftJoin('printers', 'printers.id', 'jobs.printer_id')
      .selectAll('jobs')
      .select(sql<string | null>`coalesce(printers.name, jobs.printer_name)`.as('printer_display_name'));
    if (nullsFirstByItself && !pg) page = page.orderBy(sql`${key} is null`);
    const rows = await page
      .orderBy(nullsFirstByItself && pg ? sql`${key} desc nulls last` : sql`${key} ${dir}`)
      .orderBy(sql`jobs.id ${dir}`)
      .limit(q.limit)
      .offset((q.page - 1) * q.limit)
      .execute();
    return { jobs: rows.map(toRecord), total: Number(total) };
  }

  /** A page of the list with its total and the summary, read on one snapshot (they agree while jobs change). */
  listWithSummary(q: JobQuery, todayStart: string) {
    return readSnapshot(this.db, async (trx) => {
      const repo = new JobsRepository(trx);
      const page = await repo.list(q);
      return { ...page, summary: await repo.summary(q.printer_id, todayStart) };
    });
  }

  /**
   * One statement: the running, paused and queued jobs from the tallies, today's completed and failed ones as
   * index ranges (status, end_time). No scan of the history.
   */
  async summary(printerId: string | undefined, todayStart: string) {
    const endedToday = (status: string) => {
      let q = this.db
        .selectFrom('jobs')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('status', '=', status)
        .where('end_time', '>=', todayStart);
      if (printerId !== undefined) q = q.where('printer_id', '=', printerId);
      return q;
    };
    const row = await this.db
      .selectNoFrom([
        this.tallies.countQuery({ statuses: ['printing', 'paused'], printer_id: printerId }).as('active_jobs'),
        this.tallies.countQuery({ statuses: ['queued'], printer_id: printerId }).as('queued_jobs'),
        endedToday('completed').as('completed_today'),
        endedToday('failed').as('failed_today'),
      ])
      .executeTakeFirstOrThrow();
    return {
      active_jobs: Number(row.active_jobs),
      queued_jobs: Number(row.queued_jobs),
      completed_today: Number(row.completed_today),
      failed_today: Number(row.failed_today),
    };
  }

  /** Totals over a printer's jobs, for the printer detail's `statistics`. */
  printerTotals(printerId: string) {
    return this.tallies.printerTotals(printerId);
  }

  /** Seconds printed per printer by the jobs started since `since` (the queue's least_used printer choice). */
  async printSecondsSince(since: string): Promise<Map<string, number>> {
    const rows = await this.db
      .selectFrom('jobs')
      .select(['printer_id', sql<number>`coalesce(sum(actual_duration), 0)`.as('seconds')])
      .where('start_time', '>=', since)
      .groupBy('printer_id')
      .execute();
    return new Map(rows.map((r) => [r.printer_id, Number(r.seconds)]));
  }

  /** The running (or paused) jobs of each printer, newest first (the printer's view picks the one it prints). */
  async activeByPrinter(printerIds?: readonly string[]): Promise<Map<string, JobRecord[]>> {
    let q = this.select().where('jobs.status', 'in', ['printing', 'paused']);
    if (printerIds) {
      if (printerIds.length === 0) return new Map();
      q = q.where('jobs.printer_id', 'in', printerIds);
    }
    // Sorted here, not in SQL: running jobs are a handful, and an ORDER BY would lead SQLite to walk a
    // printer's whole history in period order (jobs_printer_period) instead of probing its running ones.
    const rows = (await q.execute()).sort(byNewest);
    const byPrinter = new Map<string, JobRecord[]>();
    for (const row of rows) {
      const list = byPrinter.get(row.printer_id);
      if (list) list.push(toRecord(row));
      else byPrinter.set(row.printer_id, [toRecord(row)]);
    }
    return byPrinter;
  }

  /** The newest auto-tracked job (one with a print identity) of a printer that is still printing or paused. */
  async activeTrackedForPrinter(printerId: string): Promise<JobRecord | undefined> {
    const rows = await this.select()
      .where('jobs.printer_id', '=', printerId)
      .where('jobs.status', 'in', ['printing', 'paused'])
      .where('jobs.print_key', 'is not', null)
      .execute();
    // Newest first, sorted here for the reason given in activeByPrinter.
    const newest = rows.sort(byNewest)[0];
    return newest && toRecord(newest);
  }

  /**
   * Each printer's newest auto-tracked job (one with a print identity), whatever its status, for the printers of
   * `printerIds` that have one: one statement per IN_BATCH printers, each printer's pick read off
   * jobs_printer_period (newest first) instead of a walk over the history.
   */
  async lastTrackedByPrinter(printerIds: readonly string[]): Promise<Map<string, JobRecord>> {
    const out = new Map<string, JobRecord>();
    const unique = [...new Set(printerIds)];
    for (let from = 0; from < unique.length; from += IN_BATCH) {
      const ids = unique.slice(from, from + IN_BATCH);
      const rows = await this.select()
        .where('jobs.id', 'in', (eb) =>
          eb
            .selectFrom('printers as p')
            .where('p.id', 'in', ids)
            .select((inner) =>
              inner
                .selectFrom('jobs as j')
                .select('j.id')
                .whereRef('j.printer_id', '=', 'p.id')
                .where('j.print_key', 'is not', null)
                .orderBy(sql`coalesce(j.start_time, j.created_at)`, 'desc')
                .orderBy('j.id', 'desc')
                .limit(1)
                .as('id'),
            ),
        )
        .execute();
      for (const row of rows) out.set(row.printer_id, toRecord(row));
    }
    return out;
  }

  async byPrintKey(printerId: string, printKey: string): Promise<JobRecord | undefined> {
    const row = await this.select().where('jobs.printer_id', '=', printerId).where('jobs.print_key', '=', printKey).executeTakeFirst();
    return row && toRecord(row);
  }

  count(): Promise<number> {
    return this.tallies.count();
  }

  /** How many jobs are in each of `statuses` (from the tallies: cheap however long the history). */
  countByStatus(statuses: readonly string[]): Promise<Record<string, number>> {
    return this.tallies.countByStatus(statuses);
  }
}
