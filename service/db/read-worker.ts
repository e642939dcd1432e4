/**
 * A second, query-only connection to the database in a worker thread, for the
 * long read-only aggregations (statistics over a year of a large farm).
 * better-sqlite3 is synchronous: on the main thread such a query would hold
 * the event loop for seconds, and with it every printer report, /ws frame and
 * API request. In the worker it holds nothing but itself.
 *
 * The worker opens the file in WAL mode like the main connection, so it reads
 * the latest committed data, never a half-written transaction. It starts on
 * the first query and runs one query at a time.
 */
import { Worker } from 'node:worker_threads';
import { Kysely, PostgresDialect, type CompiledQuery } from 'kysely';
import type pg from 'pg';
import { poolClosed, postgresPool } from './connection';

/** Runs in the worker (plain JavaScript, evaluated: it must work from the TypeScript sources and from dist/). */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file, { fileMustExist: true });
db.pragma('busy_timeout = 5000');
db.pragma('query_only = ON');
const statements = new Map();
parentPort.on('message', ({ id, sql, parameters }) => {
  try {
    let stmt = statements.get(sql);
    if (!stmt) statements.set(sql, (stmt = db.prepare(sql)));
    parentPort.postMessage({ id, rows: stmt.all(...parameters) });
  } catch (err) {
    parentPort.postMessage({ id, error: { name: err.name, code: err.code, message: err.message } });
  }
});
`;

interface Pending {
  resolve: (rows: unknown[]) => void;
  reject: (err: Error) => void;
}

export class ReadWorker {
  private worker: Worker | null = null;
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;
  private closed = false;

  constructor(private readonly file: string) {}

  /** The rows of a read-only query. SQLite errors keep their name and code (the API answers DATABASE_ERROR). */
  all<R>(query: CompiledQuery<R>): Promise<R[]> {
    if (this.closed) return Promise.reject(Object.assign(new Error('database closed'), { name: 'SqliteError', code: 'SQLITE_MISUSE' }));
    const worker = this.start();
    const id = this.nextId++;
    return new Promise<R[]>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (rows: unknown[]) => void, reject });
      worker.postMessage({ id, sql: query.sql, parameters: query.parameters });
    });
  }

  /** Stops the worker; queries still running fail. */
  async close(): Promise<void> {
    this.closed = true;
    const worker = this.worker;
    this.worker = null;
    if (worker) await worker.terminate();
    this.failAll(new Error('database closed'));
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { file: this.file, driver: require.resolve('better-sqlite3') } });
    // Closed explicitly with the store; it must never be what keeps a process alive.
    worker.unref();
    worker.on('message', (msg: { id: number; rows?: unknown[]; error?: { name: string; code?: string; message: string } }) => {
      const waiter = this.pending.get(msg.id);
      if (!waiter) return;
      this.pending.delete(msg.id);
      if (msg.error) waiter.reject(Object.assign(new Error(msg.error.message), msg.error));
      else waiter.resolve(msg.rows ?? []);
    });
    worker.on('error', (err) => {
      // A worker that failed to open the database (or crashed) fails its queries; the next query starts a new one.
      if (this.worker === worker) this.worker = null;
      this.failAll(Object.assign(new Error(err.message), { name: 'SqliteError', code: 'SQLITE_CANTOPEN' }));
    });
    worker.on('exit', () => {
      if (this.worker === worker) this.worker = null;
      this.failAll(Object.assign(new Error('database reader stopped'), { name: 'SqliteError', code: 'SQLITE_ABORT' }));
    });
    this.worker = worker;
    return worker;
  }

  private failAll(err: Error): void {
    for (const waiter of this.pending.values()) waiter.reject(err);
    this.pending.clear();
  }
}

/**
 * The PostgreSQL counterpart: a small read-only pool of its own beside the main one, so that a long
 * aggregation never takes a connection the printers' writes are waiting for. No thread is needed: the
 * server does the work and the event loop only waits for the answer.
 */
export class PostgresReader {
  private readonly db: Kysely<unknown>;
  private readonly pool: pg.Pool;

  constructor(url: string, connections = 2) {
    this.pool = postgresPool(url, connections, { readOnly: true });
    this.db = new Kysely<unknown>({ dialect: new PostgresDialect({ pool: this.pool }) });
  }

  private closed = false;

  async all<R>(query: CompiledQuery<R>): Promise<R[]> {
    // Like the SQLite worker: a query after close fails as a database error (SQLSTATE 08003, no connection).
    if (this.closed) throw Object.assign(new Error('database closed'), { name: 'error', code: '08003' });
    return (await this.db.executeQuery(query)).rows;
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.db.destroy();
    await poolClosed(this.pool);
  }
}
