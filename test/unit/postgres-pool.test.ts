/**
 * A PostgreSQL connection that dies under the service (a server restart, an
 * administrator's pg_terminate_backend) fails the query it was running, and
 * nothing else: the process keeps running and the next query gets a fresh
 * connection.
 */
import fs from 'node:fs';
import { sql } from 'kysely';
import pg from 'pg';
import { openStore, type Store } from '../../service/db';
import { isDatabaseError } from '../../service/db/connection';
import { PostgresReader } from '../../service/db/read-worker';
import { postgresUnavailable, usePostgres } from '../helpers/postgres';
import { tempDir } from '../helpers/service';

const missing = postgresUnavailable();
(missing ? describe.skip : describe)(`connections lost under the service${missing ? ` (skipped: ${missing})` : ''}`, () => {
  const server = missing ? null : usePostgres();
  let dir: string;
  let store: Store;
  let url: string;
  beforeAll(async () => {
    dir = tempDir('printfarm-pgpool-');
    url = await (await server!()).createDatabase('pool');
    store = await openStore(dir, { databaseUrl: url });
  });
  afterAll(async () => {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('a backend terminated in the middle of a query fails that query only; the store answers again right after', async () => {
    // Its outcome, taken at once (a rejection nobody waits for yet would count as unhandled).
    const running = sql`SELECT pg_sleep(30)`.execute(store.connection.db).then(
      () => null,
      (err: unknown) => err,
    );
    const admin = new pg.Client({ connectionString: (await server!()).adminUrl });
    await admin.connect();
    try {
      // Wait until the query runs, then end every backend of the store's database (idle ones included).
      const db = new URL(url).pathname.slice(1);
      for (let i = 0; i < 200; i++) {
        const { rows } = await admin.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND query LIKE 'SELECT pg_sleep%' AND state = 'active'`, [db]);
        if (rows[0].n > 0) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [db]);
    } finally {
      await admin.end();
    }
    const failure = await running;
    expect(isDatabaseError(failure)).toBe(true);
    // Idle connections ended too; each fails at most the one query that finds it broken, then the pool has
    // dropped it: within a few queries (never a hang, never a crash) the store answers from fresh connections.
    const outcomes: string[] = [];
    for (let i = 0; i < 12 && outcomes.at(-1) !== 'ok'; i++) {
      outcomes.push(await store.jobs.count().then(
        (n) => (n === 0 ? 'ok' : `count ${n}`),
        (err: unknown) => (isDatabaseError(err) ? 'database error' : `other: ${String(err)}`),
      ));
    }
    expect(outcomes.at(-1)).toBe('ok');
    expect(outcomes.filter((o) => o !== 'ok' && o !== 'database error')).toEqual([]);
    expect(await store.ping()).toBe(true);
  });

  test('a closed store and reader have closed every socket to the server: a server stopped next (or a jest worker exiting) finds none still open', async () => {
    const sockets: { destroyed: boolean }[] = [];
    const track = (client: pg.PoolClient) => sockets.push((client as unknown as { connection: { stream: { destroyed: boolean } } }).connection.stream);
    const ownDir = tempDir('printfarm-pgclose-');
    const own = await openStore(ownDir, { databaseUrl: url });
    const reader = new PostgresReader(url, 3);
    try {
      if (own.connection.dialect !== 'postgres') throw new Error('a PostgreSQL store was opened');
      own.connection.pool.on('connect', track);
      (reader as unknown as { pool: pg.Pool }).pool.on('connect', track);
      // Several connections at once in each pool.
      await Promise.all(Array.from({ length: 6 }, () => sql`SELECT pg_sleep(0.05)`.execute(own.connection.db)));
      await Promise.all(Array.from({ length: 3 }, () => reader.all(sql`SELECT pg_sleep(0.05)`.compile(own.connection.db))));
    } finally {
      await own.close();
      await reader.close();
      fs.rmSync(ownDir, { recursive: true, force: true });
    }
    expect(sockets.length).toBeGreaterThanOrEqual(6);
    expect(sockets.filter((s) => !s.destroyed).length).toBe(0);
  });
});
