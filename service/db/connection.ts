import fs from 'node:fs';
import path from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, Migrator, SqliteDialect, type Migration } from 'kysely';
import type { DB } from './schema';
import { ConfigError } from '../config';
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
  let sqlite: BetterSqlite3.Database;
  try {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    sqlite = new BetterSqlite3(file);
    sqlite.pragma('journal_mode = WAL');
  } catch (err) {
    throw unusableDatabase(file, err);
  }
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
    throw unusableDatabase(file, err);
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

/**
 * A database file the service cannot use at start (corrupt, not a database, read-only, no rights):
 * a ConfigError, so that `printfarm serve` exits with status 2 and this message instead of a stack.
 */
export class DatabaseUnusableError extends ConfigError {
  readonly code = 'DATABASE_UNUSABLE';
  constructor(
    readonly file: string,
    readonly cause: unknown,
  ) {
    const code = (cause as { code?: string })?.code ?? '';
    const why = (cause as Error)?.message ?? String(cause);
    const advice = /NOTADB|CORRUPT/.test(code)
      ? `The file is damaged or not a Printfarm database: stop the service, move ${file} aside (or restore it from a backup) and start again to begin with an empty database.`
      : /READONLY|PERM|ACCES|ROFS|CANTOPEN/.test(code)
        ? `Give the service's user write access to ${path.dirname(file)} and ${file}, or choose another data directory (--data-dir / DATA_DIR).`
        : `Check the file and its folder, or choose another data directory (--data-dir / DATA_DIR).`;
    super(`the database ${file} cannot be used (${code ? `${code}: ` : ''}${why}). ${advice}`);
  }
}

/** SQLite and file-system failures while opening become DatabaseUnusableError; anything else (a bug) stays as it is. */
function unusableDatabase(file: string, err: unknown): unknown {
  const code = (err as { code?: unknown })?.code;
  if (isDatabaseError(err) || (typeof code === 'string' && /^E[A-Z]+$/.test(code))) return new DatabaseUnusableError(file, err);
  return err;
}

export function isUniqueViolation(err: unknown): boolean {
  return isDatabaseError(err) && /^SQLITE_CONSTRAINT_(PRIMARYKEY|UNIQUE)$/.test(err.code);
}
