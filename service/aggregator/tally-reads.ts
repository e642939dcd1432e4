/**
 * The /stats breakdowns by values a sender chooses (versions, deployment modes, printer types, printer counts),
 * counted and cut in SQL: whatever a sender population sends, a view reads a bounded number of rows, the
 * `top` largest and what the rest add up to (as the error and feature tallies of reads.ts). Grouping in
 * SQL and parsing each group in the process read one row per distinct value, which senders decide.
 */
import { sql } from 'kysely';
import { flavourOf } from '../db/dialect';
import { AggregatorReads, jsonEntries, topTally, type TopTally } from './reads';

/** The fleet-size buckets of /stats/printers: each holds the printer counts up to its `max` (the last, all above). */
export const FLEET_SIZES = [
  { size: '0', max: 0 },
  { size: '1', max: 1 },
  { size: '2-5', max: 5 },
  { size: '6-10', max: 10 },
  { size: '11-50', max: 50 },
  { size: '51+', max: null },
] as const;

/** The fleets of the installations active in a window, by their latest submission. */
export interface FleetStats {
  installations: number;
  printers: number;
  max: number;
  median: number;
  sizes: { size: (typeof FLEET_SIZES)[number]['size']; installations: number }[];
}

const lit = (n: number) => sql.lit(Math.trunc(n));

export class TallyReads extends AggregatorReads {
  /**
   * The installations active in (startMs, endMs] per value of one field of their latest submission, with
   * their printers: the `top` values with the most installations, and the rest in sum.
   */
  async latestTally(startMs: number, endMs: number, field: 'app_version' | 'deployment_mode' | 'country_code', top: number): Promise<TopTally<{ installations: number; printers: number }>> {
    const { rows } = await sql<{ name: string; installations: number; printers: number; names: number; all_installations: number; all_printers: number }>`
      SELECT name, installations, printers, COUNT(*) OVER () AS names, SUM(installations) OVER () AS all_installations, SUM(printers) OVER () AS all_printers FROM (
        SELECT ${sql.ref(field)} AS name, COUNT(*) AS installations, COALESCE(SUM(printer_count), 0) AS printers
        FROM (${this.latestInWindow(startMs, endMs)}) l GROUP BY ${sql.ref(field)}
      ) per_value ORDER BY installations DESC, ${flavourOf(this.db).sortKey(sql.ref('name'))} LIMIT ${lit(top)}`.execute(this.db);
    return topTally(rows, ['installations', 'printers']);
  }

  /**
   * Printers and installations (with at least one of it) per printer type, by the latest submission of each
   * installation active in (startMs, endMs]: the `top` types with the most printers, and the rest in sum.
   * Each distinct printer_type_counts text is taken apart once, weighted by how many share it (jsonEntries).
   */
  async printerTypeTally(startMs: number, endMs: number, top: number): Promise<TopTally<{ printers: number; installations: number }>> {
    const j = jsonEntries(this.db, sql`l.printer_type_counts`);
    const { rows } = await sql<{ name: string; printers: number; installations: number; names: number; all_printers: number; all_installations: number }>`
      SELECT name, printers, installations, COUNT(*) OVER () AS names, SUM(printers) OVER () AS all_printers, SUM(installations) OVER () AS all_installations FROM (
        SELECT j.key AS name, SUM(${j.number} * l.n) AS printers, SUM(CASE WHEN ${j.number} > 0 THEN l.n ELSE 0 END) AS installations
        FROM (SELECT printer_type_counts, COUNT(*) AS n FROM (${this.latestInWindow(startMs, endMs)}) latest GROUP BY printer_type_counts) l, ${j.from} GROUP BY j.key
      ) per_type ORDER BY printers DESC, ${flavourOf(this.db).sortKey(sql.ref('name'))} LIMIT ${lit(top)}`.execute(this.db);
    return topTally(rows, ['printers', 'installations']);
  }

