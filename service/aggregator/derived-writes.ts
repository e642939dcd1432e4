/**
 * Keeps latest_submissions and daily_totals (derived-schema.ts) in step with the submissions, inside the
 * transaction that changes the submissions.
 *
 * Why they stay exact with several instances on one PostgreSQL database:
 *  - latest_submissions is upserted with a condition: the row changes only when the new submission is
 *    later by (received_ms, id), the order the views use; the upsert takes the row lock, so two writers
 *    of one installation (already serialized by the rate-limit row lock) cannot both win.
 *  - daily_totals is incremented by INSERT ... ON CONFLICT DO UPDATE SET x = x + excluded.x: the
 *    conflicting row is locked and re-read, so concurrent increments add up (no lost updates).
 *  - a deletion locks the installation's rate-limit row first (the order submissions lock in: rate
 *    limit, then a day), then the days it touches in ascending order, and recounts those days from
 *    the submissions that remain. A submission that replaces stored ones of its installation
 *    (repository.ts) deletes them this way before it adds its own day, which is their day or a later
 *    one, so the days are still locked in ascending order.
 */
import { sql, type Transaction } from 'kysely';
import { dialectOf } from '../db/dialect';
import type { AggregatorDB, LatestSubmissionsTable, SubmissionsTable } from './db';
import { DAILY_COUNTERS, DAY_LITERAL, DAY_MS, LATEST_FIELDS } from './derived-schema';

type Trx = Transaction<AggregatorDB>;

/** What the derived tables take from a stored submission. */
export type DerivedInput = Omit<LatestSubmissionsTable, 'submission_id'> &
  Pick<SubmissionsTable, 'total_jobs_created' | 'total_jobs_completed' | 'total_jobs_failed' | 'total_files_downloaded' | 'total_files_uploaded' | 'uptime_hours' | 'error_count'> & { id: number };

/** Records one just-inserted submission in both derived tables. */
export async function recordDerived(trx: Trx, s: DerivedInput): Promise<void> {
  const latest = {
    submission_id: s.id,
    received_ms: s.received_ms,
    app_version: s.app_version,
    deployment_mode: s.deployment_mode,
    country_code: s.country_code,
    printer_count: s.printer_count,
    printer_type_counts: s.printer_type_counts,
    feature_usage: s.feature_usage,
  };
  await trx
    .insertInto('latest_submissions')
    .values({ installation_id: s.installation_id, ...latest })
    .onConflict((oc) =>
      oc
        .column('installation_id')
        .doUpdateSet(latest)
        .where(
          sql<boolean>`latest_submissions.received_ms < excluded.received_ms OR (latest_submissions.received_ms = excluded.received_ms AND latest_submissions.submission_id < excluded.submission_id)`,
        ),
    )
    .execute();
  const day = Math.floor(s.received_ms / DAY_MS);
  const add = (column: string) => sql<number>`${sql.ref(`daily_totals.${column}`)} + ${sql.ref(`excluded.${column}`)}`;
  await trx
    .insertInto('daily_totals')
    .values({
      day,
      submissions: 1,
      jobs_created: s.total_jobs_created,
      jobs_completed: s.total_jobs_completed,
      jobs_failed: s.total_jobs_failed,
      files_downloaded: s.total_files_downloaded,
      files_uploaded: s.total_files_uploaded,
      uptime_hours: s.uptime_hours,
      errors: s.error_count,
    })
    .onConflict((oc) =>
      oc.column('day').doUpdateSet({
        submissions: add('submissions'),
        ...Object.fromEntries(DAILY_COUNTERS.map(([column]) => [column, add(column)])),
      }),
    )
    .execute();
}

/**
 * Removes one installation's submissions (only those of `ids` when given: the ones a later submission
 * replaces) and what was derived from them. Call inside the deleting transaction; returns how many went.
 * With `ids`, the caller records its new submission and then calls refreshLatest.
 */
export async function deleteWithDerived(trx: Trx, installationId: string, ids?: number[]): Promise<number> {
  if (ids && !ids.length) return 0;
  const postgres = dialectOf(trx) === 'postgres';
  if (postgres) await trx.selectFrom('rate_limits').select('installation_id').where('installation_id', '=', installationId).forUpdate().execute();
  const only = ids ? sql`AND id IN (${sql.join(ids.map((id) => sql.lit(id)))})` : sql``;
  const dayRows = await sql<{ day: number }>`SELECT DISTINCT received_ms / ${DAY_LITERAL} AS day FROM submissions WHERE installation_id = ${installationId} ${only}`.execute(trx);
  const days = dayRows.rows.map((r) => Number(r.day)).sort((a, b) => a - b);
  if (postgres && days.length) await trx.selectFrom('daily_totals').select('day').where('day', 'in', days).orderBy('day').forUpdate().execute();
  let del = trx.deleteFrom('submissions').where('installation_id', '=', installationId);
  if (ids) del = del.where('id', 'in', ids);
  const deleted = await del.executeTakeFirst();
  if (!ids) await trx.deleteFrom('latest_submissions').where('installation_id', '=', installationId).execute();
  for (const day of days) await recountDay(trx, day);
  return Number(deleted.numDeletedRows);
}

/** Sets an installation's row of latest_submissions to its latest stored submission (after some were replaced). */
export async function refreshLatest(trx: Trx, installationId: string): Promise<void> {
  const fields = sql.raw(LATEST_FIELDS.join(', '));
  await trx.deleteFrom('latest_submissions').where('installation_id', '=', installationId).execute();
  await sql`INSERT INTO latest_submissions (installation_id, submission_id, received_ms, ${fields})
    SELECT installation_id, id, received_ms, ${fields} FROM submissions WHERE installation_id = ${installationId}
    ORDER BY received_ms DESC, id DESC LIMIT 1`.execute(trx);
}

/** Sets one day's row of daily_totals to what its submissions add up to (no row when none are left). */
async function recountDay(trx: Trx, day: number): Promise<void> {
  const sums = sql.raw(DAILY_COUNTERS.map(([to, from]) => `COALESCE(SUM(${from}), 0) AS ${to}`).join(', '));
  const { rows } = await sql<Record<string, number | string>>`SELECT COUNT(*) AS submissions, ${sums} FROM submissions
    WHERE received_ms >= ${sql.lit(day * DAY_MS)} AND received_ms < ${sql.lit((day + 1) * DAY_MS)}`.execute(trx);
  const row = Object.fromEntries(Object.entries(rows[0]).map(([k, v]) => [k, Number(v)]));
  if (!row.submissions) {
    await trx.deleteFrom('daily_totals').where('day', '=', day).execute();
    return;
  }
  const { submissions, jobs_created, jobs_completed, jobs_failed, files_downloaded, files_uploaded, uptime_hours, errors } = row;
  await trx.updateTable('daily_totals').set({ submissions, jobs_created, jobs_completed, jobs_failed, files_downloaded, files_uploaded, uptime_hours, errors }).where('day', '=', day).execute();
}
