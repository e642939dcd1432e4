import fs from 'node:fs';
import path from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, Migrator, SqliteDialect, type Migration } from 'kysely';
import type { DB } from './schema';
import { MIGRATIONS } from './migrations';

export type Db = Kysely<DB>;

export interface SqliteConnection<T> {
  db: Kysely<T>;
  /** The raw handle, for pragmas and tests that need to break the database on purpose. */
  sqlite: BetterSqlite3.Database;
  file: string;
  close(): Promise<void>;
}

export type Connection = SqliteConnection<DB>;

/**
 * Opens (creating if needed) an SQLite file with WAL and foreign keys, and applies pending migrations.
 * Shared by the service's database and the aggregation service's.
 */
export async function openSqlite<T>(file: string, migrations: Record<string, Migration>): Promise<SqliteConnection<T>> {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const sqlite = new BetterSqlite3(file);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma('synchronous = NORMAL');
  // A second process (or a backup) holding a lock makes writers wait instead of failing at once.
  sqlite.pragma('busy_timeout = 5000');
  const db = new Kysely<T>({ dialect: new SqliteDialect({ database: sqlite }) });
  try {
    const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } });
    const { error } = await migrator.migrateToLatest();
    if (error) throw error;
  } catch (err) {
    await db.destroy();
    throw err;
  }
  return { db, sqlite, file, close: () => db.destroy() };
}

/** The service's database, with its migrations. */
export function openDatabase(file: string): Promise<Connection> {
  return openSqlite<DB>(file, MIGRATIONS);
}

/**
 * True for errors raised by SQLite itself (better-sqlite3's SqliteError). Recognised by shape, not with
 * `instanceof`: the native addon keeps the SqliteError class of the first copy of better-sqlite3 loaded in
 * the process, so a second copy (jest loads one per test file) would not recognise its own errors.
 */
export function isDatabaseError(err: unknown): err is Error & { code: string } {
  if (typeof err !== 'object' || err === null) return false;
  const e = err as { name?: unknown; code?: unknown };
  return err instanceof BetterSqlite3.SqliteError || (e.name === 'SqliteError' && typeof e.code === 'string' && e.code.startsWith('SQLITE_'));
}

export function isUniqueViolation(err: unknown): boolean {
  return isDatabaseError(err) && /^SQLITE_CONSTRAINT_(PRIMARYKEY|UNIQUE)$/.test(err.code);
}