  /**
   * Fleet sizes of the installations active in (startMs, endMs] in one row: totals, largest, median and the
   * FLEET_SIZES histogram. The median is the printer count at the middle position(s) of the running sum over
   * the distinct counts (2 * running > total - 1 and > total: positions floor((n - 1) / 2) and floor(n / 2)),
   * so no division, whose result differs between the dialects.
   */
  async fleetStats(startMs: number, endMs: number): Promise<FleetStats> {
    const buckets = FLEET_SIZES.map(({ max }, i) => {
      const above = i ? sql`c > ${lit(FLEET_SIZES[i - 1].max!)}` : sql`1 = 1`;
      const upTo = max === null ? sql`1 = 1` : sql`c <= ${lit(max)}`;
      return sql`COALESCE(SUM(CASE WHEN ${above} AND ${upTo} THEN n ELSE 0 END), 0) AS ${sql.ref(`size_${i}`)}`;
    });
    const { rows } = await sql<Record<string, number | null>>`
      WITH sizes AS (SELECT printer_count AS c, COUNT(*) AS n FROM (${this.latestInWindow(startMs, endMs)}) l GROUP BY printer_count),
      running AS (SELECT c, n, SUM(n) OVER (ORDER BY c) AS cum, SUM(n) OVER () AS total FROM sizes)
      SELECT COALESCE(SUM(n), 0) AS installations, COALESCE(SUM(c * n), 0) AS printers, COALESCE(MAX(c), 0) AS max,
        MIN(CASE WHEN 2 * cum > total - 1 THEN c END) AS median_low, MIN(CASE WHEN 2 * cum > total THEN c END) AS median_high, ${sql.join(buckets)}
      FROM running`.execute(this.db);
    const r = rows[0];
    return {
      installations: Number(r.installations),
      printers: Number(r.printers),
      max: Number(r.max),
      median: r.median_low === null ? 0 : (Number(r.median_low) + Number(r.median_high)) / 2,
      sizes: FLEET_SIZES.map(({ size }, i) => ({ size, installations: Number(r[`size_${i}`]) })),
    };
  }

  /**
   * Per bucket (as latestPerBucketGroups) and version: installations by their latest submission in the
   * bucket, for the `top` versions with the most of them over all buckets only (at most buckets x top rows),
   * plus one row per bucket (name null) with all its installations and how many versions it had, and how
   * many versions there were in all.
   */
  async versionTrendTally(endMs: number, sizeMs: number, buckets: number, top: number) {
    const { rows } = await sql<{ bucket: number; name: string | null; installations: number; names: number; all_names: number }>`
      WITH latest AS (${this.latestPerBucket('app_version', endMs, sizeMs, buckets)}), per AS (
        SELECT bucket, app_version AS name, COUNT(*) AS installations FROM latest GROUP BY bucket, app_version
      ), chosen AS (
        SELECT name FROM per GROUP BY name ORDER BY SUM(installations) DESC, ${flavourOf(this.db).sortKey(sql.ref('name'))} LIMIT ${lit(top)}
      )
      SELECT bucket, name, installations, 0 AS names, (SELECT COUNT(DISTINCT name) FROM per) AS all_names FROM per WHERE name IN (SELECT name FROM chosen)
      UNION ALL
      SELECT bucket, NULL, SUM(installations), COUNT(*), (SELECT COUNT(DISTINCT name) FROM per) FROM per GROUP BY bucket`.execute(this.db);
    const named = rows.filter((r) => r.name !== null);
    return {
      rows: named.map((r) => ({ bucket: Number(r.bucket), name: r.name as string, installations: Number(r.installations) })),
      perBucket: new Map(rows.filter((r) => r.name === null).map((r) => [Number(r.bucket), { installations: Number(r.installations), names: Number(r.names) }])),
      names: rows.length ? Number(rows[0].all_names) : 0,
    };
  }
}
