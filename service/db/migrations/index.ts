/**
 * Numbered migrations, applied in order at start. Add a file `NNN_what.ts`
 * with an `up(db)` and list it here; never edit one that has shipped.
 *
 * Every migration runs on SQLite and on PostgreSQL (DATABASE_URL): raw SQL
 * goes through `ddl(db)` (SQLite's DDL, translated), schema-builder
 * migrations take their id column from `autoIncrementId(db)` and their STRICT
 * from `strict(db)` (see ../ddl.ts); anything one database alone needs goes
 * through `onPostgres(db, ...)` or a `dialectOf(db)` test.
 */
import type { Migration } from 'kysely';
import * as m001 from './001_initial';
import * as m002 from './002_printer_ports';
import * as m003 from './003_job_tracking';
import * as m004 from './004_status_history';
import * as m005 from './005_file_catalog';
import * as m006 from './006_ideas';
import * as m007 from './007_usage_stats';
import * as m008 from './008_job_list_indexes';
import * as m009 from './009_print_queue';
import * as m010 from './010_printer_auth_method';
import * as m011 from './011_cameras';
import * as m012 from './012_queue_variants';
import * as m013 from './013_spools';
import * as m014 from './014_klipper_printers';
import * as m016 from './016_job_tallies';
import * as m017 from './017_bigint_columns';
import * as m018 from './018_usage_outbox';
import * as m019 from './019_job_sort_indexes';
import * as m020 from './020_list_order_indexes';
import * as m021 from './021_file_summary_index';
import * as m022 from './022_job_printer_status_index';
import * as m023 from './023_job_printer_duration_index';

export const MIGRATIONS: Record<string, Migration> = {
  '001_initial': m001,
  '002_printer_ports': m002,
  '003_job_tracking': m003,
  '004_status_history': m004,
  '005_file_catalog': m005,
  '006_ideas': m006,
  '007_usage_stats': m007,
  '008_job_list_indexes': m008,
  '009_print_queue': m009,
  '010_printer_auth_method': m010,
  '011_cameras': m011,
  '012_queue_variants': m012,
  '013_spools': m013,
  '014_klipper_printers': m014,
  '016_job_tallies': m016,
  '017_bigint_columns': m017,
  '018_usage_outbox': m018,
  '019_job_sort_indexes': m019,
  '020_list_order_indexes': m020,
  '021_file_summary_index': m021,
  '022_job_printer_status_index': m022,
  '023_job_printer_duration_index': m023,
};
