import type { Kysely } from 'kysely';
import { autoIncrementId } from '../ddl';

/**
 * Filament (issue 25): the spools of the embedded inventory, which slot holds a
 * Spoolman spool (Spoolman mode), what each ended print used per slot (one row
 * per job and slot: the guard that counts a print once across restarts and
 * replayed end events; it is also the outbox of usage not yet reported to
 * Spoolman), and the plan of each print taken when it starts (which slot feeds
 * which filament of the file, and the grams per filament).
 *
 * Schema builder only, so the same migration runs on PostgreSQL. Grams are
 * `double precision` (REAL affinity on SQLite); booleans are integers 0/1.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('spools')
    .addColumn('id', ...autoIncrementId(db))
    .addColumn('material', 'text', (c) => c.notNull())
    .addColumn('color', 'text')
    .addColumn('brand', 'text')
    .addColumn('name', 'text')
    .addColumn('diameter_mm', 'double precision', (c) => c.notNull().defaultTo(1.75))
    .addColumn('density_g_cm3', 'double precision')
    .addColumn('initial_weight_g', 'double precision', (c) => c.notNull())
    .addColumn('remaining_weight_g', 'double precision', (c) => c.notNull())
    .addColumn('cost_per_kg', 'double precision')
    .addColumn('location', 'text')
    .addColumn('printer_id', 'text')
    .addColumn('slot', 'integer')
    .addColumn('rfid_uuid', 'text')
    .addColumn('archived', 'integer', (c) => c.notNull().defaultTo(0))
    // 1 once spool_low was announced; back to 0 when the spool is above the threshold again.
    .addColumn('low_notified', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  // A slot holds one spool (NULLs are distinct on both databases: unassigned spools are many).
  await db.schema.createIndex('spools_slot').on('spools').columns(['printer_id', 'slot']).unique().execute();
  await db.schema.createIndex('spools_rfid').on('spools').column('rfid_uuid').unique().execute();
  await db.schema.createIndex('spools_list').on('spools').columns(['archived', 'remaining_weight_g']).execute();

  await db.schema
    .createTable('spoolman_slots')
    .addColumn('printer_id', 'text', (c) => c.notNull())
    .addColumn('slot', 'integer', (c) => c.notNull())
    .addColumn('spoolman_id', 'integer', (c) => c.notNull())
    .addColumn('assigned_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('spoolman_slots_pk', ['printer_id', 'slot'])
    .execute();
  await db.schema.createIndex('spoolman_slots_spool').on('spoolman_slots').column('spoolman_id').unique().execute();

  await db.schema
    .createTable('filament_plans')
    .addColumn('job_id', 'integer', (c) => c.primaryKey().notNull())
    .addColumn('printer_id', 'text', (c) => c.notNull())
    // JSON: [{filament, slot, grams, material, color}]
    .addColumn('entries', 'text', (c) => c.notNull())
    // JSON: the trays the printer reported feeding while the job ran (prints started by hand)
    .addColumn('slots_seen', 'text', (c) => c.notNull().defaultTo('[]'))
    .addColumn('settled_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('filament_plans_open').on('filament_plans').columns(['settled_at', 'job_id']).execute();

  await db.schema
    .createTable('filament_usage')
    .addColumn('id', ...autoIncrementId(db))
    .addColumn('job_id', 'integer', (c) => c.notNull())
    .addColumn('printer_id', 'text', (c) => c.notNull())
    .addColumn('slot', 'integer', (c) => c.notNull())
    // local | spoolman | null (no spool in the slot: the grams are known, the spool is not)
    .addColumn('source', 'text')
    .addColumn('spool_id', 'integer')
    .addColumn('material', 'text')
    .addColumn('color', 'text')
    .addColumn('grams', 'double precision', (c) => c.notNull())
    .addColumn('cost', 'double precision')
    // Spoolman outbox: pending until PUT /spool/{id}/use answered, then sent.
    .addColumn('spoolman_state', 'text')
    .addColumn('spoolman_attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('spoolman_error', 'text')
    // The spool's used_weight before the first attempt: a retry after an unclear failure checks it first.
    .addColumn('spoolman_used_before', 'double precision')
    .addColumn('spoolman_sent_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('filament_usage_once').on('filament_usage').columns(['job_id', 'slot']).unique().execute();
  await db.schema.createIndex('filament_usage_spool').on('filament_usage').columns(['spool_id', 'created_at']).execute();
  await db.schema.createIndex('filament_usage_time').on('filament_usage').column('created_at').execute();
  await db.schema.createIndex('filament_usage_outbox').on('filament_usage').columns(['spoolman_state', 'id']).execute();
}
