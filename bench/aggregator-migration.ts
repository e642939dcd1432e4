/**
 * bench/aggregator, part 3: migration 003 (service/aggregator/periods-schema.ts) on the bench's stored
 * submissions, both databases. The seeded database already went through it (the instance migrated the
 * empty one), so its three ms columns are dropped first, as a database of before 003 had none; and 1 % of
 * the submissions get a second take of the same period (submitted_at the same moment written as +00:00,
 * so the unique text index lets it in; the seeded rows of an installation are a period apart, so any other
 * moment could clash), so that the migration removes some (the earlier ids) and derives the tables again,
 * its slowest path. Then m003.up runs in one transaction, as the service's migrator runs it.
 */
import { sql, type Kysely } from 'kysely';
import { m003 } from '../service/aggregator/periods-schema';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

const COPIED =
  'installation_id, received_at, received_ms, schema_version, period_start, period_end, app_version, platform, deployment_mode, country_code, printer_count, ' +
  'printer_types, printer_type_counts, total_jobs_created, total_jobs_completed, total_jobs_failed, total_files_downloaded, total_files_uploaded, uptime_hours, ' +
  'feature_usage, event_counts, error_count';

export interface MigrationTiming {
  before: number;
  retakes: number;
  removed: number;
  seconds: number;
}

const count = async (db: AnyDb) => Number((await sql<{ n: number }>`SELECT COUNT(*) AS n FROM submissions`.execute(db)).rows[0].n);

export async function timeMigration003(db: AnyDb): Promise<MigrationTiming> {
  for (const column of ['submitted_ms', 'period_start_ms', 'period_end_ms']) await sql`ALTER TABLE submissions DROP COLUMN ${sql.raw(column)}`.execute(db);
  const seeded = await count(db);
  await sql`INSERT INTO submissions (submitted_at, ${sql.raw(COPIED)})
    SELECT replace(submitted_at, 'Z', '+00:00'), ${sql.raw(COPIED)} FROM submissions WHERE id % 100 = 0`.execute(db);
  const before = await count(db);
  const t0 = performance.now();
  await db.transaction().execute((trx) => m003.up(trx));
  const seconds = (performance.now() - t0) / 1000;
  return { before, retakes: before - seeded, removed: before - (await count(db)), seconds };
}

export function migrationReport(t: MigrationTiming): string {
  return `\n| Migration 003 | Submissions before | Retakes among them | Removed | Seconds |\n|---|---|---|---|---|\n| m003.up | ${t.before} | ${t.retakes} | ${t.removed} | ${t.seconds.toFixed(1)} |\n`;
}
