import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../dialect';

/**
 * Integers are 64-bit on both databases (see ../ddl.ts: INTEGER becomes BIGINT), but the schema-builder
 * migrations 009, 012 and 013 asked for `integer`, which PostgreSQL makes 32-bit: a Spoolman spool id or a
 * job id past 2^31 - 1, stored as it is on SQLite, failed there with "out of range for type integer" (a
 * slot assignment or the usage of an ended print lost to a DATABASE_ERROR). SQLite's columns are 64-bit
 * already: nothing to do there.
 */
const COLUMNS: Record<string, string[]> = {
  printers: ['plate_auto_clear'],
  queue_items: ['plate', 'copies', 'priority', 'failures_in_row', 'position'],
  queue_dispatches: ['job_id', 'attempt', 'plate'],
  spools: ['slot', 'archived', 'low_notified'],
  spoolman_slots: ['slot', 'spoolman_id'],
  filament_plans: ['job_id'],
  filament_usage: ['job_id', 'slot', 'spool_id', 'spoolman_attempts'],
};

export async function up(db: Kysely<unknown>): Promise<void> {
  if (dialectOf(db) !== 'postgres') return;
  for (const [table, columns] of Object.entries(COLUMNS)) {
    const changes = columns.map((c) => sql`ALTER COLUMN ${sql.ref(c)} TYPE bigint`);
    await sql`ALTER TABLE ${sql.table(table)} ${sql.join(changes)}`.execute(db);
  }
}
