/**
 * The write side of the aggregation service (submissions, rate limits, deletion) on top of its read
 * queries (reads.ts, tally-reads.ts). Every change to the submissions updates the derived tables (derived-writes.ts)
 * in the same transaction.
 */
import { sql, type Transaction } from 'kysely';
import type { UsageSubmission } from '../schemas/usage';
import { isUniqueViolation } from '../db/connection';
import { dialectOf } from '../db/dialect';
import type { AggregatorDb, AggregatorDB } from './db';
import { DAY_MS } from './derived-schema';
import { deleteWithDerived, recordDerived, refreshLatest } from './derived-writes';
import { TallyReads } from './tally-reads';

export type { BucketRow, StoredSubmission, Totals } from './reads';
export { DAY_MS };
export const HOUR_MS = 60 * 60 * 1000;

/** A stored submission that a newer one of the same installation and period outranks. */
export interface StoredPeriod {
  submission_id: number;
  submitted_at: string;
  period_start: string;
  period_end: string;
}

export type AcceptOutcome =
  | { kind: 'accepted'; id: number; count: number; windowStartMs: number; replaced: StoredPeriod[] }
  | { kind: 'duplicate'; id: number; count: number; windowStartMs: number }
  | { kind: 'superseded'; by: StoredPeriod; count: number; windowStartMs: number }
  | { kind: 'limited'; count: number; windowStartMs: number }
  | { kind: 'deleted'; deletedAt: string; count: number; windowStartMs: number };

export class AggregatorRepository extends TallyReads {
  constructor(db: AggregatorDb) {
    super(db);
  }

  /**
   * Stores a submission unless the installation used up its hourly quota. The rate-limit record, the
   * submission and the installation row change in one transaction. A repeat of a stored
   * (installation_id, submitted_at) is a duplicate: nothing changes and no quota is used.
   *
   * Each period of an installation counts once: a submission replaces the stored ones of its installation
   * whose period it overlaps (periodsOverlap), and one that a stored, later-submitted one overlaps is
   * superseded (nothing changes, no quota). Why replace and not refuse: a farm's counters stay open until
   * a submission of them is answered, and one refused with a 4xx is built afresh from the same period
   * start, so the later take holds the earlier one's events too; refusing it would refuse that farm's
   * every following submission as well.
   */
  async accept(s: UsageSubmission, nowMs: number, limit: number, windowMs: number): Promise<AcceptOutcome> {
    try {
      return await this.acceptOnce(s, nowMs, limit, windowMs);
    } catch (err) {
      // The unique index (installation_id, submitted_at) is the last guard: a copy that got past the check
      // (it cannot under the lock below, but a guard costs nothing) is a duplicate, not an error.
      if (!isUniqueViolation(err)) throw err;
      const [dup, rate] = await Promise.all([
        this.db.selectFrom('submissions').select('id').where('installation_id', '=', s.installation_id).where('submitted_at', '=', s.submitted_at).executeTakeFirst(),
        this.rateLimit(s.installation_id),
      ]);
      if (!dup) throw err;
      return { kind: 'duplicate', id: dup.id, count: rate?.submission_count ?? 0, windowStartMs: rate?.window_start_ms ?? nowMs };
    }
  }

