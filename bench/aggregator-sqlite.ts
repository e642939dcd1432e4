/**
 * bench/aggregator --db sqlite: the /stats views of one `printfarm aggregator` on its SQLite file
 * (aggregator.db in its data dir) at `--submissions` stored submissions, the same data as the
 * PostgreSQL part (bench/aggregator.ts), written by SQLite itself (a recursive CTE), then derived as
 * migration 002 backfills it. Scale-out needs PostgreSQL, so there is no throughput part here.
 */
import path from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import { backfillDerived } from '../service/aggregator/derived-schema';
import { timeMigration003, type MigrationTiming } from './aggregator-migration';

const DAY_MS = 86_400_000;
const uuidSql = (expr: string) => `'00000000-0000-4000-8000-' || printf('%012x', ${expr})`;
const iso = (expr: string) => `strftime('%Y-%m-%dT%H:%M:%fZ', (${expr}) / 1000.0, 'unixepoch')`;
const pick = (expr: string, values: string[]) => `CASE ${expr} ${values.map((v, i) => `WHEN ${i} THEN '${v}'`).join(' ')} END`;

/** Writes the bench's installations and submissions (spread over 90 days) into an aggregator.db that is already migrated. */
export async function seedSqlite(dataDir: string, installations: number, submissions: number, nowMs: number): Promise<void> {
  const file = path.join(dataDir, 'aggregator.db');
  const db = new BetterSqlite3(file);
  db.pragma('journal_mode = WAL');
  db.pragma('busy_timeout = 60000');
  const span = 90 * DAY_MS;
  // Each period ends where the installation's next one starts (the rows of one installation are this far
  // apart at least): periods that overlap would count once (migration 003), so the seeded data has none.
  const period = Math.floor((installations * span) / Math.max(1, submissions));
  db.exec(`
    INSERT INTO submissions (installation_id, received_at, received_ms, submitted_at, schema_version, period_start, period_end, app_version, platform,
      deployment_mode, country_code, printer_count, printer_types, printer_type_counts, total_jobs_created, total_jobs_completed, total_jobs_failed,
      total_files_downloaded, total_files_uploaded, uptime_hours, feature_usage, event_counts, error_count, submitted_ms, period_start_ms, period_end_ms)
    SELECT ${uuidSql(`s % ${installations}`)}, ${iso('t')}, t, ${iso('t')}, '1.0', ${iso(`t - ${period}`)}, ${iso('t')},
      ${pick('s % 3', ['1.0.0', '1.1.0', '1.2.0'])}, ${pick('s % 3', ['linux', 'darwin', 'win32'])}, ${pick('s % 3', ['standalone', 'node-red', 'docker'])},
      ${pick('s % 4', ['DE', 'US', 'FR', 'XX'])}, 1 + s % 20, '["bambu_lab","prusa_core"]', '{"bambu_lab":1,"prusa_core":1}', 10, 8, 1, 3, 0, 24.5,
      '{"queue":true,"previews":false}', CASE WHEN s % 10 = 0 THEN '{"error":2,"error_download_failed":2}' ELSE '{}' END, CASE WHEN s % 10 = 0 THEN 2 ELSE 0 END,
      t, t - ${period}, t
    FROM (WITH RECURSIVE g(s) AS (SELECT 0 UNION ALL SELECT s + 1 FROM g WHERE s < ${submissions - 1})
      SELECT s, ${nowMs} - ((s * ${span}) / ${Math.max(1, submissions)}) AS t FROM g)`);
  db.exec(`
    INSERT INTO installations (installation_id, first_seen_at, first_seen_ms, last_seen_at, last_seen_ms, submissions, app_version, platform, deployment_mode, country_code, printer_count)
    SELECT installation_id, min(received_at), min(received_ms), max(received_at), max(received_ms), count(*), max(app_version), max(platform), max(deployment_mode), max(country_code), max(printer_count)
    FROM submissions GROUP BY installation_id`);
  db.exec('DELETE FROM latest_submissions; DELETE FROM daily_totals');
  db.close();
  const kysely = new Kysely<unknown>({ dialect: new SqliteDialect({ database: new BetterSqlite3(file) }) });
  try {
    await backfillDerived(kysely);
  } finally {
    await kysely.destroy();
  }
  const after = new BetterSqlite3(file);
  after.exec('ANALYZE');
  after.close();
}

/** Part 3 (aggregator-migration.ts) on the instance's aggregator.db. */
export async function timeSqliteMigration003(dataDir: string): Promise<MigrationTiming> {
  const database = new BetterSqlite3(path.join(dataDir, 'aggregator.db'));
  database.pragma('busy_timeout = 60000');
  const kysely = new Kysely<unknown>({ dialect: new SqliteDialect({ database }) });
  try {
    return await timeMigration003(kysely);
  } finally {
    await kysely.destroy();
  }
}
