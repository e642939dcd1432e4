import fs from 'node:fs';
import path from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, Migrator, PostgresDialect, sql, type Dialect, type Migration } from 'kysely';
import pg from 'pg';
import type { DB } from './schema';
import { ConfigError } from '../config';
import { MIGRATIONS } from './migrations';
import { TurnTakingSqliteDialect, type TurnTaking } from './sqlite-turns';

export type Db = Kysely<DB>;

export interface SqliteConnection<T> {
  dialect: 'sqlite';
  db: Kysely<T>;
  /** The raw handle, for pragmas and tests that need to break the database on purpose. */
  sqlite: BetterSqlite3.Database;
  file: string;
  /** Called with every statement run (SQL and parameters): the query-plan test reads EXPLAIN of each. */
  queryListeners: QueryListeners;
  /** The turns statements take on the one connection (tests read how many wait). */
  turns: TurnTaking;
  /** True while the database answers a trivial query. */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}

export interface PostgresConnection<T> {
  dialect: 'postgres';
  db: Kysely<T>;
  pool: pg.Pool;
  /** Called with every statement sent (SQL and parameters): the query-plan test reads EXPLAIN of each. */
  queryListeners: QueryListeners;
  /** The connection string, for a second pool (the statistics reader). */
  url: string;
  ping(): Promise<boolean>;
  close(): Promise<void>;
}

export type QueryListeners = Set<(sql: string, parameters: readonly unknown[]) => void>;

/** A Kysely on `dialect` that tells `listeners` of every statement it runs. */
function listenedKysely<T>(dialect: Dialect, listeners: QueryListeners): Kysely<T> {
  return new Kysely<T>({
    dialect,
    log: (event) => {
      if (event.level === 'query') for (const listener of listeners) listener(event.query.sql, event.query.parameters);
    },
  });
}

export type AnyConnection<T> = SqliteConnection<T> | PostgresConnection<T>;
export type Connection = AnyConnection<DB>;

/** Where a database lives: an SQLite file, or a PostgreSQL server when `url` is set. */
export interface DatabaseTarget {
  file: string;
  /** postgres://... ; when set, `file` is not used. */
  url?: string;
  /** Connections of the pool (PostgreSQL). */
  poolMax?: number;
}

/** Runs the migrations to the latest; on failure closes the connection and throws `failed(err)`. */
async function migrateOrClose<T>(db: Kysely<T>, migrations: Record<string, Migration>, failed: (err: unknown) => unknown): Promise<void> {
  try {
    // Numbers are reserved per feature and features land in any order: a database that has 016 already still
    // gets 013 when it arrives (each migration touches only its own tables and columns).
    const { error } = await new Migrator({ db, provider: { getMigrations: async () => migrations }, allowUnorderedMigrations: true }).migrateToLatest();
    if (error) throw error;
  } catch (err) {
    await db.destroy();
    throw failed(err);
  }
}

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
  const queryListeners: QueryListeners = new Set();
  // Queries take the one connection in turns, and let the event loop turn between slices (sqlite-turns.ts).
  let turns: TurnTaking | undefined;
  const db = listenedKysely<T>(new TurnTakingSqliteDialect({ database: withStatementCache(sqlite) }, (made) => (turns = made)), queryListeners);
  await migrateOrClose(db, migrations, (err) => unusableDatabase(file, err));
  const ping = async () => {
    try {
      sqlite.prepare('SELECT 1').get();
      return true;
    } catch {
      return false;
    }
  };
  // Kysely makes its driver as it is built: the turns are known here.
  return { dialect: 'sqlite', db, sqlite, file, queryListeners, turns: turns!, ping, close: () => db.destroy() };
}

/** Most statements kept prepared (a list's `IN (?, ?, ...)` makes one SQL text per length). */
const STATEMENT_CACHE_SIZE = 500;

/**
 * Kysely prepares every query it runs; the service runs a few hundred SQL texts over and over (at a farm's
 * startup, preparing was a quarter of the time spent in SQLite). better-sqlite3 runs a statement to its end
 * before it returns (kysely's SQLite driver never streams here), so one prepared statement per text can be
 * shared. The oldest is dropped past the bound.
 */
function withStatementCache(sqlite: BetterSqlite3.Database): { prepare(sql: string): BetterSqlite3.Statement; close(): void } {
  const statements = new Map<string, BetterSqlite3.Statement>();
  return {
    prepare(sql) {
      let statement = statements.get(sql);
      if (!statement) {
        statement = sqlite.prepare(sql);
        if (statements.size >= STATEMENT_CACHE_SIZE) statements.delete(statements.keys().next().value!);
        statements.set(sql, statement);
      }
      return statement;
    },
    close: () => sqlite.close(),
  };
}

/**
 * int8 (count(*), BIGINT columns) and numeric (sum() of BIGINT) arrive from pg as strings, to be safe past
 * 2^53. Printfarm's counts, ids, sizes and milliseconds stay far below that: they are parsed as numbers, so
 * the repositories see the same values as on SQLite.
 */
const PG_TYPES = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === pg.types.builtins.INT8 || oid === pg.types.builtins.NUMERIC) return (value: string) => Number(value);
    return pg.types.getTypeParser(oid, format);
  },
} as unknown as pg.CustomTypesConfig;