  /**
   * One installation's submissions are taken one at a time, whichever instance receives them: on PostgreSQL
   * the transaction first makes sure the installation's rate-limit row exists, then locks it (FOR UPDATE)
   * until it commits, so a second submission of the same installation (on this or another instance) waits
   * and then sees the first one's count and submission. SQLite has one writer at a time anyway.
   */
  private acceptOnce(s: UsageSubmission, nowMs: number, limit: number, windowMs: number): Promise<AcceptOutcome> {
    const postgres = dialectOf(this.db) === 'postgres';
    return this.db.transaction().execute(async (trx) => {
      let rateQuery = trx.selectFrom('rate_limits').selectAll().where('installation_id', '=', s.installation_id);
      if (postgres) {
        const at = new Date(nowMs).toISOString();
        await trx
          .insertInto('rate_limits')
          .values({ installation_id: s.installation_id, last_submission_at: at, submission_count: 0, window_start: at, window_start_ms: nowMs })
          .onConflict((oc) => oc.column('installation_id').doNothing())
          .execute();
        rateQuery = rateQuery.forUpdate();
      }
      const rate = await rateQuery.executeTakeFirst();
      const fresh = !rate || nowMs - rate.window_start_ms >= windowMs;
      const windowStartMs = fresh ? nowMs : rate.window_start_ms;
      const count = fresh ? 0 : rate.submission_count;
      const deleted = await this.deletedBefore(trx, s);
      if (deleted) {
        // The row made above only to lock on: a deleted installation keeps no rate-limit record.
        if (postgres) await trx.deleteFrom('rate_limits').where('installation_id', '=', s.installation_id).where('submission_count', '=', 0).execute();
        return { kind: 'deleted', deletedAt: deleted, count, windowStartMs };
      }
      const dup = await trx
        .selectFrom('submissions')
        .select('id')
        .where('installation_id', '=', s.installation_id)
        .where('submitted_at', '=', s.submitted_at)
        .executeTakeFirst();
      if (dup) return { kind: 'duplicate', id: dup.id, count, windowStartMs };
      const times = { submitted_ms: Date.parse(s.submitted_at), period_start_ms: Date.parse(s.period_start), period_end_ms: Date.parse(s.period_end) };
      const overlapping = await this.overlapping(trx, s.installation_id, times.period_start_ms, times.period_end_ms);
      // The same moment written differently (another offset or precision) is the same submission.
      const same = overlapping.find((o) => o.submitted_ms === times.submitted_ms);
      if (same) return { kind: 'duplicate', id: same.submission_id, count, windowStartMs };
      const newer = overlapping.filter((o) => o.submitted_ms > times.submitted_ms).sort((x, y) => y.submitted_ms - x.submitted_ms)[0];
      if (newer) return { kind: 'superseded', by: period(newer), count, windowStartMs };
      if (count >= limit) return { kind: 'limited', count, windowStartMs };
      const replaced = overlapping.map((o) => o.submission_id);
      await deleteWithDerived(trx, s.installation_id, replaced);
      const now = new Date(nowMs).toISOString();
      const errors = s.event_counts.error ?? 0;
      const row = {
          installation_id: s.installation_id,
          received_at: now,
          received_ms: nowMs,
          submitted_at: s.submitted_at,
          ...times,
          schema_version: s.schema_version,
          period_start: s.period_start,
          period_end: s.period_end,
          app_version: s.app_version,
          platform: s.platform,
          deployment_mode: s.deployment_mode,
          country_code: s.country_code,
          printer_count: s.printer_count,
          printer_types: JSON.stringify(s.printer_types),
          printer_type_counts: JSON.stringify(s.printer_type_counts),
          total_jobs_created: s.total_jobs_created,
          total_jobs_completed: s.total_jobs_completed,
          total_jobs_failed: s.total_jobs_failed,
          total_files_downloaded: s.total_files_downloaded,
          total_files_uploaded: s.total_files_uploaded,
          uptime_hours: s.uptime_hours,
          feature_usage: JSON.stringify(s.feature_usage),
          event_counts: JSON.stringify(s.event_counts),
        error_count: errors,
      };
      const { id } = await trx.insertInto('submissions').values(row).returning('id').executeTakeFirstOrThrow();
      await recordDerived(trx, { ...row, id: Number(id) });
      if (replaced.length) await refreshLatest(trx, s.installation_id);
      const latest = {
        last_seen_at: now,
        last_seen_ms: nowMs,
        app_version: s.app_version,
        platform: s.platform,
        deployment_mode: s.deployment_mode,
        country_code: s.country_code,
        printer_count: s.printer_count,
      };
      await trx
        .insertInto('installations')
        .values({ installation_id: s.installation_id, first_seen_at: now, first_seen_ms: nowMs, submissions: 1, ...latest })
        .onConflict((oc) => oc.column('installation_id').doUpdateSet({ ...latest, submissions: sql`installations.submissions + ${sql.lit(1 - replaced.length)}` }))
        .execute();
      const record = { last_submission_at: now, submission_count: count + 1, window_start: new Date(windowStartMs).toISOString(), window_start_ms: windowStartMs };
      await trx
        .insertInto('rate_limits')
        .values({ installation_id: s.installation_id, ...record })
        .onConflict((oc) => oc.column('installation_id').doUpdateSet(record))
        .execute();
      return { kind: 'accepted', id: Number(id), count: count + 1, windowStartMs, replaced: overlapping.map(period) };
    });
  }

