import { sql, type Insertable, type Selectable, type Updateable } from 'kysely';
import type { Db } from '../connection';
import type { JobsTable } from '../schema';

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

export class JobsRepository {
  constructor(private readonly db: Db) {}

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

  async insert(job: NewJob): Promise<number> {
    const result = await this.db
      .insertInto('jobs')
      .values(toRow(job) as Insertable<JobsTable>)
      .executeTakeFirstOrThrow();
    return Number(result.insertId);
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
    let base = this.db.selectFrom('jobs');
    if (q.printer_id !== undefined) base = base.where('jobs.printer_id', '=', q.printer_id);
    if (q.statuses !== undefined) base = base.where('jobs.status', 'in', q.statuses);
    if (q.is_business !== undefined) base = base.where('jobs.is_business', '=', q.is_business ? 1 : 0);
    const when = sql<string>`coalesce(jobs.start_time, jobs.created_at)`;
    if (q.from !== undefined) base = base.where(when, '>=', q.from);
    if (q.to !== undefined) base = base.where(when, '<=', q.to);

    const { total } = await base.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow();

    const dir = q.order_dir === 'asc' ? sql`asc` : sql`desc`;
    const key =
      q.order_by === 'duration'
        ? sql`coalesce(jobs.actual_duration, jobs.estimated_duration)`
        : q.order_by === 'start_time'
          ? sql`jobs.start_time`
          : sql`jobs.created_at`;
    const rows = await base
      .leftJoin('printers', 'printers.id', 'jobs.printer_id')
      .selectAll('jobs')
      .select(sql<string | null>`coalesce(printers.name, jobs.printer_name)`.as('printer_display_name'))
      // Jobs without the sort key (not started, no duration) go last in either direction.
      .orderBy(sql`${key} is null`)
      .orderBy(sql`${key} ${dir}`)
      .orderBy(sql`jobs.id ${dir}`)
      .limit(q.limit)
      .offset((q.page - 1) * q.limit)
      .execute();
    return { jobs: rows.map(toRecord), total: Number(total) };
  }

  async summary(printerId: string | undefined, todayStart: string) {
    let q = this.db.selectFrom('jobs');
    if (printerId !== undefined) q = q.where('printer_id', '=', printerId);
    const row = await q
      .select([
        sql<number>`coalesce(sum(status in ('printing', 'paused')), 0)`.as('active_jobs'),
        sql<number>`coalesce(sum(status = 'queued'), 0)`.as('queued_jobs'),
        sql<number>`coalesce(sum(status = 'completed' and end_time >= ${todayStart}), 0)`.as('completed_today'),
        sql<number>`coalesce(sum(status = 'failed' and end_time >= ${todayStart}), 0)`.as('failed_today'),
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
  async printerTotals(printerId: string) {
    const row = await this.db
      .selectFrom('jobs')
      .where('printer_id', '=', printerId)
      .select([
        sql<number>`count(*)`.as('total_jobs'),
        sql<number>`coalesce(sum(status = 'completed'), 0)`.as('successful_jobs'),
        sql<number>`coalesce(sum(status = 'failed'), 0)`.as('failed_jobs'),
        sql<number>`coalesce(sum(actual_duration), 0)`.as('total_print_time'),
        sql<number>`coalesce(sum(coalesce(material_actual_usage, case when status = 'completed' then material_estimated_usage end)), 0)`.as(
          'material_used_total',
        ),
      ])
      .executeTakeFirstOrThrow();
    return {
      total_jobs: Number(row.total_jobs),
      successful_jobs: Number(row.successful_jobs),
      failed_jobs: Number(row.failed_jobs),
      total_print_time: Number(row.total_print_time),
      material_used_total: Math.round(Number(row.material_used_total) * 100) / 100,
    };
  }

  /** The running (or paused) job of each printer, newest first when there are several. */
  async activeByPrinter(printerIds?: readonly string[]): Promise<Map<string, JobRecord>> {
    let q = this.select().where('jobs.status', 'in', ['printing', 'paused']);
    if (printerIds) {
      if (printerIds.length === 0) return new Map();
      q = q.where('jobs.printer_id', 'in', printerIds);
    }
    const rows = await q.orderBy(sql`coalesce(jobs.start_time, jobs.created_at)`, 'desc').orderBy('jobs.id', 'desc').execute();
    const byPrinter = new Map<string, JobRecord>();
    for (const row of rows) if (!byPrinter.has(row.printer_id)) byPrinter.set(row.printer_id, toRecord(row));
    return byPrinter;
  }

  /** The newest auto-tracked job (one with a print identity) of a printer that is still printing or paused. */
  async activeTrackedForPrinter(printerId: string): Promise<JobRecord | undefined> {
    const row = await this.select()
      .where('jobs.printer_id', '=', printerId)
      .where('jobs.status', 'in', ['printing', 'paused'])
      .where('jobs.print_key', 'is not', null)
      .orderBy(sql`coalesce(jobs.start_time, jobs.created_at)`, 'desc')
      .orderBy('jobs.id', 'desc')
      .executeTakeFirst();
    return row && toRecord(row);
  }

  async byPrintKey(printerId: string, printKey: string): Promise<JobRecord | undefined> {
    const row = await this.select().where('jobs.printer_id', '=', printerId).where('jobs.print_key', '=', printKey).executeTakeFirst();
    return row && toRecord(row);
  }

  async count(): Promise<number> {
    const row = await this.db.selectFrom('jobs').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /** How many jobs are in each of `statuses` (an index probe per status: cheap however long the history). */
  async countByStatus(statuses: readonly string[]): Promise<Record<string, number>> {
    const rows = await this.db
      .selectFrom('jobs')
      .select(['status', (eb) => eb.fn.countAll<number>().as('n')])
      .where('status', 'in', [...statuses] as never)
      .groupBy('status')
      .execute();
    const counts = Object.fromEntries(statuses.map((s) => [s, 0]));
    for (const row of rows) counts[row.status] = Number(row.n);
    return counts;
  }
}
