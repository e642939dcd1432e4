import { sql, type Kysely } from 'kysely';
import { ddl, onPostgres } from '../ddl';
import { dialectOf } from '../dialect';

/**
 * Indexes that keep the job list, its summary and the printer totals cheap
 * however long the history grows (measured on 10^6 jobs: GET /jobs 2.5 s ->
 * under 100 ms; the printer detail's totals 200 ms -> 30 ms), so that no
 * common request holds the event loop:
 *  - (status, created_at) and (printer_id, created_at): a filtered page in
 *    created_at order is read off the index instead of sorting every match;
 *  - (status, end_time) and (printer_id, status, end_time): "completed today"
 *    and "failed today" are index ranges;
 *  - (printer_id, status, actual_duration, material_*): the printer totals are
 *    read from the index alone.
 * The (status) and (printer_id, status) indexes of 001 are prefixes of these
 * and go.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  // SQLite's indexes end with the rowid (the job id) by themselves, PostgreSQL's do not: there the id, the
  // pages' tie-breaker, is spelled out so that a page is read off the index without a sort.
  const id = dialectOf(db) === 'postgres' ? sql`, id` : sql``;
  await ddl(db)`CREATE INDEX jobs_status_created ON jobs (status, created_at${id})`.execute(db);
  await ddl(db)`CREATE INDEX jobs_printer_created ON jobs (printer_id, created_at${id})`.execute(db);
  await ddl(db)`CREATE INDEX jobs_status_end ON jobs (status, end_time)`.execute(db);
  await ddl(db)`CREATE INDEX jobs_printer_status_end ON jobs (printer_id, status, end_time)`.execute(db);
  await ddl(db)`CREATE INDEX jobs_printer_totals ON jobs (printer_id, status, actual_duration, material_actual_usage, material_estimated_usage)`.execute(db);
  await ddl(db)`DROP INDEX jobs_status`.execute(db);
  await ddl(db)`DROP INDEX jobs_printer_status`.execute(db);
  // PostgreSQL sorts NULL last when ascending, first when descending (SQLite the other way round): the newest
  // first by start time, jobs never started last, is an index of its own there, and the plain created_at
  // order gets its id.
  await onPostgres(db, sql`CREATE INDEX jobs_start_time_desc ON jobs (start_time DESC NULLS LAST, id DESC)`);
  await onPostgres(db, sql`DROP INDEX jobs_created_at`);
  await onPostgres(db, sql`CREATE INDEX jobs_created_at ON jobs (created_at, id)`);
}
