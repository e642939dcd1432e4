import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../dialect';

/**
 * GET /jobs?printer_id=...&order_by=duration (a printer's longest prints first) sorted the printer's whole
 * history on each page (10^5 jobs of a printer at 10^7 in the farm): no index led with the printer and then the
 * duration. This one does, longest first (jobs without a duration last, then the newest id), as the page asks.
 * The shortest first still sorts the printer's jobs: an index can serve one of the two null placements, not both.
 *
 * Every index of jobs is a write on each job update, so this one takes the place of 001's jobs_end_time: (end_time)
 * is a prefix of 004's jobs_end_start (end_time, start_time, printer_id), which serves every end_time range and
 * order the other did (the summary's "ended today" reads jobs_status_end and jobs_printer_status_end).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const duration = sql.raw('coalesce(actual_duration, estimated_duration)');
  // SQLite's index ends with the rowid (the id) and puts NULL lowest, so walked backwards it gives the longest
  // first, NULL last, newest id first; PostgreSQL's spells out both (as 019's jobs_duration_desc).
  if (dialectOf(db) === 'postgres') await sql`CREATE INDEX jobs_printer_duration ON jobs (printer_id, (${duration}) DESC NULLS LAST, id DESC)`.execute(db);
  else await sql`CREATE INDEX jobs_printer_duration ON jobs (printer_id, ${duration})`.execute(db);
  await sql`DROP INDEX jobs_end_time`.execute(db);
}
