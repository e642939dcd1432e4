/**
 * Every query of the aggregation service. Windows are (start, end] in epoch ms; buckets count back from `end`
 * by integer division (the end and the bucket size go in as integer literals: bound JS numbers are REAL in
 * SQLite and would divide to fractions).
 */
import { sql, type Selectable } from 'kysely';
import type { UsageSubmission } from '../schemas/usage';
import { isUniqueViolation } from '../db/connection';
import { dialectOf } from '../db/dialect';
import type { AggregatorDb, InstallationsTable, SubmissionsTable } from './db';

export const HOUR_MS = 60 * 60 * 1000;
export const DAY_MS = 24 * HOUR_MS;

/** A submissions row with its JSON columns parsed. */
export type StoredSubmission = Omit<Selectable<SubmissionsTable>, keyof SubmissionJson> & SubmissionJson;
interface SubmissionJson {
  printer_types: string[];
  printer_type_counts: Record<string, number>;
  feature_usage: Record<string, boolean>;
  event_counts: Record<string, number>;
}

const parse = (row: Selectable<SubmissionsTable>): StoredSubmission => ({
  ...row,
  printer_types: JSON.parse(row.printer_types),
  printer_type_counts: JSON.parse(row.printer_type_counts),
  feature_usage: JSON.parse(row.feature_usage),
  event_counts: JSON.parse(row.event_counts),
});

export type AcceptOutcome =
  | { kind: 'accepted' | 'duplicate'; id: number; count: number; windowStartMs: number }
  | { kind: 'limited'; count: number; windowStartMs: number };

export interface Totals {
  jobs_created: number;
  jobs_completed: number;
  jobs_failed: number;
  files_downloaded: number;
  files_uploaded: number;
  uptime_hours: number;
  errors: number;
  submissions: number;
}

export interface BucketRow {
  bucket: number;
  active: number;
  submissions: number;
  errors: number;
  with_errors: number;
}

export class AggregatorRepository {
  constructor(private readonly db: AggregatorDb) {}

  /**
   * Stores a submission unless the installation used up its hourly quota. The rate-limit record, the
   * submission and the installation row change in one transaction. A repeat of a stored
   * (installation_id, submitted_at) is a duplicate: nothing changes and no quota is used.
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
      const dup = await trx
        .selectFrom('submissions')
        .select('id')
        .where('installation_id', '=', s.installation_id)
        .where('submitted_at', '=', s.submitted_at)
        .executeTakeFirst();
      if (dup) return { kind: 'duplicate', id: dup.id, count, windowStartMs };
      if (count >= limit) return { kind: 'limited', count, windowStartMs };
      const now = new Date(nowMs).toISOString();
      const errors = s.event_counts.error ?? 0;
      const { id } = await trx
        .insertInto('submissions')
        .values({
          installation_id: s.installation_id,
          received_at: now,
          received_ms: nowMs,
          submitted_at: s.submitted_at,
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
        })
        .returning('id')
        .executeTakeFirstOrThrow();
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
        .onConflict((oc) => oc.column('installation_id').doUpdateSet({ ...latest, submissions: sql`installations.submissions + 1` }))
        .execute();
      const record = { last_submission_at: now, submission_count: count + 1, window_start: new Date(windowStartMs).toISOString(), window_start_ms: windowStartMs };
      await trx
        .insertInto('rate_limits')
        .values({ installation_id: s.installation_id, ...record })
        .onConflict((oc) => oc.column('installation_id').doUpdateSet(record))
        .execute();
      return { kind: 'accepted', id: Number(id), count: count + 1, windowStartMs };
    });
  }

  async rateLimit(installationId: string) {
    return this.db.selectFrom('rate_limits').selectAll().where('installation_id', '=', installationId).executeTakeFirst();
  }

  /** Removes everything of one installation; false when nothing was stored. */
  async deleteInstallation(installationId: string): Promise<{ found: boolean; submissions: number }> {
    return this.db.transaction().execute(async (trx) => {
      const subs = await trx.deleteFrom('submissions').where('installation_id', '=', installationId).executeTakeFirst();
      const inst = await trx.deleteFrom('installations').where('installation_id', '=', installationId).executeTakeFirst();
      const rate = await trx.deleteFrom('rate_limits').where('installation_id', '=', installationId).executeTakeFirst();
      const submissions = Number(subs.numDeletedRows);
      return { found: submissions + Number(inst.numDeletedRows) + Number(rate.numDeletedRows) > 0, submissions };
    });
  }

