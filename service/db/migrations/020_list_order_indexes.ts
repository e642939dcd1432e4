import { sql, type Kysely } from 'kysely';

/**
 * Indexes in the orders of the file and queue lists, so that a page is read off an index instead of sorting
 * every match on each request (the dashboard polls both):
 *  - files newest first, coalesce(created_on_printer, created_at) DESC then id, of the whole catalog, of one
 *    printer and of one status: every connected printer's SD card is catalogued (10^4 to 10^5 rows);
 *  - queue items in the dispatcher's order, priority DESC, position, created_at, id, of all and of one status:
 *    finished items stay (10^5 over a farm's years). 012's (status, priority, position, created_at) runs
 *    priority the other way and leaves the id out, so a page still sorted all the items of a status.
 * Both databases read an index with a DESC column either way; the ids are TEXT, spelt out on both.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const newest = sql.raw('coalesce(created_on_printer, created_at) DESC, id');
  await sql`CREATE INDEX files_newest ON files (${newest})`.execute(db);
  await sql`CREATE INDEX files_printer_newest ON files (printer_id, ${newest})`.execute(db);
  await sql`CREATE INDEX files_status_newest ON files (status, ${newest})`.execute(db);
  const order = sql.raw('priority DESC, position, created_at, id');
  await sql`CREATE INDEX queue_items_list ON queue_items (${order})`.execute(db);
  await sql`CREATE INDEX queue_items_status_list ON queue_items (status, ${order})`.execute(db);
}
