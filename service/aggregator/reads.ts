/**
 * The read queries of the /stats views. Windows are (start, end] in epoch ms; buckets count back from `end`
 * by integer division (the end and the bucket size go in as integer literals: bound JS numbers are REAL in
 * SQLite and would divide to fractions).
 *
 * What they read instead of rescanning every submission (derived-schema.ts):
 *  - the latest submission of each installation active in a window comes from latest_submissions; an
 *    installation whose latest submission is newer than the window's end (only when the window ends
 *    before the newest submission) gets its latest one inside the window from the submissions;
 *  - counter sums take whole UTC days from daily_totals and the window's ragged ends from the submissions.
 */
import { sql, type RawBuilder, type Selectable } from 'kysely';
import type { AggregatorDb, DailyTotalsTable, InstallationsTable, SubmissionsTable } from './db';
import { dialectOf, flavourOf } from '../db/dialect';
import { DAILY_COUNTERS, DAY_MS, LATEST_FIELDS } from './derived-schema';

/** A submissions row with its JSON columns parsed. */
export type StoredSubmission = Omit<Selectable<SubmissionsTable>, keyof SubmissionJson> & SubmissionJson;
interface SubmissionJson {
  printer_types: string[];
  printer_type_counts: Record<string, number>;
  feature_usage: Record<string, boolean>;
  event_counts: Record<string, number>;
}

export const parseSubmission = (row: Selectable<SubmissionsTable>): StoredSubmission => ({
  ...row,
  printer_types: JSON.parse(row.printer_types),
  printer_type_counts: JSON.parse(row.printer_type_counts),
  feature_usage: JSON.parse(row.feature_usage),
  event_counts: JSON.parse(row.event_counts),
});

/** Counters summed over submissions: a day of daily_totals without its day. */
export type Totals = Omit<DailyTotalsTable, 'day'>;

export interface BucketRow {
  bucket: number;
  active: number;
  submissions: number;
  errors: number;
  with_errors: number;
}

export type LatestField = (typeof LATEST_FIELDS)[number];

/** The largest few of a tally counted in SQL, and what the rest add up to. */
export interface TopTally<C> {
  shown: ({ name: string } & C)[];
  rest: { names: number } & C;
}

/**
 * A tally's rows as a TopTally: each row holds its `measures`, and, from window functions over the whole
 * grouping, how many names there are (`names`) and each measure's total over all of them (`all_<measure>`).
 */
export function topTally<M extends string>(rows: readonly Record<string, unknown>[], measures: readonly M[], nameOf = (row: Record<string, unknown>) => String(row.name)): TopTally<Record<M, number>> {
  const shown = rows.map((row) => {
    const entry: Record<string, unknown> = { name: nameOf(row) };
    for (const m of measures) entry[m] = Number(row[m]);
    return entry as { name: string } & Record<M, number>;
  });
  const first = rows[0];
  const rest: Record<string, number> = { names: first ? Number(first.names) - rows.length : 0 };
  for (const m of measures) rest[m] = first ? Number(first[`all_${m}`]) - shown.reduce((n, r) => n + r[m], 0) : 0;
  return { shown, rest: rest as { names: number } & Record<M, number> };
}

/**
 * The entries of a JSON object text column as rows of `j` (key and value), joined after a comma: SQLite's
 * json_each, PostgreSQL's jsonb_each (a function in FROM may use the tables before it there). The callers
 * group the rows by the JSON text first and weight each entry by its group's count: PostgreSQL parses
 * every text it casts to jsonb, and most rows share a few texts (per row, /stats/features took 0.5 s at
 * 10^5 installations on PostgreSQL, docs/measurements.md).
 */
export function jsonEntries(db: AggregatorDb, column: RawBuilder<unknown>) {
  const postgres = dialectOf(db) === 'postgres';
  return {
    from: postgres ? sql`jsonb_each(CAST(${column} AS jsonb)) AS j(key, value)` : sql`json_each(${column}) AS j`,
    isTrue: postgres ? sql`j.value = 'true'::jsonb` : sql`j.type = 'true'`,
    number: postgres ? sql`CAST(j.value #>> '{}' AS BIGINT)` : sql`j.value`,
  };
}

/** A group of installations whose latest submissions agree on the grouped fields: how many, and their printers. */
export type LatestGroup<K extends LatestField> = { [P in K]: P extends 'printer_count' ? number : string } & { installations: number; printers: number };