  async installationCount(): Promise<number> {
    const { n } = await this.db.selectFrom('installations').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    return Number(n);
  }

  /** Installations that submitted in (startMs, endMs]. */
  async activeCount(startMs: number, endMs: number): Promise<number> {
    const { n } = await this.db
      .selectFrom('submissions')
      .select(sql<number>`COUNT(DISTINCT installation_id)`.as('n'))
      .where('received_ms', '>', startMs)
      .where('received_ms', '<=', endMs)
      .executeTakeFirstOrThrow();
    return Number(n);
  }

  async newCount(startMs: number, endMs: number): Promise<number> {
    const { n } = await this.db
      .selectFrom('installations')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('first_seen_ms', '>', startMs)
      .where('first_seen_ms', '<=', endMs)
      .executeTakeFirstOrThrow();
    return Number(n);
  }

  /** Counter sums over the submissions received in (startMs, endMs] (all when no window). */
  async totals(startMs = -1, endMs = Number.MAX_SAFE_INTEGER): Promise<Totals> {
    const row = await this.db
      .selectFrom('submissions')
      .select((eb) => [
        eb.fn.countAll<number>().as('submissions'),
        eb.fn.coalesce(eb.fn.sum<number>('total_jobs_created'), sql<number>`0`).as('jobs_created'),
        eb.fn.coalesce(eb.fn.sum<number>('total_jobs_completed'), sql<number>`0`).as('jobs_completed'),
        eb.fn.coalesce(eb.fn.sum<number>('total_jobs_failed'), sql<number>`0`).as('jobs_failed'),
        eb.fn.coalesce(eb.fn.sum<number>('total_files_downloaded'), sql<number>`0`).as('files_downloaded'),
        eb.fn.coalesce(eb.fn.sum<number>('total_files_uploaded'), sql<number>`0`).as('files_uploaded'),
        eb.fn.coalesce(eb.fn.sum<number>('uptime_hours'), sql<number>`0`).as('uptime_hours'),
        eb.fn.coalesce(eb.fn.sum<number>('error_count'), sql<number>`0`).as('errors'),
      ])
      .where('received_ms', '>', startMs)
      .where('received_ms', '<=', endMs)
      .executeTakeFirstOrThrow();
    return Object.fromEntries(Object.entries(row).map(([k, v]) => [k, Number(v)])) as unknown as Totals;
  }

  async receivedRange(): Promise<{ first: number | null; last: number | null }> {
    const row = await this.db
      .selectFrom('submissions')
      .select((eb) => [eb.fn.min('received_ms').as('first'), eb.fn.max('received_ms').as('last')])
      .executeTakeFirstOrThrow();
    return { first: row.first === null ? null : Number(row.first), last: row.last === null ? null : Number(row.last) };
  }

  /** The latest submission of every installation that submitted in (startMs, endMs]. */
  async latestPerInstallation(startMs: number, endMs: number): Promise<StoredSubmission[]> {
    const rows = await sql<Selectable<SubmissionsTable>>`
      SELECT * FROM (
        SELECT s.*, ROW_NUMBER() OVER (PARTITION BY installation_id ORDER BY received_ms DESC, id DESC) AS rn
        FROM submissions s WHERE received_ms > ${startMs} AND received_ms <= ${endMs}
      ) latest WHERE rn = 1 ORDER BY installation_id`.execute(this.db);
    return rows.rows.map(({ rn: _rn, ...row }: Selectable<SubmissionsTable> & { rn?: number }) => parse(row));
  }

