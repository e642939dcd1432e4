import type { Kysely } from 'kysely';
import { ddl } from '../ddl';

/** The file catalog: one row per file on a printer (by path) or local upload, with its download state. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await ddl(db)`ALTER TABLE files ADD COLUMN original_filename TEXT`.execute(db);
  await ddl(db)`ALTER TABLE files ADD COLUMN error TEXT`.execute(db);
  await ddl(db)`CREATE UNIQUE INDEX files_printer_path ON files (printer_id, printer_path) WHERE printer_id IS NOT NULL`.execute(db);
  await ddl(db)`CREATE INDEX files_filename ON files (filename)`.execute(db);
}
