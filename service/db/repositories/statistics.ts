/**
 * The statistics aggregations, all in SQL: read-only queries over jobs,
 * printers and files for a time range. A job belongs to the range of its
 * start (or of its creation when it never started), as in GET /jobs; the
 * expression `coalesce(start_time, created_at)` is written exactly as the
 * indexes of migration 004 spell it so that SQLite uses them.
 *
 * Every query is built as a CompiledQuery first: the service runs them, and
 * bench/stats.ts runs the very same SQL straight on better-sqlite3 as its
 * baseline.
 */
import { sql, type CompiledQuery, type RawBuilder } from 'kysely';
import type { Db } from '../connection';
import { flavourOf } from '../dialect';

/** [from, to) as ISO timestamps (UTC, the stored format), and `now` for jobs still running. */
export interface StatsRange {
  from: string;
  to: string;
  now: string;
}

/** The jobs of a range, summed per stored material_type (see `periodQuery`). */
export interface PeriodGroupRow {
  material: string | null;
  total_jobs: number;
  completed_jobs: number;
  failed_jobs: number;
  cancelled_jobs: number;
  total_print_time: number;
  timed_jobs: number;
  used_grams: number;
  /** Jobs that used some material. */
  using_jobs: number;
  material_cost: number;
  business_jobs: number;
  business_total_cost: number;
  /** Printing time of these jobs inside the range (see `periodQuery`). */
  busy_seconds: number;
}

export interface FileTotalsRow {
  total_files: number;
  downloaded_files: number;
  local_only_files: number;
  error_files: number;
  stored_bytes: number;
}

export interface QualityRow {
  rated_first_layers: number;
  good_first_layers: number;
  surface_quality: number | null;
  dimensional_accuracy: number | null;
}

/** Words (lower case) of the quality scale 1 (worst) to 5 (best); the digits 1 to 5 count too. */
export const QUALITY_SCALE: Record<string, number> = {
  excellent: 5,
  perfect: 5,
  good: 4,
  fair: 3,
  ok: 3,
  okay: 3,
  acceptable: 3,
  average: 3,
  poor: 2,
  bad: 1,
  fail: 1,
  failed: 1,
  terrible: 1,
};
/** A first layer with at least this score is a success. */
export const FIRST_LAYER_SUCCESS_SCORE = 3;

const WHEN = sql.raw('coalesce(start_time, created_at)');
/** Grams a job used: what was measured, else the estimate of a job that completed. */
const USED = sql.raw(`coalesce(material_actual_usage, CASE WHEN status = 'completed' THEN material_estimated_usage END)`);

/** The 1..5 score of a rating given as text (a word of QUALITY_SCALE or a digit), NULL for anything else. */
function score(text: RawBuilder<unknown>): RawBuilder<number | null> {
  const words = Object.entries(QUALITY_SCALE)
    .map(([word, n]) => `WHEN '${word}' THEN ${n}`)
    .join(' ');
  return sql`CASE lower(trim(${text})) ${sql.raw(words)} WHEN '1' THEN 1 WHEN '2' THEN 2 WHEN '3' THEN 3 WHEN '4' THEN 4 WHEN '5' THEN 5 END`;
}

/** Runs a compiled read-only query somewhere else than the main connection (the read worker). */
export interface QueryReader {
  all<R>(query: CompiledQuery<R>): Promise<R[]>;
}

export class StatisticsRepository {
  /** `reader`: where the aggregations run (default: the main connection, which blocks the event loop while they do). */
  constructor(
    private readonly db: Db,
    private readonly reader?: QueryReader,
  ) {}

  private inRange(r: StatsRange, printerId?: string) {
    const printer = printerId === undefined ? sql`` : sql`AND printer_id = ${printerId}`;
    return sql`${WHEN} >= ${r.from} AND ${WHEN} < ${r.to} ${printer}`;
  }