  /** The latest submission per (bucket, installation) in (endMs - buckets * sizeMs, endMs]; bucket 0 is the newest. */
  async latestPerBucket(endMs: number, sizeMs: number, buckets: number): Promise<(StoredSubmission & { bucket: number })[]> {
    const startMs = endMs - buckets * sizeMs;
    const rows = await sql<Selectable<SubmissionsTable> & { bucket: number }>`
      SELECT * FROM (
        SELECT s.*, (${sql.lit(Math.trunc(endMs))} - received_ms) / ${sql.lit(Math.trunc(sizeMs))} AS bucket,
          ROW_NUMBER() OVER (PARTITION BY (${sql.lit(Math.trunc(endMs))} - received_ms) / ${sql.lit(Math.trunc(sizeMs))}, installation_id ORDER BY received_ms DESC, id DESC) AS rn
        FROM submissions s WHERE received_ms > ${startMs} AND received_ms <= ${endMs}
      ) latest WHERE rn = 1`.execute(this.db);
    return rows.rows.map(({ rn: _rn, bucket, ...row }: Selectable<SubmissionsTable> & { bucket: number; rn?: number }) => ({ ...parse(row), bucket: Number(bucket) }));
  }

  /** Per bucket: active installations, submissions, errors and installations with errors. */
  async buckets(endMs: number, sizeMs: number, buckets: number): Promise<BucketRow[]> {
    const startMs = endMs - buckets * sizeMs;
    const rows = await sql<BucketRow>`
      SELECT (${sql.lit(Math.trunc(endMs))} - received_ms) / ${sql.lit(Math.trunc(sizeMs))} AS bucket,
        COUNT(DISTINCT installation_id) AS active,
        COUNT(*) AS submissions,
        COALESCE(SUM(error_count), 0) AS errors,
        COUNT(DISTINCT CASE WHEN error_count > 0 THEN installation_id END) AS with_errors
      FROM submissions WHERE received_ms > ${startMs} AND received_ms <= ${endMs}
      GROUP BY (${sql.lit(Math.trunc(endMs))} - received_ms) / ${sql.lit(Math.trunc(sizeMs))}`.execute(this.db);
    return rows.rows.map((r) => ({ bucket: Number(r.bucket), active: Number(r.active), submissions: Number(r.submissions), errors: Number(r.errors), with_errors: Number(r.with_errors) }));
  }

  /** Installations first seen per bucket. */
  async newPerBucket(endMs: number, sizeMs: number, buckets: number): Promise<Map<number, number>> {
    const startMs = endMs - buckets * sizeMs;
    const rows = await sql<{ bucket: number; n: number }>`
      SELECT (${sql.lit(Math.trunc(endMs))} - first_seen_ms) / ${sql.lit(Math.trunc(sizeMs))} AS bucket, COUNT(*) AS n
      FROM installations WHERE first_seen_ms > ${startMs} AND first_seen_ms <= ${endMs}
      GROUP BY (${sql.lit(Math.trunc(endMs))} - first_seen_ms) / ${sql.lit(Math.trunc(sizeMs))}`.execute(this.db);
    return new Map(rows.rows.map((r) => [Number(r.bucket), Number(r.n)]));
  }

  /** Installations with errors among those that submitted in the window, and the errors by code. */
  async errorsIn(startMs: number, endMs: number): Promise<{ byType: Map<string, number> }> {
    const rows = await this.db
      .selectFrom('submissions')
      .select('event_counts')
      .where('received_ms', '>', startMs)
      .where('received_ms', '<=', endMs)
      .where('error_count', '>', 0)
      .execute();
    const byType = new Map<string, number>();
    for (const row of rows) {
      for (const [key, n] of Object.entries(JSON.parse(row.event_counts) as Record<string, number>)) {
        if (key.startsWith('error_')) byType.set(key.slice(6), (byType.get(key.slice(6)) ?? 0) + n);
      }
    }
    return { byType };
  }

  async allInstallations(): Promise<Selectable<InstallationsTable>[]> {
    return this.db.selectFrom('installations').selectAll().orderBy('first_seen_ms').orderBy('installation_id').execute();
  }

  async allSubmissions(): Promise<StoredSubmission[]> {
    return (await this.db.selectFrom('submissions').selectAll().orderBy('id').execute()).map(parse);
  }
}