/** A pool of connections to PostgreSQL (no migrations): the main one, or a read-only reader beside it. */
export function postgresPool(url: string, max: number, options: { readOnly?: boolean } = {}): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max,
    types: PG_TYPES,
    // Every connection speaks UTC, and a read-only one refuses writes on the server's side.
    options: `-c TimeZone=UTC${options.readOnly ? ' -c default_transaction_read_only=on' : ''}`,
    // Also the longest a query waits for a free connection of the pool under a burst (then a DATABASE_ERROR).
    connectionTimeoutMillis: 30_000,
    idleTimeoutMillis: 30_000,
  });
  // A connection that drops while idle (server restart) is replaced on the next query; it must not crash the process.
  pool.on('error', () => {});
  // Nor while a query runs on it: pg-pool takes its own error listener off a client it lends out, and an
  // 'error' event without a listener would end the process. The query itself fails (DATABASE_ERROR) and the
  // pool drops the broken client when it comes back.
  pool.on('connect', (client) => client.on('error', () => {}));
  // Every client until its socket is closed: see poolClosed.
  const open = new Set<pg.Client>();
  openClients.set(pool, open);
  pool.on('connect', (client) => {
    open.add(client);
    client.once('end', () => open.delete(client));
  });
  return pool;
}

const openClients = new WeakMap<pg.Pool, Set<pg.Client>>();
/** How long poolClosed waits for the server to close the sockets. */
const POOL_CLOSE_WAIT_MS = 5000;

/**
 * Resolves once every connection of an ended pool has closed its socket. pg-pool's end() (kysely's destroy())
 * resolves as soon as it has told each client to end: the clients have sent their Terminate and still wait
 * for the server to close their sockets. A caller that stops the server or the process next would find
 * those sockets still open (a jest worker kept past its exit limit).
 */
export async function poolClosed(pool: pg.Pool, waitMs = POOL_CLOSE_WAIT_MS): Promise<void> {
  const open = [...(openClients.get(pool) ?? [])];
  if (open.length === 0) return;
  let timer: NodeJS.Timeout | undefined;
  // A server that never answers the close (gone from the network) must not hold a shutdown: bounded.
  const waited = new Promise<void>((resolve) => (timer = setTimeout(resolve, waitMs)));
  await Promise.race([Promise.all(open.map((client) => new Promise<void>((resolve) => client.once('end', () => resolve())))), waited]);
  clearTimeout(timer);
}

/** Connects to PostgreSQL and applies pending migrations (under kysely's migration lock: several processes may start at once). */
export async function openPostgres<T>(url: string, migrations: Record<string, Migration>, poolMax = 10): Promise<PostgresConnection<T>> {
  const pool = postgresPool(url, poolMax);
  const queryListeners: QueryListeners = new Set();
  const db = listenedKysely<T>(new PostgresDialect({ pool }), queryListeners);
  await migrateOrClose(db, migrations, (err) => err);
  const ping = async () => {
    try {
      await sql`SELECT 1`.execute(db);
      return true;
    } catch {
      return false;
    }
  };
  const close = async () => {
    await db.destroy();
    await poolClosed(pool);
  };
  return { dialect: 'postgres', db, pool, url, queryListeners, ping, close };
}

/** Opens the database of `target` with `migrations`: PostgreSQL when it has a URL, else the SQLite file. */
export function openTarget<T>(target: DatabaseTarget, migrations: Record<string, Migration>): Promise<AnyConnection<T>> {
  return target.url ? openPostgres<T>(target.url, migrations, target.poolMax) : openSqlite<T>(target.file, migrations);
}

/** The service's database, with its migrations. */
export function openDatabase(target: DatabaseTarget | string): Promise<Connection> {
  return openTarget<DB>(typeof target === 'string' ? { file: target } : target, MIGRATIONS);
}

/**
 * True for errors raised by SQLite itself (better-sqlite3's SqliteError). Recognised by shape, not with
 * `instanceof`: the native addon keeps the SqliteError class of the first copy of better-sqlite3 loaded in
 * the process, so a second copy (jest loads one per test file) would not recognise its own errors.
 */
export function isDatabaseError(err: unknown): err is Error & { code: string } {
  if (typeof err !== 'object' || err === null) return false;
  const e = err as { name?: unknown; code?: unknown };
  return err instanceof BetterSqlite3.SqliteError || (e.name === 'SqliteError' && typeof e.code === 'string' && e.code.startsWith('SQLITE_')) || isPostgresError(err);
}

/**
 * An error PostgreSQL answered (pg's DatabaseError: a five-character SQLSTATE code), or the pool's failure to
 * reach the server at all (a connection refused, a timeout): either way the database, not the request.
 */
function isPostgresError(err: object): boolean {
  const e = err as { name?: unknown; code?: unknown; message?: unknown };
  if (err instanceof pg.DatabaseError || (e.name === 'error' && typeof e.code === 'string' && /^[0-9A-Z]{5}$/.test(e.code))) return true;
  return typeof e.message === 'string' && /Connection terminated|connection timeout|timeout exceeded when trying to connect|Cannot use a pool after calling end|ECONNREFUSED/.test(e.message);
}

/**
 * PostgreSQL's text cannot hold U+0000 (SQLite's can): such a value is refused by the server before anything
 * is written (SQLSTATE 22021 / 22P05). The API answers it as the client's mistake, not a database failure.
 */
export function isUnstorableText(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  return isPostgresError(Object(err)) && (e?.code === '22P05' || (e?.code === '22021' && typeof e.message === 'string' && /0x00/.test(e.message)));
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
  if (err instanceof pg.DatabaseError || (typeof err === 'object' && err !== null && (err as { name?: unknown }).name === 'error')) {
    return (err as { code?: unknown }).code === '23505';
  }
  return isDatabaseError(err) && /^SQLITE_CONSTRAINT_(PRIMARYKEY|UNIQUE)$/.test(err.code);
}
