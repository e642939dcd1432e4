import type { Kysely } from 'kysely';

/**
 * The print queue (issue 13): queue items, one dispatch per started copy, the
 * printers' plate state, and the link from a job to the queue item it printed.
 *
 * Written with kysely's schema builder only (no SQLite-only SQL), so that the
 * same migration runs on PostgreSQL. Ids are text made by the service (no
 * autoincrement, which the two databases spell differently); JSON is kept as
 * text; booleans are integers 0/1 like the rest of the schema. SQLite takes
 * one column per ALTER TABLE, hence one statement per new column.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('queue_items')
    .addColumn('id', 'text', (c) => c.primaryKey().notNull())
    .addColumn('file_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('plate', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('copies', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('priority', 'integer', (c) => c.notNull().defaultTo(0))
    // queued | held | printing | completed | failed | cancelled
    .addColumn('status', 'text', (c) => c.notNull().defaultTo('queued'))
    .addColumn('waiting_reason', 'text')
    // Failed prints and starts since the last completed copy: queue_max_attempts of them fail the item.
    .addColumn('failures_in_row', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('target', 'text')
    .addColumn('requirements', 'text')
    .addColumn('options', 'text')
    .addColumn('start_after', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  // The dispatcher's order: open items by priority, then oldest first.
  await db.schema.createIndex('queue_items_order').on('queue_items').columns(['status', 'priority', 'created_at']).execute();

  await db.schema
    .createTable('queue_dispatches')
    .addColumn('id', 'text', (c) => c.primaryKey().notNull())
    .addColumn('item_id', 'text', (c) => c.notNull().references('queue_items.id').onDelete('cascade'))
    .addColumn('printer_id', 'text', (c) => c.notNull())
    .addColumn('job_id', 'integer')
    // claimed | uploading | starting | printing | completed | failed | cancelled | start_failed
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('attempt', 'integer', (c) => c.notNull())
    .addColumn('error', 'text')
    // What the printer is told: the file name on its storage and the start's identifiers.
    .addColumn('remote_name', 'text', (c) => c.notNull())
    .addColumn('task_id', 'text', (c) => c.notNull())
    // The printer's own job id before the start (PrusaLink): a new one acknowledges the start.
    .addColumn('baseline_job_id', 'text')
    .addColumn('start_sent_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('queue_dispatches_item').on('queue_dispatches').columns(['item_id', 'created_at']).execute();
  await db.schema.createIndex('queue_dispatches_state').on('queue_dispatches').columns(['state', 'printer_id']).execute();

  await db.schema.alterTable('printers').addColumn('plate_state', 'text', (c) => c.notNull().defaultTo('clear')).execute();
  await db.schema.alterTable('printers').addColumn('plate_auto_clear', 'integer', (c) => c.notNull().defaultTo(0)).execute();
  await db.schema.alterTable('jobs').addColumn('queue_item_id', 'text').execute();
  await db.schema.createIndex('jobs_queue_item').on('jobs').column('queue_item_id').execute();
}
