/**
 * Migration 003 of the aggregation service: a submission's times in epoch milliseconds, so that the periods
 * of one installation can be compared (the ISO text may carry any offset, and text does not order across
 * offsets), and the end of the double counting they allowed.
 *
 * A farm's counters stay open until a submission of them is answered; one the aggregator refused with a
 * 4xx is built afresh from the same period start with a new submitted_at. Both then covered the same
 * events, and both were counted. Since this migration a submission replaces the stored ones of its
 * installation whose period it overlaps (repository.ts), and the backfill below removes what the rule
 * would have replaced had it always held: every submission overlapped by a later one (by submitted_at,
 * then id) of the same installation. The derived tables (migration 002) and the installations' counts are
 * then derived again from what is left.
 */
import { sql, type Kysely, type Migration } from 'kysely';
import { ddl } from '../db/ddl';
import { dialectOf } from '../db/dialect';
import { backfillDerived } from './derived-schema';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/** Epoch ms of an ISO text column, in the dialect's own date arithmetic (offsets included). */
function epochMs(db: AnyDb, column: string) {
  const ref = sql.ref(column);
  return dialectOf(db) === 'postgres'
    ? sql`CAST(ROUND(EXTRACT(EPOCH FROM CAST(${ref} AS timestamptz)) * 1000) AS BIGINT)`
    : sql`CAST(ROUND((julianday(${ref}) - 2440587.5) * 86400000.0) AS INTEGER)`;
}

/**
 * True for two periods of one installation that count events twice: they overlap by more than a shared
 * end, or start at the same moment (a farm rebuilds from its last acknowledged submission, so two with one
 * start are two takes of the same counters, zero-length periods included). `a` and `b` are table aliases.
 */
export function periodsOverlap(a: string, b: string) {
  const col = (t: string, c: string) => sql.ref(`${t}.${c}`);
  return sql<boolean>`((${col(a, 'period_start_ms')} < ${col(b, 'period_end_ms')} AND ${col(b, 'period_start_ms')} < ${col(a, 'period_end_ms')}) OR ${col(a, 'period_start_ms')} = ${col(b, 'period_start_ms')})`;
}

export const m003: Migration = {
  async up(db: AnyDb) {
    for (const column of ['submitted_ms', 'period_start_ms', 'period_end_ms']) {
      await ddl(db)`ALTER TABLE submissions ADD COLUMN ${sql.raw(column)} INTEGER NOT NULL DEFAULT 0`.execute(db);
    }
    await sql`UPDATE submissions SET submitted_ms = ${epochMs(db, 'submitted_at')}, period_start_ms = ${epochMs(db, 'period_start')}, period_end_ms = ${epochMs(db, 'period_end')}`.execute(db);
    const removed = await sql`DELETE FROM submissions WHERE EXISTS (
      SELECT 1 FROM submissions later WHERE later.installation_id = submissions.installation_id AND later.id <> submissions.id
        AND (later.submitted_ms > submissions.submitted_ms OR (later.submitted_ms = submissions.submitted_ms AND later.id > submissions.id))
        AND ${periodsOverlap('later', 'submissions')})`.execute(db);
    if (!Number(removed.numAffectedRows ?? 0)) return;
    await sql`DELETE FROM latest_submissions`.execute(db);
    await sql`DELETE FROM daily_totals`.execute(db);
    await backfillDerived(db);
    await sql`UPDATE installations SET submissions = (SELECT COUNT(*) FROM submissions s WHERE s.installation_id = installations.installation_id)`.execute(db);
  },
};
