import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../dialect';

/**
 * GET /jobs?printer_id=...&status=...: the page was read off (printer_id, created_at) (008), every job of the
 * printer checked for its status until 50 matched: a status the printer has few jobs of (queued, failed) walked
 * its whole history (10^5 jobs of a printer at 10^7 in the farm) for one page. This index finds the printer's
 * jobs of a status in created_at order directly. SQLite's index ends with the rowid (the id) by itself,
 * PostgreSQL's spells it out, as in 008.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const id = dialectOf(db) === 'postgres' ? sql`, id` : sql``;
  await sql`CREATE INDEX jobs_printer_status_created ON jobs (printer_id, status, created_at${id})`.execute(db);
}
