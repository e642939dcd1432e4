/**
 * Migration 002 of the aggregation service: what the /stats views read instead of rescanning every
 * submission, and the backfill that derives it from the submissions already stored.
 *
 *  - latest_submissions: one row per installation, the fields of its latest submission (latest by
 *    received_ms, then id: the order the views always used) that the distribution views group by.
 *  - daily_totals: per UTC day of received_ms (received_ms / 86400000), the count of submissions and
 *    the sums of their counters; a window's totals are its whole days from here plus its ragged ends
 *    from the submissions themselves.
 *  - submissions_received_cover: (received_ms, installation_id, error_count), so the per-bucket
 *    distinct counts read the index alone (it replaces submissions_received); submissions_errors:
 *    the same for the submissions with errors only (a partial index).
 *
 * Both tables change in the submission's own transaction (derived-writes.ts) and the backfill below is
 * the definition they must always agree with (the tests recompute it from the raw submissions).
 */
import { sql, type Kysely, type Migration } from 'kysely';
import { ddl } from '../db/ddl';

export const DAY_MS = 86_400_000;
/** The day length as a literal: a bound JS number is REAL in SQLite and would divide to fractions. */
export const DAY_LITERAL = sql.lit(DAY_MS);

/** The counters daily_totals adds up, as (column in daily_totals, column in submissions). */
export const DAILY_COUNTERS = [
  ['jobs_created', 'total_jobs_created'],
  ['jobs_completed', 'total_jobs_completed'],
  ['jobs_failed', 'total_jobs_failed'],
  ['files_downloaded', 'total_files_downloaded'],
  ['files_uploaded', 'total_files_uploaded'],
  ['uptime_hours', 'uptime_hours'],
  ['errors', 'error_count'],
] as const;

/** The fields of an installation's latest submission that latest_submissions keeps. */
export const LATEST_FIELDS = ['app_version', 'deployment_mode', 'country_code', 'printer_count', 'printer_type_counts', 'feature_usage'] as const;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/** Fills both derived tables from the submissions (they must be empty): the migration's backfill, and the bench's after it seeds. */
export async function backfillDerived(db: AnyDb): Promise<void> {
  const fields = sql.raw(LATEST_FIELDS.join(', '));
  await sql`INSERT INTO latest_submissions (installation_id, submission_id, received_ms, ${fields})
    SELECT installation_id, id, received_ms, ${fields} FROM (
      SELECT s.*, ROW_NUMBER() OVER (PARTITION BY installation_id ORDER BY received_ms DESC, id DESC) AS rn FROM submissions s
    ) ranked WHERE rn = 1`.execute(db);
  const targets = sql.raw(DAILY_COUNTERS.map(([to]) => to).join(', '));
  const sums = sql.raw(DAILY_COUNTERS.map(([, from]) => `SUM(${from})`).join(', '));
  await sql`INSERT INTO daily_totals (day, submissions, ${targets})
    SELECT received_ms / ${DAY_LITERAL}, COUNT(*), ${sums} FROM submissions GROUP BY received_ms / ${DAY_LITERAL}`.execute(db);
}

export const m002: Migration = {
  async up(db: AnyDb) {
    await ddl(db)`CREATE TABLE latest_submissions (
      installation_id TEXT PRIMARY KEY,
      submission_id INTEGER NOT NULL,
      received_ms INTEGER NOT NULL,
      app_version TEXT NOT NULL,
      deployment_mode TEXT NOT NULL,
      country_code TEXT NOT NULL,
      printer_count INTEGER NOT NULL,
      printer_type_counts TEXT NOT NULL,
      feature_usage TEXT NOT NULL
    ) STRICT`.execute(db);
    await ddl(db)`CREATE INDEX latest_submissions_received ON latest_submissions (received_ms)`.execute(db);
    await ddl(db)`CREATE TABLE daily_totals (
      day INTEGER PRIMARY KEY,
      submissions INTEGER NOT NULL,
      jobs_created INTEGER NOT NULL,
      jobs_completed INTEGER NOT NULL,
      jobs_failed INTEGER NOT NULL,
      files_downloaded INTEGER NOT NULL,
      files_uploaded INTEGER NOT NULL,
      uptime_hours REAL NOT NULL,
      errors INTEGER NOT NULL
    ) STRICT`.execute(db);
    await ddl(db)`CREATE INDEX submissions_received_cover ON submissions (received_ms, installation_id, error_count)`.execute(db);
    // The few submissions with errors, for the installations-with-errors counts and the errors by code.
    await ddl(db)`CREATE INDEX submissions_errors ON submissions (received_ms, installation_id) WHERE error_count > 0`.execute(db);
    // The cover index answers everything submissions_received did.
    await ddl(db)`DROP INDEX submissions_received`.execute(db);
    await backfillDerived(db);
  },
};
