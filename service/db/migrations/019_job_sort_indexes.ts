import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../dialect';

/**
 * Indexes for the job list's other orders (008 serves created_at either way and start_time newest first),
 * so that a page of them reads 50 rows off an index instead of sorting every match: at 10^7 jobs a page of
 * the completed jobs by start time sorted millions of rows, one by duration all of them.
 *  - (status, start_time) and (printer_id, start_time): the newest first by start time of one status or one
 *    printer (the dashboard's "recently finished", a printer's history);
 *  - the duration, coalesce(actual_duration, estimated_duration), longest and shortest first;
 *  - start_time oldest first.
 * Jobs without the sort key go last in either direction (jobs.ts). SQLite puts NULL first when ascending, so
 * its ascending orders lead with `key IS NULL` (an index of that expression); its indexes end with the rowid
 * (the id), PostgreSQL's spell the id out, with NULLS LAST where it sorts descending.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const duration = sql.raw('coalesce(actual_duration, estimated_duration)');
  if (dialectOf(db) === 'postgres') {
    await sql`CREATE INDEX jobs_status_start_desc ON jobs (status, start_time DESC NULLS LAST, id DESC)`.execute(db);
    await sql`CREATE INDEX jobs_printer_start_desc ON jobs (printer_id, start_time DESC NULLS LAST, id DESC)`.execute(db);
    await sql`CREATE INDEX jobs_duration_desc ON jobs ((${duration}) DESC NULLS LAST, id DESC)`.execute(db);
    await sql`CREATE INDEX jobs_duration_asc ON jobs ((${duration}), id)`.execute(db);
    // 001's (start_time) left the id to an incremental sort; this one serves the oldest first, and what the other served.
    await sql`CREATE INDEX jobs_start_time_asc ON jobs (start_time, id)`.execute(db);
    await sql`DROP INDEX jobs_start_time`.execute(db);
    return;
  }
  await sql`CREATE INDEX jobs_status_start ON jobs (status, start_time)`.execute(db);
  await sql`CREATE INDEX jobs_printer_start ON jobs (printer_id, start_time)`.execute(db);
  await sql`CREATE INDEX jobs_duration_desc ON jobs (${duration})`.execute(db);
  await sql`CREATE INDEX jobs_duration_asc ON jobs (${duration} IS NULL, ${duration})`.execute(db);
  await sql`CREATE INDEX jobs_start_time_asc ON jobs (start_time IS NULL, start_time)`.execute(db);
}
