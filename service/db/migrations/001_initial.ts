import { sql, type Kysely } from 'kysely';
import { ddl, onPostgres } from '../ddl';

/**
 * Printers, jobs, settings and the file catalog.
 * Jobs keep `printer_id` without a foreign key on purpose: a farm's job
 * history (and its statistics) outlives a printer that is removed; the
 * printer's name is kept on the job for that case.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await ddl(db)`CREATE TABLE printers (
    id TEXT PRIMARY KEY NOT NULL,
    name TEXT NOT NULL,
    type TEXT NOT NULL CHECK (type IN ('bambu_lab', 'prusa_core')),
    model TEXT,
    ip_address TEXT NOT NULL,
    serial_number TEXT,
    access_code TEXT,
    is_active INTEGER NOT NULL DEFAULT 1 CHECK (is_active IN (0, 1)),
    status TEXT NOT NULL DEFAULT 'configuring',
    connection_status TEXT NOT NULL DEFAULT 'testing',
    status_message TEXT,
    firmware_version TEXT,
    last_seen TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
  ) STRICT`.execute(db);

  await ddl(db)`CREATE TABLE jobs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    printer_id TEXT NOT NULL,
    printer_name TEXT,
    job_name TEXT NOT NULL,
    filename TEXT,
    status TEXT NOT NULL CHECK (status IN ('queued', 'printing', 'paused', 'completed', 'failed', 'cancelled')),
    progress REAL NOT NULL DEFAULT 0,
    layer_current INTEGER,
    layer_total INTEGER,
    start_time TEXT,
    end_time TEXT,
    estimated_duration INTEGER,
    actual_duration INTEGER,
    estimated_completion TEXT,
    material_type TEXT,
    material_brand TEXT,
    material_color TEXT,
    material_estimated_usage REAL,
    material_actual_usage REAL,
    material_cost_per_gram REAL,
    file_size INTEGER,
    file_path TEXT,
    file_hash TEXT,
    file_uploaded_at TEXT,
    print_settings TEXT,
    material_cost REAL,
    power_cost REAL,
    labor_cost REAL,
    quality_metrics TEXT,
    is_business INTEGER NOT NULL DEFAULT 0 CHECK (is_business IN (0, 1)),
    customer_info TEXT,
    notes TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
  ) STRICT`.execute(db);
  await ddl(db)`CREATE INDEX jobs_printer_status ON jobs (printer_id, status)`.execute(db);
  await ddl(db)`CREATE INDEX jobs_status ON jobs (status)`.execute(db);
  await ddl(db)`CREATE INDEX jobs_created_at ON jobs (created_at)`.execute(db);
  await ddl(db)`CREATE INDEX jobs_start_time ON jobs (start_time)`.execute(db);
  await ddl(db)`CREATE INDEX jobs_end_time ON jobs (end_time)`.execute(db);

  await ddl(db)`CREATE TABLE settings (
    key TEXT PRIMARY KEY NOT NULL,
    value TEXT NOT NULL,
    updated_at TEXT NOT NULL
  ) STRICT`.execute(db);

  await ddl(db)`CREATE TABLE files (
    id TEXT PRIMARY KEY NOT NULL,
    printer_id TEXT REFERENCES printers (id) ON DELETE CASCADE,
    filename TEXT NOT NULL,
    file_type TEXT NOT NULL,
    file_size INTEGER NOT NULL DEFAULT 0,
    status TEXT NOT NULL CHECK (status IN ('available', 'downloading', 'downloaded', 'local', 'error')),
    printer_path TEXT,
    local_path TEXT,
    checksum TEXT,
    created_on_printer TEXT,
    downloaded_at TEXT,
    last_accessed TEXT,
    download_attempts INTEGER NOT NULL DEFAULT 0,
    metadata TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
  ) STRICT`.execute(db);
  await ddl(db)`CREATE INDEX files_printer ON files (printer_id)`.execute(db);
  await ddl(db)`CREATE INDEX files_status ON files (status)`.execute(db);

  // JSON columns are text in both databases; SQLite's json_valid() has no PostgreSQL 15 twin, so a cast
  // that answers NULL for text that is not JSON (the statistics read quality_metrics through it).
  await onPostgres(
    db,
    sql`CREATE FUNCTION printfarm_try_jsonb(value text) RETURNS jsonb LANGUAGE plpgsql IMMUTABLE AS $$
      BEGIN
        RETURN value::jsonb;
      EXCEPTION WHEN others THEN
        RETURN NULL;
      END $$`,
  );
}
