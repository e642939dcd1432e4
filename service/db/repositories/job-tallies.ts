import { sql } from 'kysely';
import type { Db } from '../connection';

/** What a tally can narrow by: the columns of its key. */
export interface TallyFilter {
  printer_id?: string;
  statuses?: readonly string[];
  is_business?: boolean;
}

/**
 * Counts and totals of the jobs read from job_tallies (migration 016): a few dozen rows, kept by triggers,
 * instead of a walk over a history of millions of jobs. Only for questions the tally key answers (printer,
 * status, business); anything narrower counts the jobs.
 */
export class JobTalliesRepository {
  constructor(private readonly db: Db) {}

  private where(f: TallyFilter) {
    let q = this.db.selectFrom('job_tallies');
    if (f.printer_id !== undefined) q = q.where('printer_id', '=', f.printer_id);
    if (f.statuses !== undefined) q = f.statuses.length ? q.where('status', 'in', [...f.statuses]) : q.where(sql<boolean>`1 = 0`);
    if (f.is_business !== undefined) q = q.where('is_business', '=', f.is_business ? 1 : 0);
    return q;
  }

  /** The number of jobs matching the filter, as a query (also for a subquery of a larger statement). */
  countQuery(f: TallyFilter = {}) {
    return this.where(f).select(sql<number>`coalesce(sum(jobs), 0)`.as('n'));
  }

  /** The number of jobs matching the filter. */
  async count(f: TallyFilter = {}): Promise<number> {
    return Number((await this.countQuery(f).executeTakeFirstOrThrow()).n);
  }

  /** How many jobs are in each of `statuses` (0 for none), of one printer or of all. */
  async countByStatus(statuses: readonly string[], printerId?: string): Promise<Record<string, number>> {
    const rows = await this.where({ statuses, printer_id: printerId })
      .select(['status', sql<number>`sum(jobs)`.as('n')])
      .groupBy('status')
      .execute();
    const counts: Record<string, number> = Object.fromEntries(statuses.map((s) => [s, 0]));
    for (const row of rows) counts[row.status] = Number(row.n);
    return counts;
  }

  /** Totals over a printer's jobs, for the printer detail's `statistics`. */
  async printerTotals(printerId: string) {
    const row = await this.where({ printer_id: printerId })
      .select([
        sql<number>`coalesce(sum(jobs), 0)`.as('total_jobs'),
        sql<number>`coalesce(sum(CASE WHEN status = 'completed' THEN jobs ELSE 0 END), 0)`.as('successful_jobs'),
        sql<number>`coalesce(sum(CASE WHEN status = 'failed' THEN jobs ELSE 0 END), 0)`.as('failed_jobs'),
        sql<number>`coalesce(sum(print_time), 0)`.as('total_print_time'),
        sql<number>`coalesce(sum(used_grams), 0)`.as('material_used_total'),
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
}
