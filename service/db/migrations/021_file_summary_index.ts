import { sql, type Kysely } from 'kysely';

/**
 * GET /files answers every page with the summary of the whole catalog (counts per status, total size): with
 * every connected printer's SD card catalogued (10^4 to 10^5 rows, each with its metadata JSON) that read
 * every row of the table on each request. This index holds the two columns the summary sums, so it is read
 * from the index alone (a small fraction of the table's pages). Still a walk over every file: the spec's
 * summary is of all of them.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE INDEX files_status_size ON files (status, file_size)`.execute(db);
}
