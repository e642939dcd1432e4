import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../dialect';

const OLD_CHECK = /CHECK\s*\(\s*type\s+IN\s*\(\s*'bambu_lab'\s*,\s*'prusa_core'\s*\)\s*\)/i;
const NEW_CHECK = "CHECK (type IN ('bambu_lab', 'prusa_core', 'klipper'))";

/**
 * The third printer family: `printers.type` may be 'klipper' (Moonraker).
 *
 * PostgreSQL swaps the column's CHECK constraint. SQLite cannot change a
 * CHECK in place, so the table is rebuilt from its own stored definition
 * (whatever columns earlier migrations added stay, in their order) with only
 * the type list widened. Foreign keys are off during the rebuild: the
 * children (status history, file catalog) cascade on a printer's delete, and
 * dropping the old table must not take their rows with it. SQLite runs
 * migrations outside a transaction (kysely), so the rebuild brings its own.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  if (dialectOf(db) === 'postgres') {
    await sql`ALTER TABLE printers DROP CONSTRAINT IF EXISTS printers_type_check`.execute(db);
    await sql`ALTER TABLE printers ADD CONSTRAINT printers_type_check CHECK (type IN ('bambu_lab', 'prusa_core', 'klipper'))`.execute(db);
    return;
  }
  const table = await sql<{ sql: string }>`SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'printers'`.execute(db);
  const definition = table.rows[0]?.sql;
  if (!definition) throw new Error('migration 014: table printers not found');
  if (!OLD_CHECK.test(definition)) {
    if (/'klipper'/.test(definition)) return; // already widened
    throw new Error('migration 014: the printers table has an unexpected type constraint');
  }
  const rebuilt = definition.replace(OLD_CHECK, NEW_CHECK).replace(/^CREATE TABLE\s+("?printers"?|`printers`)/i, 'CREATE TABLE printers_klipper_014');
  const extras = await sql<{ sql: string }>`SELECT sql FROM sqlite_master WHERE tbl_name = 'printers' AND type IN ('index', 'trigger') AND sql IS NOT NULL`.execute(db);

  await sql`PRAGMA foreign_keys = OFF`.execute(db);
  try {
    await sql`BEGIN IMMEDIATE`.execute(db);
    try {
      await sql.raw(rebuilt).execute(db);
      await sql`INSERT INTO printers_klipper_014 SELECT * FROM printers`.execute(db);
      await sql`DROP TABLE printers`.execute(db);
      await sql`ALTER TABLE printers_klipper_014 RENAME TO printers`.execute(db);
      for (const { sql: statement } of extras.rows) await sql.raw(statement).execute(db);
      const broken = await sql`PRAGMA foreign_key_check`.execute(db);
      if (broken.rows.length) throw new Error(`migration 014: ${broken.rows.length} rows lost their printer`);
      await sql`COMMIT`.execute(db);
    } catch (err) {
      await sql`ROLLBACK`.execute(db).catch(() => undefined);
      throw err;
    }
  } finally {
    await sql`PRAGMA foreign_keys = ON`.execute(db);
  }
}
