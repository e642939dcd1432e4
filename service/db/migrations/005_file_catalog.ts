import { sql, type Kysely } from 'kysely';

/** The file catalog: one row per file on a printer (by path) or local upload, with its download state. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE files ADD COLUMN original_filename TEXT`.execute(db);
  await sql`ALTER TABLE files ADD COLUMN error TEXT`.execute(db);
  await sql`CREATE UNIQUE INDEX files_printer_path ON files (printer_id, printer_path) WHERE printer_id IS NOT NULL`.execute(db);
  await sql`CREATE INDEX files_filename ON files (filename)`.execute(db);
}
