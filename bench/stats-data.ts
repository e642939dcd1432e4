/**
 * bench/stats's data: 8 active printers, 2000 catalogued files and jobs spread over the last 730
 * days, written by the database itself (INSERT ... SELECT over a sequence of row numbers: a
 * recursive CTE in SQLite, generate_series in PostgreSQL), so that 10^7 jobs take minutes, not
 * hours. Every value is integer arithmetic on the row number (a hash per column), the same in both
 * databases: the same farm, row for row, on SQLite and PostgreSQL, in every run.
 *
 * A batch of n jobs covers the whole span in time order (as a farm writes them); sizes grow by
 * adding batches. Of the jobs 85% completed, 8% failed, 5% cancelled, 2% queued; 5 materials (5%
 * none), a third business.
 */
import type BetterSqlite3 from 'better-sqlite3';
import type pg from 'pg';

export type SeedDialect = 'sqlite' | 'postgres';

const PRINTERS = 8;
const FILES = 2000;
const SPAN_MS = 730 * 86_400_000;
const MATERIALS = ['PLA', 'PETG', 'ABS', 'ASA', 'TPU'];
/** Rows per statement (and per transaction): bounded WAL on SQLite, progress lines on both. */
export const CHUNK = 500_000;

// A hash per column: ((g * A + C) mod P)^2 mod P, P the Mersenne prime 2^31 - 1; every product stays below 2^63.
const P = 2147483647;
const MULTIPLIERS = [1103515245, 48271, 69621, 16807, 39373, 630360016, 742938285, 950706376, 1226874159, 62089911];

