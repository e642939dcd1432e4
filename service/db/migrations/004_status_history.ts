import type { Kysely } from 'kysely';
import { ddl } from '../ddl';

/**
 * Statistics: the printer status history (one row per CHANGE of status or
 * connection, never per report), maintenance events recorded by users, and
 * indexes that keep the period aggregations of the statistics fast with
 * millions of jobs.
 *
 * Neither table keeps a foreign key to printers for the history: like jobs, a
 * printer's history outlives its removal (the removal itself is a row).
 * Maintenance events belong to a printer and go with it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await ddl(db)`CREATE TABLE printer_status_history (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    printer_id TEXT NOT NULL,
    status TEXT NOT NULL,
    connection_status TEXT NOT NULL,
    at TEXT NOT NULL
  ) STRICT`.execute(db);
  // The state of one printer at an instant and over a range; "the last row" for the change check.
  await ddl(db)`CREATE INDEX printer_status_history_printer_at ON printer_status_history (printer_id, at)`.execute(db);
  // Fleet-wide time ranges (and pruning by age).
  await ddl(db)`CREATE INDEX printer_status_history_at ON printer_status_history (at)`.execute(db);

  await ddl(db)`CREATE TABLE maintenance_events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    printer_id TEXT NOT NULL REFERENCES printers (id) ON DELETE CASCADE,
    kind TEXT NOT NULL CHECK (kind IN ('maintenance', 'nozzle_change', 'bed_calibration', 'cleaning', 'lubrication', 'belt_tension', 'firmware_update', 'part_replacement', 'other')),
    notes TEXT,
    performed_at TEXT NOT NULL,
    created_at TEXT NOT NULL
  ) STRICT`.execute(db);
  await ddl(db)`CREATE INDEX maintenance_events_printer_performed ON maintenance_events (printer_id, performed_at)`.execute(db);

  // A job belongs to the period of its start (or its creation when it never started), as in GET /jobs.
  // Expression indexes: the statistics queries use exactly this expression.
  await ddl(db)`CREATE INDEX jobs_period ON jobs (coalesce(start_time, created_at))`.execute(db);
  await ddl(db)`CREATE INDEX jobs_printer_period ON jobs (printer_id, coalesce(start_time, created_at))`.execute(db);
  // Jobs that started before a period and printed into it: end_time > start of the period, start_time < it,
  // answered from the index alone (fleet-wide, and for one printer).
  await ddl(db)`CREATE INDEX jobs_end_start ON jobs (end_time, start_time, printer_id)`.execute(db);
  await ddl(db)`CREATE INDEX jobs_printer_end_start ON jobs (printer_id, end_time, start_time)`.execute(db);
}