  /**
   * When the installation's data was deleted, if `s` covers time before that (its period starts earlier):
   * a replay of a submission made before the deletion, or one still on its way then. Those events were
   * deleted with the rest; only a period that starts after the deletion may count again.
   */
  private async deletedBefore(trx: Transaction<AggregatorDB>, s: UsageSubmission): Promise<string | null> {
    const tomb = await trx.selectFrom('deleted_installations').select(['deleted_at', 'deleted_ms']).where('installation_id', '=', s.installation_id).executeTakeFirst();
    return tomb && Date.parse(s.period_start) < Number(tomb.deleted_ms) ? tomb.deleted_at : null;
  }

  /** The stored submissions of an installation whose periods overlap [startMs, endMs] (see periodsOverlap). */
  private async overlapping(trx: Transaction<AggregatorDB>, installationId: string, startMs: number, endMs: number) {
    const rows = await trx
      .selectFrom('submissions')
      .select(['id', 'submitted_at', 'submitted_ms', 'period_start', 'period_end'])
      .where('installation_id', '=', installationId)
      .where((eb) => eb.or([eb.and([eb('period_start_ms', '<', endMs), eb('period_end_ms', '>', startMs)]), eb('period_start_ms', '=', startMs)]))
      .orderBy('id')
      .execute();
    return rows.map((r) => ({ submission_id: Number(r.id), submitted_at: r.submitted_at, submitted_ms: Number(r.submitted_ms), period_start: r.period_start, period_end: r.period_end }));
  }

  async rateLimit(installationId: string) {
    return this.db.selectFrom('rate_limits').selectAll().where('installation_id', '=', installationId).executeTakeFirst();
  }

  /**
   * Removes everything of one installation and remembers the moment (deleted_installations), even when
   * nothing was stored: a submission still on its way must not land after it. found is false when nothing
   * was stored. On PostgreSQL it first makes sure the rate-limit row exists and locks it, as a submission
   * does, so that one in flight on another instance commits before or refuses after.
   */
  async deleteInstallation(installationId: string, nowMs: number): Promise<{ found: boolean; submissions: number }> {
    const postgres = dialectOf(this.db) === 'postgres';
    return this.db.transaction().execute(async (trx) => {
      const at = new Date(nowMs).toISOString();
      let placeholder = false;
      if (postgres) {
        const made = await trx
          .insertInto('rate_limits')
          .values({ installation_id: installationId, last_submission_at: at, submission_count: 0, window_start: at, window_start_ms: nowMs })
          .onConflict((oc) => oc.column('installation_id').doNothing())
          .executeTakeFirst();
        placeholder = Number(made.numInsertedOrUpdatedRows ?? 0) > 0;
      }
      const tomb = { deleted_at: at, deleted_ms: nowMs };
      await trx
        .insertInto('deleted_installations')
        .values({ installation_id: installationId, ...tomb })
        .onConflict((oc) => oc.column('installation_id').doUpdateSet(tomb).where('deleted_installations.deleted_ms', '<', nowMs))
        .execute();
      const submissions = await deleteWithDerived(trx, installationId);
      const inst = await trx.deleteFrom('installations').where('installation_id', '=', installationId).executeTakeFirst();
      const rate = await trx.deleteFrom('rate_limits').where('installation_id', '=', installationId).executeTakeFirst();
      return { found: submissions + Number(inst.numDeletedRows) + Number(rate.numDeletedRows) - (placeholder ? 1 : 0) > 0, submissions };
    });
  }
}

const period = ({ submission_id, submitted_at, period_start, period_end }: StoredPeriod): StoredPeriod => ({ submission_id, submitted_at, period_start, period_end });