  /**
   * One pass over the jobs of a range (one index range scan), summed per stored material_type (the few
   * groups are merged by type, case and blanks aside, in `summarise`): counts, durations, material, money
   * and printing time. A job of the range started in it, so its printing time is its actual_duration when
   * it ended by min(to, now), else [start_time, end_time] (a running or paused job: until now) cut at
   * min(to, now); `edgeBusyQuery` adds the jobs that started before the range and printed into it.
   * Printing time counts for one printer, or for the active printers.
   */
  periodQuery(r: StatsRange, printerId?: string): CompiledQuery<PeriodGroupRow> {
    const until = r.to < r.now ? r.to : r.now;
    const f = flavourOf(this.db);
    const counted = printerId === undefined ? sql`printer_id IN (SELECT id FROM printers WHERE is_active = 1)` : sql`1 = 1`;
    const ranUntil = f.least(sql`coalesce(end_time, CASE WHEN status IN ('printing', 'paused') THEN ${r.now} END)`, sql`${until}`);
    return sql<PeriodGroupRow>`
      SELECT material_type AS material,
        count(*) AS total_jobs,
        coalesce(sum(CASE WHEN status = 'completed' THEN 1 ELSE 0 END), 0) AS completed_jobs,
        coalesce(sum(CASE WHEN status = 'failed' THEN 1 ELSE 0 END), 0) AS failed_jobs,
        coalesce(sum(CASE WHEN status = 'cancelled' THEN 1 ELSE 0 END), 0) AS cancelled_jobs,
        coalesce(sum(actual_duration), 0) AS total_print_time,
        count(actual_duration) AS timed_jobs,
        coalesce(sum(${USED}), 0) AS used_grams,
        count(CASE WHEN ${USED} > 0 THEN 1 END) AS using_jobs,
        coalesce(sum(material_cost), 0) AS material_cost,
        coalesce(sum(is_business), 0) AS business_jobs,
        coalesce(sum(CASE WHEN is_business = 1 THEN coalesce(material_cost, 0) + coalesce(power_cost, 0) + coalesce(labor_cost, 0) END), 0) AS business_total_cost,
        coalesce(sum(CASE WHEN ${counted} THEN
          CASE WHEN end_time <= ${until} AND actual_duration IS NOT NULL THEN actual_duration
          ELSE ${f.greatest(sql`0`, f.secondsBetween(sql`start_time`, ranUntil))} END
        END), 0) AS busy_seconds
      FROM jobs WHERE ${this.inRange(r, printerId)}
      GROUP BY material_type`.compile(this.db);
  }

  /**
   * Printing time inside [from, min(to, now)) of the jobs that started before `from` and ended after it
   * (or still run): two small index ranges over (end_time, start_time), no table scan.
   */
  edgeBusyQuery(r: StatsRange, printerId?: string): CompiledQuery<{ seconds: number }> {
    const until = r.to < r.now ? r.to : r.now;
    const f = flavourOf(this.db);
    const printers = printerId === undefined ? sql`printer_id IN (SELECT id FROM printers WHERE is_active = 1)` : sql`printer_id = ${printerId}`;
    const seconds = f.greatest(sql`0`, f.secondsBetween(sql`${r.from}`, f.least(sql`coalesce(end_time, ${r.now})`, sql`${until}`)));
    return sql<{ seconds: number }>`
      SELECT coalesce(sum(${seconds}), 0) AS seconds
      FROM (
        SELECT end_time FROM jobs WHERE end_time > ${r.from} AND start_time < ${r.from} AND ${printers}
        UNION ALL
        SELECT end_time FROM jobs WHERE end_time IS NULL AND start_time < ${r.from} AND status IN ('printing', 'paused') AND ${printers}
      ) AS edge`.compile(this.db);
  }

