import type { Kysely } from 'kysely';

/**
 * The queue a larger farm needs (issue 23): an item's place within its
 * priority (POST /queue/{id}/move), its deadline (finish_by), its variants
 * (one sliced file per printer model: `files` [{file_id, plate}] as JSON text),
 * and which variant each dispatch printed. Items stored before keep working:
 * position 0 orders them by age as before, `files` NULL means their one
 * file_id/plate, a dispatch's NULL file_id means the item's file_id.
 *
 * Schema builder only, one column per ALTER TABLE (SQLite), so that it runs on
 * SQLite and PostgreSQL alike.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('queue_items').addColumn('position', 'integer', (c) => c.notNull().defaultTo(0)).execute();
  await db.schema.alterTable('queue_items').addColumn('finish_by', 'text').execute();
  await db.schema.alterTable('queue_items').addColumn('files', 'text').execute();
  await db.schema.alterTable('queue_dispatches').addColumn('file_id', 'text').execute();
  await db.schema.alterTable('queue_dispatches').addColumn('plate', 'integer').execute();
  // The dispatcher's order: open items by priority, then their place, then age.
  await db.schema.createIndex('queue_items_position').on('queue_items').columns(['status', 'priority', 'position', 'created_at']).execute();
}
