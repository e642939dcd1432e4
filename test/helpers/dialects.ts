/**
 * One set of tests, run on both databases: `describeDialects(title, (db) => ...)`
 * declares the block once for SQLite and once for PostgreSQL (a server of the
 * test file's own, see postgres.ts). `db.options()` gives a fresh database per
 * call: `{}` on SQLite (the service's file in its temp data dir), a new
 * PostgreSQL database's URL (`databaseUrl`) otherwise.
 */
import type BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import type { AnyConnection } from '../../service/db/connection';
import { postgresUnavailable, usePostgres } from './postgres';

export type DialectName = 'sqlite' | 'postgres';

export interface DialectUnderTest {
  name: DialectName;
  /** Options for startService: a fresh database each call (`{}` on SQLite: the file in the service's temp data dir). */
  options(): Promise<{ databaseUrl?: string }>;
  /** A fresh database's URL (PostgreSQL), undefined on SQLite. */
  url(): Promise<string | undefined>;
}

export const DIALECTS: DialectName[] = ['sqlite', 'postgres'];

export function describeDialects(title: string, body: (db: DialectUnderTest) => void): void {
  for (const name of DIALECTS) {
    if (name === 'sqlite') {
      describe(`${title} [sqlite]`, () => body({ name, options: async () => ({}), url: async () => undefined }));
      continue;
    }
    const missing = postgresUnavailable();
    if (missing) {
      describe.skip(`${title} [postgres] (skipped: ${missing})`, () => body({ name, options: async () => ({}), url: async () => undefined }));
      // Said once per file, where a developer sees it.
      process.stderr.write(`note: ${title} [postgres] skipped: ${missing}\n`);
      continue;
    }
    describe(`${title} [postgres]`, () => {
      const server = usePostgres();
      const url = async () => (await server()).createDatabase();
      body({ name, url, options: async () => ({ databaseUrl: await url() }) });
    });
  }
}

/** The raw SQLite handle of a connection, for tests that break the database on purpose (SQLite only). */
export function sqliteOf<T>(connection: AnyConnection<T>): BetterSqlite3.Database {
  if (connection.dialect !== 'sqlite') throw new Error('this test needs the SQLite database');
  return connection.sqlite;
}

/**
 * `db.options()` of a PostgreSQL database made like one of a server installed with a real locale (ICU en-US:
 * lower() and ILIKE fold every letter, ORDER BY follows the language), where the tests' own server (--locale=C)
 * happens to agree with SQLite; `{}` on SQLite. LC_COLLATE/LC_CTYPE stay C: ICU alone decides, and no OS locale
 * has to be installed.
 */
export async function localeDatabaseOptions(db: DialectUnderTest): Promise<{ databaseUrl?: string }> {
  const url = await db.url();
  if (url === undefined) return {};
  const target = new URL(url);
  const name = `${target.pathname.slice(1)}_icu`;
  const admin = new pg.Client({ connectionString: Object.assign(new URL(url), { pathname: '/postgres' }).toString() });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name} TEMPLATE template0 ENCODING 'UTF8' LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C'`);
  } finally {
    await admin.end();
  }
  target.pathname = `/${name}`;
  return { databaseUrl: target.toString() };
}

/**
 * PostgreSQL: `held` (another writer's statements) runs in a transaction left open on a connection of its own,
 * then `run` starts, and `held` commits once `run` waits for a row it locked: the other writer commits exactly
 * between `run`'s read and its write, the moment a race test is after. `what` names a `run` that never waits.
 */
export async function commitWhileBlocked<T>(url: string, held: { sql: string; params: unknown[] }[], run: () => Promise<T>, what: string): Promise<T> {
  const other = new pg.Client({ connectionString: url });
  const watcher = new pg.Client({ connectionString: url });
  await Promise.all([other.connect(), watcher.connect()]);
  try {
    await other.query('BEGIN');
    for (const q of held) await other.query(q.sql, q.params);
    const running = run();
    await untilLockWait(watcher, what);
    await other.query('COMMIT');
    return await running;
  } finally {
    await Promise.all([other.end(), watcher.end()]);
  }
}

/**
 * Waits (with a deadline) until a statement of another connection of `client`'s database waits for a row
 * lock (PostgreSQL): how a race test knows the code under test reached the write a held transaction blocks.
 */
export async function untilLockWait(client: pg.Client, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const { rows } = await client.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`);
    if (rows[0].n > 0) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