  /**
   * Seconds of [from, min(to, now)) the printer was up: connected by its status history (the state at `from` is
   * the last row at or before it, each row lasts until the next one) or printing by its jobs ([start_time,
   * end_time], a running or paused job until now, as in periodQuery). A printer that prints is up whether or not
   * the service watched it (before it was added, while the service was stopped, while the connection was down):
   * its printing time is part of its up time, so the printing time can't exceed it. Overlaps count once: the
   * spans in start order, each counting its part after the latest end before it. The jobs come from two index
   * ranges over (printer_id, end_time), as in edgeBusyQuery.
   */
  upSecondsQuery(r: StatsRange, printerId: string): CompiledQuery<{ seconds: number }> {
    const until = r.to < r.now ? r.to : r.now;
    const f = flavourOf(this.db);
    const clip = (start: RawBuilder<unknown>, end: RawBuilder<unknown>) => sql`${f.greatest(start, sql`${r.from}`)} AS s, ${f.least(end, sql`${until}`)} AS e`;
    const counted = f.greatest(sql`0`, f.secondsBetween(f.greatest(sql`s`, sql`coalesce(reached, s)`), sql`e`));
    return sql<{ seconds: number }>`
      WITH history AS (
        SELECT connection_status, at, lead(at) OVER (ORDER BY at, id) AS next_at
        FROM printer_status_history
        WHERE printer_id = ${printerId}
          AND at >= coalesce((SELECT max(at) FROM printer_status_history WHERE printer_id = ${printerId} AND at <= ${r.from}), ${r.from})
          AND at < ${until}
      ),
      spans AS (
        SELECT ${clip(sql`at`, sql`coalesce(next_at, ${until})`)} FROM history WHERE connection_status = 'connected'
        UNION ALL
        SELECT ${clip(sql`start_time`, sql`end_time`)} FROM jobs WHERE printer_id = ${printerId} AND end_time > ${r.from} AND start_time < ${until}
        UNION ALL
        SELECT ${clip(sql`start_time`, sql`${r.now}`)} FROM jobs
        WHERE printer_id = ${printerId} AND end_time IS NULL AND status IN ('printing', 'paused') AND start_time < ${until}
      ),
      ordered AS (
        SELECT s, e, max(e) OVER (ORDER BY s, e ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reached FROM spans WHERE s < e
      )
      SELECT coalesce(sum(${counted}), 0) AS seconds FROM ordered`.compile(this.db);
  }

  /**
   * Active printers, those of them connected now, and the seconds of [from, min(to, now)) they existed
   * (each from its creation): what their printing time is measured against.
   */
  printerCountsQuery(r: StatsRange): CompiledQuery<{ total_active: number; online_count: number; available_seconds: number }> {
    const until = r.to < r.now ? r.to : r.now;
    const f = flavourOf(this.db);
    const existed = f.greatest(sql`0`, f.secondsBetween(f.greatest(sql`${r.from}`, sql`created_at`), sql`${until}`));
    return sql<{ total_active: number; online_count: number; available_seconds: number }>`
      SELECT coalesce(sum(is_active), 0) AS total_active,
        coalesce(sum(CASE WHEN is_active = 1 AND connection_status = 'connected' THEN 1 ELSE 0 END), 0) AS online_count,
        coalesce(sum(CASE WHEN is_active = 1 THEN ${existed} END), 0) AS available_seconds
      FROM printers`.compile(this.db);
  }

  /** The file catalog as it is now. */
  fileTotalsQuery(): CompiledQuery<FileTotalsRow> {
    return sql<FileTotalsRow>`
      SELECT count(*) AS total_files,
        coalesce(sum(CASE WHEN status = 'downloaded' THEN 1 ELSE 0 END), 0) AS downloaded_files,
        coalesce(sum(CASE WHEN status = 'local' THEN 1 ELSE 0 END), 0) AS local_only_files,
        coalesce(sum(CASE WHEN status = 'error' THEN 1 ELSE 0 END), 0) AS error_files,
        coalesce(sum(CASE WHEN status IN ('downloaded', 'local') THEN file_size END), 0) AS stored_bytes
      FROM files`.compile(this.db);
  }

