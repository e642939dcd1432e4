/**
 * The aggregation service's own database: SQLite through kysely for one
 * instance, PostgreSQL for several behind a load balancer (everything they
 * must agree on, rate limits and duplicates included, lives here), with its
 * own numbered migrations (written once, see db/ddl.ts). Times are
 * kept twice: ISO text to show, epoch milliseconds to bucket by integer
 * division (the same SQL in SQLite and PostgreSQL).
 */
import path from 'node:path';
import { openTarget, type AnyConnection } from '../db/connection';
import { ddl } from '../db/ddl';
import { Kysely, type Generated, type Migration } from 'kysely';
import { m002 } from './derived-schema';
import { m003 } from './periods-schema';

export interface InstallationsTable {
  installation_id: string;
  first_seen_at: string;
  first_seen_ms: number;
  last_seen_at: string;
  last_seen_ms: number;
  submissions: number;
  app_version: string;
  platform: string;
  deployment_mode: string;
  country_code: string;
  printer_count: number;
}

export interface SubmissionsTable {
  id: Generated<number>;
  installation_id: string;
  received_at: string;
  received_ms: number;
  submitted_at: string;
  /**
   * submitted_at, period_start and period_end in epoch ms (migration 003): periods compare across offsets.
   * Generated only for the type: rows written before migration 003 had none (it fills them in).
   */
  submitted_ms: Generated<number>;
  period_start_ms: Generated<number>;
  period_end_ms: Generated<number>;
  schema_version: string;
  period_start: string;
  period_end: string;
  app_version: string;
  platform: string;
  deployment_mode: string;
  country_code: string;
  printer_count: number;
  /** JSON array. */
  printer_types: string;
  /** JSON object type -> count. */
  printer_type_counts: string;
  total_jobs_created: number;
  total_jobs_completed: number;
  total_jobs_failed: number;
  total_files_downloaded: number;
  total_files_uploaded: number;
  uptime_hours: number;
  /** JSON object feature -> boolean. */
  feature_usage: string;
  /** JSON object event -> count. */
  event_counts: string;
  /** event_counts.error, kept as a column for the error statistics. */
  error_count: number;
}

/** The per-installation rate-limit record (spec: installation_id, last_submission_at, submission_count, window_start). */
export interface RateLimitsTable {
  installation_id: string;
  last_submission_at: string;
  submission_count: number;
  window_start: string;
  window_start_ms: number;
}

/** Each installation's latest submission, the fields the distribution views group by (migration 002). */
export type LatestSubmissionsTable = Pick<
  SubmissionsTable,
  'installation_id' | 'received_ms' | 'app_version' | 'deployment_mode' | 'country_code' | 'printer_count' | 'printer_type_counts' | 'feature_usage'
> & { submission_id: number };

/** Per UTC day of received_ms: the submissions and the sums of their counters (migration 002). */
export interface DailyTotalsTable {
  day: number;
  submissions: number;
  jobs_created: number;
  jobs_completed: number;
  jobs_failed: number;
  files_downloaded: number;
  files_uploaded: number;
  uptime_hours: number;
  errors: number;
}

/**
 * Installations whose data was deleted (DELETE /installation/{id}) and when (migration 004): a submission
 * whose period starts before that moment is refused, so that a replay of one stored before the deletion
 * cannot bring the data back. Kept for good: a random id and a time, nothing of the installation.
 */
export interface DeletedInstallationsTable {
  installation_id: string;
  deleted_at: string;
  deleted_ms: number;
}

export interface AggregatorDB {
  deleted_installations: DeletedInstallationsTable;
  installations: InstallationsTable;
  submissions: SubmissionsTable;
  rate_limits: RateLimitsTable;
  latest_submissions: LatestSubmissionsTable;
  daily_totals: DailyTotalsTable;
}

export type AggregatorDb = Kysely<AggregatorDB>;