/** SQL text of the timestamp `ms` (milliseconds since 1970) as the service stores it: ISO 8601 UTC with milliseconds. */
function iso(dialect: SeedDialect, ms: string): string {
  return dialect === 'sqlite'
    ? `strftime('%Y-%m-%dT%H:%M:%fZ', (${ms}) / 1000.0, 'unixepoch')`
    : `to_char(to_timestamp((${ms})::float8 / 1000) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
}

/** A CTE `seq(j)` of the rows j = lo .. hi - 1 (to go first in a WITH list), or null and a FROM item for it. */
function sequence(dialect: SeedDialect, lo: number, hi: number): { cte: string | null; from: string } {
  return dialect === 'sqlite'
    ? { cte: `seq(j) AS (SELECT ${lo} UNION ALL SELECT j + 1 FROM seq WHERE j + 1 < ${hi})`, from: 'seq' }
    : { cte: null, from: `generate_series(${lo}::bigint, ${hi - 1}::bigint) AS seq(j)` };
}

/** `WITH [RECURSIVE] ...` of the sequence and `ctes`. */
function withList(dialect: SeedDialect, seq: { cte: string | null }, ctes: string[] = []): string {
  const all = seq.cte ? [seq.cte, ...ctes] : ctes;
  return all.length ? `WITH ${dialect === 'sqlite' ? 'RECURSIVE ' : ''}${all.join(',\n')}` : '';
}

/** The 8 printers and 2000 files, in two statements. */
export function fleetSql(dialect: SeedDialect, now = new Date()): string[] {
  const at = now.toISOString();
  const created = new Date(now.getTime() - SPAN_MS - 30 * 86_400_000).toISOString();
  // Added to the farm after the service started: the fleet runs no driver for them.
  const printers = Array.from({ length: PRINTERS }, (_, p) => {
    const online = p % 3 !== 0;
    return `('bench-${p}', 'Bench ${p}', 'bambu_lab', '10.0.0.1', 1, '${online ? 'online' : 'offline'}', '${online ? 'connected' : 'disconnected'}', '${created}', '${at}')`;
  });
  const seq = sequence(dialect, 0, FILES);
  return [
    `INSERT INTO printers (id, name, type, ip_address, is_active, status, connection_status, created_at, updated_at) VALUES ${printers.join(', ')}`,
    `${withList(dialect, seq)} INSERT INTO files (id, printer_id, filename, file_type, file_size, status, created_at, updated_at)
     SELECT 'file-' || j, 'bench-' || (j % ${PRINTERS}), 'part_' || j || '.3mf', '.3mf', (j * 2654435761) % 50000000,
       CASE j % 5 WHEN 0 THEN 'available' WHEN 1 THEN 'downloaded' WHEN 2 THEN 'downloaded' WHEN 3 THEN 'local' ELSE 'error' END, '${at}', '${at}'
     FROM ${seq.from}`,
  ];
}

export interface JobBatch {
  /** Row number of the batch's first job (the hashes' input: a batch at another offset gives other jobs). */
  first: number;
  /** Jobs in the batch, spread over the whole span. */
  count: number;
  /** End of the span, ms since 1970 (default: a day ago). */
  endMs: number;
}

/** One INSERT ... SELECT writing jobs j = lo .. hi - 1 of `batch` (0 <= lo < hi <= batch.count). */
export function jobsSql(dialect: SeedDialect, batch: JobBatch, lo: number, hi: number): string {
  const seq = sequence(dialect, lo, hi);
  const step = Math.max(1, Math.floor(SPAN_MS / batch.count));
  const base = batch.endMs - SPAN_MS;
  const t = MULTIPLIERS.map((a, k) => `((g * ${a} + ${k * 7919 + 1}) % ${P}) AS t${k}`).join(', ');
  const h = (k: number) => `((t${k} * t${k}) % ${P})`;
  const material = `CASE ${h(6)} % ${MATERIALS.length} ${MATERIALS.map((m, i) => `WHEN ${i} THEN '${m}'`).join(' ')} END`;
  const queued = `status = 'queued'`;
  // Each step is MATERIALIZED: inlined into the next (both databases flatten subqueries), the hashes and the
  // CASEs built on them would be computed once per reference, many times over (100x slower on SQLite).
  const drawn = `drawn AS MATERIALIZED (
      SELECT g, g % ${PRINTERS} AS p, ${base} + j * ${step} + ${h(2)} % ${step} AS start_ms, 600 + ${h(3)} % 21600 AS duration,
        CASE WHEN ${h(1)} % 100 < 85 THEN 'completed' WHEN ${h(1)} % 100 < 93 THEN 'failed' WHEN ${h(1)} % 100 < 98 THEN 'cancelled' ELSE 'queued' END AS status,
        CASE WHEN ${h(1)} % 100 < 85 THEN 1000 ELSE ${h(4)} % 1000 END AS done,
        CASE WHEN ${h(5)} % 100 < 5 THEN NULL ELSE ${material} END AS material,
        CASE WHEN ${h(8)} % 100 < 30 THEN 2.5 END AS labor,
        CASE WHEN ${h(9)} % 100 < 33 THEN 1 ELSE 0 END AS business,
        500 + ${h(7)} % 30000 AS grams_cg
      FROM (SELECT j, g, ${t} FROM (SELECT j, ${batch.first} + j AS g FROM ${seq.from}) AS numbered) AS hashed)`;
  const job = `job AS MATERIALIZED (
      SELECT g, p, start_ms, duration, status, done, material, labor, business, grams_cg,
        (duration * done) / 1000 AS actual, (grams_cg * done) / 1000 AS used_cg
      FROM drawn)`;
  return `${withList(dialect, seq, [drawn, job])}
    INSERT INTO jobs (printer_id, printer_name, job_name, filename, status, progress, start_time, end_time, estimated_duration, actual_duration,
      material_type, material_estimated_usage, material_actual_usage, material_cost, power_cost, labor_cost, is_business, created_at, updated_at)
    SELECT 'bench-' || p, 'Bench ' || p, 'Part ' || g, 'part_' || (g % 5000) || '.3mf', status,
      CASE WHEN status = 'completed' THEN 100 ELSE done / 10 END,
      CASE WHEN ${queued} THEN NULL ELSE ${iso(dialect, 'start_ms')} END,
      CASE WHEN ${queued} THEN NULL ELSE ${iso(dialect, 'start_ms + actual * 1000')} END,
      duration,
      CASE WHEN ${queued} THEN NULL ELSE actual END,
      material, grams_cg / 100.0,
      CASE WHEN ${queued} THEN NULL ELSE used_cg / 100.0 END,
      CASE WHEN ${queued} THEN NULL ELSE (used_cg / 40) / 100.0 END,
      CASE WHEN ${queued} THEN NULL ELSE (actual / 800) / 100.0 END,
      labor, business,
      ${iso(dialect, 'start_ms')}, ${iso(dialect, 'start_ms')}
    FROM job`;
}

export const batchOf = (first: number, count: number, endMs = Date.now() - 86_400_000): JobBatch => ({ first, count, endMs });

/** SQLite: the printers and files, on a connection to the service's file. */
export function seedFleet(raw: BetterSqlite3.Database): void {
  raw.transaction(() => {
    for (const statement of fleetSql('sqlite')) raw.exec(statement);
  })();
}

/**
 * SQLite: `count` jobs starting at row number `first`, one transaction per CHUNK rows (the WAL is
 * checkpointed between them). `onChunk` hears the rows written so far.
 */
export function addJobs(raw: BetterSqlite3.Database, count: number, first = 0, onChunk?: (done: number) => void): void {
  const batch = batchOf(first, count);
  for (let lo = 0; lo < count; lo += CHUNK) {
    const hi = Math.min(count, lo + CHUNK);
    raw.transaction(() => raw.exec(jobsSql('sqlite', batch, lo, hi)))();
    onChunk?.(hi);
  }
}

/** PostgreSQL: the printers and files. */
export async function seedFleetPostgres(client: pg.Client): Promise<void> {
  for (const statement of fleetSql('postgres')) await client.query(statement);
}

/** PostgreSQL: `count` jobs starting at row number `first`, one statement per CHUNK rows. */
export async function addJobsPostgres(client: pg.Client, count: number, first = 0, onChunk?: (done: number) => void): Promise<void> {
  const batch = batchOf(first, count);
  for (let lo = 0; lo < count; lo += CHUNK) {
    const hi = Math.min(count, lo + CHUNK);
    await client.query(jobsSql('postgres', batch, lo, hi));
    onChunk?.(hi);
  }
}