const lit = (n: number) => sql.lit(Math.trunc(n));
/** Up to this many buckets, each is a query part of its own (see buckets()). */
const MAX_UNION_BUCKETS = 60;
const EMPTY_TOTALS: Totals = { jobs_created: 0, jobs_completed: 0, jobs_failed: 0, files_downloaded: 0, files_uploaded: 0, uptime_hours: 0, errors: 0, submissions: 0 };

export class AggregatorReads {
  constructor(protected readonly db: AggregatorDb) {}

  async installationCount(): Promise<number> {
    const { n } = await this.db.selectFrom('installations').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    return Number(n);
  }

  /** Installations that submitted in (startMs, endMs]: those whose latest submission is in it, plus those with a later one and one in it. */
  async activeCount(startMs: number, endMs: number): Promise<number> {
    const { rows } = await sql<{ n: number }>`
      SELECT (SELECT COUNT(*) FROM latest_submissions WHERE received_ms > ${startMs} AND received_ms <= ${endMs})
        + (SELECT COUNT(*) FROM latest_submissions l WHERE l.received_ms > ${endMs} AND EXISTS (
            SELECT 1 FROM submissions s WHERE s.installation_id = l.installation_id AND s.received_ms > ${startMs} AND s.received_ms <= ${endMs})) AS n`.execute(this.db);
    return Number(rows[0].n);
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
  async totals(startMs?: number, endMs?: number): Promise<Totals> {
    if (startMs === undefined || endMs === undefined) return this.dailyTotals();
    // Day d holds [d * DAY, (d + 1) * DAY); the whole days in the window are first..last.
    const first = Math.floor(startMs / DAY_MS) + 1;
    const last = Math.floor((endMs + 1) / DAY_MS) - 1;
    if (first > last) return this.rawTotals(startMs, endMs);
    const parts = await Promise.all([this.dailyTotals(first, last), this.rawTotals(startMs, first * DAY_MS - 1), this.rawTotals((last + 1) * DAY_MS - 1, endMs)]);
    return parts.reduce((sum, part) => Object.fromEntries(Object.entries(sum).map(([k, v]) => [k, v + part[k as keyof Totals]])) as unknown as Totals, EMPTY_TOTALS);
  }

  private async dailyTotals(firstDay?: number, lastDay?: number): Promise<Totals> {
    let query = this.db
      .selectFrom('daily_totals')
      .select((eb) => [eb.fn.coalesce(eb.fn.sum<number>('submissions'), sql<number>`0`).as('submissions'), ...DAILY_COUNTERS.map(([column]) => eb.fn.coalesce(eb.fn.sum<number>(column), sql<number>`0`).as(column))]);
    if (firstDay !== undefined && lastDay !== undefined) query = query.where('day', '>=', firstDay).where('day', '<=', lastDay);
    return numbers(await query.executeTakeFirstOrThrow());
  }

  private async rawTotals(startMs: number, endMs: number): Promise<Totals> {
    if (endMs <= startMs) return EMPTY_TOTALS;
    const row = await this.db
      .selectFrom('submissions')
      .select((eb) => [eb.fn.countAll<number>().as('submissions'), ...DAILY_COUNTERS.map(([to, from]) => eb.fn.coalesce(eb.fn.sum<number>(from), sql<number>`0`).as(to))])
      .where('received_ms', '>', startMs)
      .where('received_ms', '<=', endMs)
      .executeTakeFirstOrThrow();
    return numbers(row);
  }

  async receivedRange(): Promise<{ first: number | null; last: number | null }> {
    // Two queries: SQLite reads a lone MIN or MAX off the index, both in one query scan the table.
    const [first, last] = await Promise.all([
      this.db.selectFrom('submissions').select((eb) => eb.fn.min('received_ms').as('v')).executeTakeFirstOrThrow(),
      this.db.selectFrom('submissions').select((eb) => eb.fn.max('received_ms').as('v')).executeTakeFirstOrThrow(),
    ]);
    return { first: first.v === null ? null : Number(first.v), last: last.v === null ? null : Number(last.v) };
  }

  /** The latest submission in (startMs, endMs] of every installation that submitted then, as the fields of latest_submissions. */
  /**
   * Each installation's latest submission per bucket of `sizeMs` ending at endMs (bucket 0 the newest), over
   * `buckets` buckets: the bucket and `column` of each, for the trend tallies.
   */
  protected latestPerBucket(column: 'feature_usage' | 'app_version', endMs: number, sizeMs: number, buckets: number): RawBuilder<unknown> {
    const bucket = sql`(${lit(endMs)} - received_ms) / ${lit(sizeMs)}`;
    const value = sql.ref(column);
    return sql`SELECT bucket, ${value} FROM (
          SELECT ${bucket} AS bucket, ${value}, ROW_NUMBER() OVER (PARTITION BY ${bucket}, installation_id ORDER BY received_ms DESC, id DESC) AS rn
          FROM submissions WHERE received_ms > ${endMs - buckets * sizeMs} AND received_ms <= ${endMs}
        ) ranked WHERE rn = 1`;
  }

  protected latestInWindow(startMs: number, endMs: number): RawBuilder<unknown> {
    const fields = sql.raw(['installation_id', ...LATEST_FIELDS].join(', '));
    return sql`SELECT ${fields} FROM latest_submissions WHERE received_ms > ${startMs} AND received_ms <= ${endMs}
      UNION ALL
      SELECT ${fields} FROM submissions WHERE id IN (
        SELECT (SELECT s.id FROM submissions s WHERE s.installation_id = l.installation_id AND s.received_ms > ${startMs} AND s.received_ms <= ${endMs}
          ORDER BY s.received_ms DESC, s.id DESC LIMIT 1)
        FROM latest_submissions l WHERE l.received_ms > ${endMs})`;
  }

  /**
   * The installations active in (startMs, endMs] grouped by fields of their latest submission there, the
   * groups in the order of their first installation id (the order the views tallied rows in).
   */
  async latestGroups<K extends LatestField>(startMs: number, endMs: number, by: readonly K[]): Promise<LatestGroup<K>[]> {
    const columns = by.map((c) => sql.ref(c));
    const select = columns.length ? sql`${sql.join(columns)}, ` : sql``;
    const groupBy = columns.length ? sql`GROUP BY ${sql.join(columns)}` : sql``;
    const { rows } = await sql<Record<string, string | number>>`
      SELECT ${select}COUNT(*) AS installations, COALESCE(SUM(printer_count), 0) AS printers, MIN(installation_id) AS first_id
      FROM (${this.latestInWindow(startMs, endMs)}) latest ${groupBy} ORDER BY first_id`.execute(this.db);
    return rows
      .filter((r) => Number(r.installations) > 0)
      .map(({ first_id: _first, ...r }) => ({ ...r, installations: Number(r.installations), printers: Number(r.printers), ...('printer_count' in r ? { printer_count: Number(r.printer_count) } : {}) }) as unknown as LatestGroup<K>);
  }

  /**
   * The latest submission per (bucket, installation) in (endMs - buckets * sizeMs, endMs] (bucket 0 the
   * newest), counted per bucket and value of one field. Only the bucket, installation and field go
   * through the window function's sort, not whole rows with their JSON (66 s at 10^6 on SQLite).
   */
  async latestPerBucketGroups<F extends 'app_version' | 'feature_usage'>(endMs: number, sizeMs: number, buckets: number, field: F): Promise<({ bucket: number; installations: number } & Record<F, string>)[]> {
    const startMs = endMs - buckets * sizeMs;
    const bucket = sql`(${lit(endMs)} - received_ms) / ${lit(sizeMs)}`;
    const { rows } = await sql<{ bucket: number; installations: number } & Record<F, string>>`
      SELECT bucket, ${sql.ref(field)}, COUNT(*) AS installations, MIN(installation_id) AS first_id FROM (
        SELECT ${bucket} AS bucket, installation_id, ${sql.ref(field)},
          ROW_NUMBER() OVER (PARTITION BY ${bucket}, installation_id ORDER BY received_ms DESC, id DESC) AS rn
        FROM submissions WHERE received_ms > ${startMs} AND received_ms <= ${endMs}
      ) latest WHERE rn = 1 GROUP BY bucket, ${sql.ref(field)} ORDER BY first_id`.execute(this.db);
    return rows.map(({ first_id: _first, ...r }: { first_id?: string } & (typeof rows)[number]) => ({ ...r, bucket: Number(r.bucket), installations: Number(r.installations) }) as (typeof rows)[number]);
  }

  /**
   * Per bucket: active installations, submissions, errors and installations with errors. Each bucket is
   * its own range of the cover index with its own small distinct counts, the buckets one UNION ALL
   * (PostgreSQL runs its parts in parallel); a long daily timeline (over MAX_UNION_BUCKETS) is one
   * grouped scan instead, one group per (bucket, installation) first.
   */
  async buckets(endMs: number, sizeMs: number, buckets: number): Promise<BucketRow[]> {
    const startMs = endMs - buckets * sizeMs;
    const query =
      buckets <= MAX_UNION_BUCKETS
        ? sql.join(
            Array.from({ length: buckets }, (_, bucket) => {
              const [from, to] = [lit(endMs - (bucket + 1) * sizeMs), lit(endMs - bucket * sizeMs)];
              return sql`SELECT ${sql.lit(bucket)} AS bucket, COUNT(DISTINCT installation_id) AS active, COUNT(*) AS submissions, COALESCE(SUM(error_count), 0) AS errors,
                (SELECT COUNT(DISTINCT installation_id) FROM submissions WHERE error_count > 0 AND received_ms > ${from} AND received_ms <= ${to}) AS with_errors
                FROM submissions WHERE received_ms > ${from} AND received_ms <= ${to}`;
            }),
            sql` UNION ALL `,
          )
        : sql`SELECT bucket, COUNT(*) AS active, SUM(n) AS submissions, SUM(e) AS errors, SUM(CASE WHEN m > 0 THEN 1 ELSE 0 END) AS with_errors
          FROM (
            SELECT (${lit(endMs)} - received_ms) / ${lit(sizeMs)} AS bucket, installation_id, COUNT(*) AS n, SUM(error_count) AS e, MAX(error_count) AS m
            FROM submissions WHERE received_ms > ${startMs} AND received_ms <= ${endMs}
            GROUP BY (${lit(endMs)} - received_ms) / ${lit(sizeMs)}, installation_id
          ) per_installation GROUP BY bucket`;
    const rows = await sql<BucketRow>`${query}`.execute(this.db);
    return rows.rows
      .map((r) => ({ bucket: Number(r.bucket), active: Number(r.active), submissions: Number(r.submissions), errors: Number(r.errors), with_errors: Number(r.with_errors) }))
      .filter((r) => r.submissions > 0);
  }

  /** Installations that reported errors in (startMs, endMs]. */
  async withErrorsCount(startMs: number, endMs: number): Promise<number> {
    const { n } = await this.db
      .selectFrom('submissions')
      .select(sql<number>`COUNT(DISTINCT installation_id)`.as('n'))
      .where('received_ms', '>', startMs)
      .where('received_ms', '<=', endMs)
      .where('error_count', '>', 0)
      .executeTakeFirstOrThrow();
    return Number(n);
  }

  /** Installations first seen per bucket. */
  async newPerBucket(endMs: number, sizeMs: number, buckets: number): Promise<Map<number, number>> {
    const startMs = endMs - buckets * sizeMs;
    const rows = await sql<{ bucket: number; n: number }>`
      SELECT (${lit(endMs)} - first_seen_ms) / ${lit(sizeMs)} AS bucket, COUNT(*) AS n
      FROM installations WHERE first_seen_ms > ${startMs} AND first_seen_ms <= ${endMs}
      GROUP BY (${lit(endMs)} - first_seen_ms) / ${lit(sizeMs)}`.execute(this.db);
    return new Map(rows.rows.map((r) => [Number(r.bucket), Number(r.n)]));
  }

  /**
   * The error counters by code (event_counts `error_<code>`) of the submissions with errors in (startMs,
   * endMs], added up in SQL: the `top` largest, and how many codes and counts the rest hold. Codes are
   * whatever senders name them, so only the top few may come back as rows (the whole list grew with
   * every new name, one JS object per distinct event_counts text).
   */
  async errorTypes(startMs: number, endMs: number, top: number): Promise<TopTally<{ count: number }>> {
    const j = jsonEntries(this.db, sql`s.event_counts`);
    const { rows } = await sql<{ name: string; count: number; names: number; all_count: number }>`
      SELECT name, count, COUNT(*) OVER () AS names, SUM(count) OVER () AS all_count FROM (
        SELECT j.key AS name, SUM(${j.number} * s.n) AS count FROM (
          SELECT event_counts, COUNT(*) AS n FROM submissions WHERE received_ms > ${startMs} AND received_ms <= ${endMs} AND error_count > 0 GROUP BY event_counts
        ) s, ${j.from} WHERE substr(j.key, 1, 6) = 'error_' GROUP BY j.key
      ) per_code ORDER BY count DESC, ${flavourOf(this.db).sortKey(sql.ref('name'))} LIMIT ${sql.lit(Math.trunc(top))}`.execute(this.db);
    return topTally(rows, ['count'], (row) => String(row.name).slice(6));
  }

  /**
   * Enabled and disabled installations per feature, by the latest submission of each installation active
   * in (startMs, endMs], counted in SQL: the `top` features most often enabled, and the rest in sum.
   */
  async featureTally(startMs: number, endMs: number, top: number): Promise<TopTally<{ enabled: number; disabled: number }>> {
    const j = jsonEntries(this.db, sql`l.feature_usage`);
    const { rows } = await sql<{ name: string; enabled: number; disabled: number; names: number; all_enabled: number; all_disabled: number }>`
      SELECT name, enabled, disabled, COUNT(*) OVER () AS names, SUM(enabled) OVER () AS all_enabled, SUM(disabled) OVER () AS all_disabled FROM (
        SELECT j.key AS name, SUM(CASE WHEN ${j.isTrue} THEN l.n ELSE 0 END) AS enabled, SUM(CASE WHEN ${j.isTrue} THEN 0 ELSE l.n END) AS disabled
        FROM (SELECT feature_usage, COUNT(*) AS n FROM (${this.latestInWindow(startMs, endMs)}) latest GROUP BY feature_usage) l, ${j.from} GROUP BY j.key
      ) per_feature ORDER BY enabled DESC, ${flavourOf(this.db).sortKey(sql.ref('name'))} LIMIT ${sql.lit(Math.trunc(top))}`.execute(this.db);
    return topTally(rows, ['enabled', 'disabled']);
  }

  /**
   * Per bucket (as latestPerBucketGroups) and feature: enabled and disabled installations by their latest
   * submission in the bucket, for the `top` features most often enabled over all buckets only (at most
   * buckets x top rows), with how many features there were in all.
   */
  async featureTrendTally(endMs: number, sizeMs: number, buckets: number, top: number) {
    const j = jsonEntries(this.db, sql`g.feature_usage`);
    const { rows } = await sql<{ bucket: number; name: string; enabled: number; disabled: number; names: number }>`
      WITH latest AS (${this.latestPerBucket('feature_usage', endMs, sizeMs, buckets)}), per AS (
        SELECT g.bucket AS bucket, j.key AS name, SUM(CASE WHEN ${j.isTrue} THEN g.n ELSE 0 END) AS enabled, SUM(CASE WHEN ${j.isTrue} THEN 0 ELSE g.n END) AS disabled
        FROM (SELECT bucket, feature_usage, COUNT(*) AS n FROM latest GROUP BY bucket, feature_usage) g, ${j.from} GROUP BY g.bucket, j.key
      ), chosen AS (
        SELECT name FROM per GROUP BY name ORDER BY SUM(enabled) DESC, ${flavourOf(this.db).sortKey(sql.ref('name'))} LIMIT ${sql.lit(Math.trunc(top))}
      )
      SELECT bucket, name, enabled, disabled, (SELECT COUNT(DISTINCT name) FROM per) AS names FROM per WHERE name IN (SELECT name FROM chosen)`.execute(this.db);
    return {
      rows: rows.map((r) => ({ bucket: Number(r.bucket), name: r.name, enabled: Number(r.enabled), disabled: Number(r.disabled) })),
      names: rows.length ? Number(rows[0].names) : 0,
    };
  }

  async allSubmissions(): Promise<StoredSubmission[]> {
    return (await this.db.selectFrom('submissions').selectAll().orderBy('id').execute()).map(parseSubmission);
  }

  /** Up to `limit` installations after `after` in the export's order (first seen, then id). */
  async installationsPage(after: { first_seen_ms: number; installation_id: string } | null, limit: number): Promise<Selectable<InstallationsTable>[]> {
    let query = this.db.selectFrom('installations').selectAll().orderBy('first_seen_ms').orderBy('installation_id').limit(limit);
    if (after) {
      query = query.where((eb) =>
        eb.or([eb('first_seen_ms', '>', after.first_seen_ms), eb.and([eb('first_seen_ms', '=', after.first_seen_ms), eb('installation_id', '>', after.installation_id)])]),
      );
    }
    return (await query.execute()).map((r) => ({ ...r, first_seen_ms: Number(r.first_seen_ms), last_seen_ms: Number(r.last_seen_ms) }));
  }

  /** Up to `limit` submissions with an id above `afterId`, by id. */
  async submissionsPage(afterId: number, limit: number): Promise<StoredSubmission[]> {
    return (await this.db.selectFrom('submissions').selectAll().where('id', '>', afterId).orderBy('id').limit(limit).execute()).map(parseSubmission);
  }
}

function numbers(row: object): Totals {
  return Object.fromEntries(Object.entries(row).map(([k, v]) => [k, Number(v)])) as unknown as Totals;
}