  /** Quality ratings of a printer's jobs in a range (see QUALITY_SCALE). */
  qualityQuery(r: StatsRange, printerId: string): CompiledQuery<QualityRow> {
    const f = flavourOf(this.db);
    const q = sql.ref('q');
    return sql<QualityRow>`
      SELECT count(first_layer) AS rated_first_layers,
        coalesce(sum(CASE WHEN first_layer >= ${FIRST_LAYER_SUCCESS_SCORE} THEN 1 ELSE 0 END), 0) AS good_first_layers,
        avg(surface) AS surface_quality,
        avg(accuracy) AS dimensional_accuracy
      FROM (
        SELECT ${score(f.jsonText(q, 'first_layer_adhesion'))} AS first_layer, ${score(f.jsonText(q, 'surface_finish'))} AS surface,
          ${f.jsonNumber(q, 'dimensional_accuracy')} AS accuracy
        FROM (
          SELECT ${f.json(sql.ref('quality_metrics'))} AS q FROM jobs WHERE ${this.inRange(r, printerId)} AND quality_metrics IS NOT NULL
        ) AS parsed WHERE q IS NOT NULL
      ) AS rated`.compile(this.db);
  }

  /** The queries behind the overview, in the order `overview()` runs them. */
  overviewQueries(r: StatsRange): CompiledQuery[] {
    return [this.periodQuery(r), this.edgeBusyQuery(r), this.printerCountsQuery(r), this.fileTotalsQuery()];
  }

  async overview(r: StatsRange) {
    const [groups, edge, printers, files] = await Promise.all([
      this.all(this.periodQuery(r)),
      this.one(this.edgeBusyQuery(r)),
      this.one(this.printerCountsQuery(r)),
      this.one(this.fileTotalsQuery()),
    ]);
    return { ...summarise(groups, Number(edge.seconds)), printers, files };
  }

  async printer(r: StatsRange, printerId: string) {
    const [groups, edge, quality, up] = await Promise.all([
      this.all(this.periodQuery(r, printerId)),
      this.one(this.edgeBusyQuery(r, printerId)),
      this.one(this.qualityQuery(r, printerId)),
      this.one(this.upSecondsQuery(r, printerId)),
    ]);
    return { ...summarise(groups, Number(edge.seconds)), quality, upSeconds: Number(up.seconds) };
  }

  private async all<R>(query: CompiledQuery<R>): Promise<R[]> {
    if (this.reader) return this.reader.all(query);
    return (await this.db.executeQuery(query)).rows;
  }

  private async one<R>(query: CompiledQuery<R>): Promise<R> {
    const [row] = await this.all(query);
    return row;
  }
}

export interface MaterialUse {
  material: string | null;
  used_grams: number;
  jobs: number;
}

/**
 * The per-material_type rows added up, and the material use by type: types compared without case and
 * surrounding blanks and named by their first spelling in sort order; jobs of no type count in the `null`
 * entry when they used material. Heaviest first (ties: more jobs, then by name; no type last).
 */
function summarise(groups: PeriodGroupRow[], edgeBusySeconds: number) {
  const totals = {
    total_jobs: 0,
    completed_jobs: 0,
    failed_jobs: 0,
    cancelled_jobs: 0,
    total_print_time: 0,
    timed_jobs: 0,
    used_grams: 0,
    material_cost: 0,
    business_jobs: 0,
    business_total_cost: 0,
  };
  let busySeconds = edgeBusySeconds;
  const byType = new Map<string | null, MaterialUse>();
  for (const g of groups) {
    for (const key of Object.keys(totals) as (keyof typeof totals)[]) totals[key] += Number(g[key]);
    busySeconds += Number(g.busy_seconds);
    const name = g.material?.trim() || null;
    const jobs = name === null ? Number(g.using_jobs) : Number(g.total_jobs);
    if (jobs === 0) continue;
    const key = name?.toLowerCase() ?? null;
    const entry = byType.get(key);
    if (!entry) byType.set(key, { material: name, used_grams: Number(g.used_grams), jobs });
    else {
      entry.used_grams += Number(g.used_grams);
      entry.jobs += jobs;
      if (name !== null && name < entry.material!) entry.material = name;
    }
  }
  const materials = [...byType.values()].sort(
    (a, b) =>
      b.used_grams - a.used_grams ||
      b.jobs - a.jobs ||
      Number(a.material === null) - Number(b.material === null) ||
      (a.material! < b.material! ? -1 : a.material! > b.material! ? 1 : 0),
  );
  return { totals, materials, busySeconds };
}
