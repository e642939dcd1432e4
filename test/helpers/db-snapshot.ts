/**
 * Every row of every table, read through the store's own kysely connection: a before/after
 * comparison that works on SQLite and PostgreSQL alike (an UPDATE shows as well as an INSERT or DELETE).
 */
import { sql } from 'kysely';
import type { AnyConnection } from '../../service/db/connection';

export interface DbSnapshot {
  counts: Record<string, number>;
  /** Each table's rows as JSON, in primary-key (first column) order. */
  contents: Record<string, string>;
}

export async function snapshotDb(connection: AnyConnection<unknown>): Promise<DbSnapshot> {
  // kysely's own bookkeeping tables are left out by getTables.
  const tables = (await connection.db.introspection.getTables()).map((t) => t.name).sort();
  const counts: Record<string, number> = {};
  const contents: Record<string, string> = {};
  for (const t of tables) {
    const rows = (await sql<Record<string, unknown>>`SELECT * FROM ${sql.table(t)} ORDER BY 1`.execute(connection.db)).rows;
    counts[t] = rows.length;
    contents[t] = JSON.stringify(rows, (_k, v) => (typeof v === 'bigint' ? v.toString() : v));
  }
  return { counts, contents };
}

/** SQLite's own consistency check ('ok' when sound); PostgreSQL has no counterpart, so null there. */
export function sqliteIntegrity(connection: AnyConnection<unknown>): string | null {
  if (connection.dialect !== 'sqlite') return null;
  return (connection.sqlite.pragma('integrity_check') as { integrity_check: string }[]).map((r) => r.integrity_check).join('; ');
}
