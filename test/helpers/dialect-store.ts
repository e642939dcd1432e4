/**
 * The store a `describeDialects` block works on: `const store = dialectStore(db)` opens one on the block's
 * database (SQLite, or a fresh PostgreSQL database) in a temp dir of its own before each test, or once for the
 * block with `{ per: 'block' }`, and closes it and removes the dir afterwards. What it returns stands for the
 * store of the moment (a new one each test), so a test keeps writing `store.files.get(...)` as if it held it.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openStore, type Store, type StoreOptions } from '../../service/db';
import { sqliteOf, type DialectUnderTest } from './dialects';

export interface DialectStoreOptions {
  /** 'test' (the default): a fresh store per test; 'block': one store for all the block's tests. */
  per?: 'test' | 'block';
  /** The database to open; default `db.options()`, a fresh one. */
  options?: (db: DialectUnderTest) => Promise<StoreOptions>;
  /** Rows every test starts from, written once the store is open. */
  seed?: (store: Store) => Promise<unknown>;
}

export function dialectStore(db: DialectUnderTest, { per = 'test', options = (d) => d.options(), seed }: DialectStoreOptions = {}): Store {
  let dir: string | undefined;
  let current: Store | undefined;
  (per === 'test' ? beforeEach : beforeAll)(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'printfarm-dialect-'));
    current = await openStore(dir, await options(db));
    await seed?.(current);
  });
  (per === 'test' ? afterEach : afterAll)(async () => {
    await current?.close();
    current = undefined;
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });
  // The hooks above run after this returns: the tests get a stand-in that reaches the store open at the time.
  return new Proxy({} as Store, {
    get(_target, key) {
      if (!current) throw new Error('the store is open only while a test of its block runs');
      return Reflect.get(current, key);
    },
  });
}

/** The PostgreSQL database of a store, for a second connection of a race test; undefined on SQLite. */
export function databaseUrlOf(store: Store): string | undefined {
  const connection = store.connection;
  return connection.dialect === 'postgres' ? connection.url : undefined;
}

/** The statements (SQL and parameters) `run` makes the store send. */
export async function statementsOf(store: Store, run: () => Promise<unknown>): Promise<{ sql: string; parameters: readonly unknown[] }[]> {
  const seen: { sql: string; parameters: readonly unknown[] }[] = [];
  const listener = (sql: string, parameters: readonly unknown[]) => seen.push({ sql, parameters });
  store.connection.queryListeners.add(listener);
  try {
    await run();
  } finally {
    store.connection.queryListeners.delete(listener);
  }
  return seen;
}

/**
 * The database's own plan of each statement, one line per step: SQLite's EXPLAIN QUERY PLAN; PostgreSQL's
 * EXPLAIN with sequential scans and sorts priced out of reach (on a near-empty table the planner would rightly
 * prefer them; a plan test asks whether an index CAN serve the statement).
 */
export async function plansOf(store: Store, statements: { sql: string; parameters: readonly unknown[] }[]): Promise<{ sql: string; plan: string[] }[]> {
  const connection = store.connection;
  if (connection.dialect === 'sqlite') {
    const sqlite = sqliteOf(connection);
    return statements.map(({ sql, parameters }) => ({ sql, plan: (sqlite.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...(parameters as unknown[])) as { detail: string }[]).map((r) => r.detail) }));
  }
  const client = await connection.pool.connect();
  try {
    await client.query('SET enable_seqscan = off');
    await client.query('SET enable_sort = off');
    const planned = [];
    for (const { sql, parameters } of statements) {
      const { rows } = await client.query(`EXPLAIN ${sql}`, parameters as unknown[]);
      planned.push({ sql, plan: rows.map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN'].trim()) });
    }
    return planned;
  } finally {
    client.release();
  }
}