const m001: Migration = {
  async up(db: Kysely<unknown>) {
    await ddl(db)`CREATE TABLE installations (
      installation_id TEXT PRIMARY KEY,
      first_seen_at TEXT NOT NULL,
      first_seen_ms INTEGER NOT NULL,
      last_seen_at TEXT NOT NULL,
      last_seen_ms INTEGER NOT NULL,
      submissions INTEGER NOT NULL,
      app_version TEXT NOT NULL,
      platform TEXT NOT NULL,
      deployment_mode TEXT NOT NULL,
      country_code TEXT NOT NULL,
      printer_count INTEGER NOT NULL
    ) STRICT`.execute(db);
    await ddl(db)`CREATE INDEX installations_first_seen ON installations (first_seen_ms)`.execute(db);
    await ddl(db)`CREATE TABLE submissions (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      installation_id TEXT NOT NULL,
      received_at TEXT NOT NULL,
      received_ms INTEGER NOT NULL,
      submitted_at TEXT NOT NULL,
      schema_version TEXT NOT NULL,
      period_start TEXT NOT NULL,
      period_end TEXT NOT NULL,
      app_version TEXT NOT NULL,
      platform TEXT NOT NULL,
      deployment_mode TEXT NOT NULL,
      country_code TEXT NOT NULL,
      printer_count INTEGER NOT NULL,
      printer_types TEXT NOT NULL,
      printer_type_counts TEXT NOT NULL,
      total_jobs_created INTEGER NOT NULL,
      total_jobs_completed INTEGER NOT NULL,
      total_jobs_failed INTEGER NOT NULL,
      total_files_downloaded INTEGER NOT NULL,
      total_files_uploaded INTEGER NOT NULL,
      uptime_hours REAL NOT NULL,
      feature_usage TEXT NOT NULL,
      event_counts TEXT NOT NULL,
      error_count INTEGER NOT NULL
    ) STRICT`.execute(db);
    // A client that retries a submission the server did store (its answer was lost) sends the same submitted_at.
    await ddl(db)`CREATE UNIQUE INDEX submissions_once ON submissions (installation_id, submitted_at)`.execute(db);
    await ddl(db)`CREATE INDEX submissions_received ON submissions (received_ms)`.execute(db);
    await ddl(db)`CREATE INDEX submissions_installation ON submissions (installation_id, received_ms)`.execute(db);
    await ddl(db)`CREATE TABLE rate_limits (
      installation_id TEXT PRIMARY KEY,
      last_submission_at TEXT NOT NULL,
      submission_count INTEGER NOT NULL,
      window_start TEXT NOT NULL,
      window_start_ms INTEGER NOT NULL
    ) STRICT`.execute(db);
  },
};

const m004: Migration = {
  async up(db: Kysely<unknown>) {
    await ddl(db)`CREATE TABLE deleted_installations (
      installation_id TEXT PRIMARY KEY,
      deleted_at TEXT NOT NULL,
      deleted_ms INTEGER NOT NULL
    ) STRICT`.execute(db);
  },
};

export const AGGREGATOR_MIGRATIONS: Record<string, Migration> = {
  '001_aggregator': m001,
  '002_aggregator_derived': m002,
  '003_aggregator_periods': m003,
  '004_aggregator_deletions': m004,
};

export type AggregatorConnection = AnyConnection<AggregatorDB>;

export const AGGREGATOR_DB_FILENAME = 'aggregator.db';

/** SQLite (aggregator.db in `dataDir`) for one instance; PostgreSQL (`url`) for several sharing one database. */
export function openAggregatorDatabase(dataDir: string, options: { url?: string; poolMax?: number } = {}): Promise<AggregatorConnection> {
  return openTarget<AggregatorDB>({ file: path.join(dataDir, AGGREGATOR_DB_FILENAME), url: options.url, poolMax: options.poolMax }, AGGREGATOR_MIGRATIONS);
}
