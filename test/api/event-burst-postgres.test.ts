/**
 * A burst of job ends on PostgreSQL: the listeners' work (notifications, filament usage, ideas) takes a few of
 * the pool's connections at a time, so the pool's queue stays short and a request sent mid-burst is
 * answered before the burst's work ends. With one chain of work per event, the burst's thousands of queries
 * waited in pg-pool's queue and a request waited behind all of them (up to connectionTimeoutMillis, then failed).
 */
import type pg from 'pg';
import { postgresUnavailable, usePostgres } from '../helpers/postgres';
import { startService, type Harness } from '../helpers/service';
import { answeredMidBurst, burstReady, keptAlive, watchBurst } from './event-burst-fixtures';

// A burst's work takes 7 to 11 s alone and several times that beside the rest of the suite on two cores: its
// own waits are bounded (60 s at most), the test's limit is above them.
jest.setTimeout(90_000);

const missing = postgresUnavailable();
if (missing) process.stderr.write(`note: event bursts on PostgreSQL skipped: ${missing}\n`);

(missing ? describe.skip : describe)('event bursts on PostgreSQL', () => {
  const server = usePostgres();
  let h: Harness | undefined;
  let agent: ReturnType<typeof keptAlive> | undefined;
  afterEach(async () => {
    agent?.close();
    await h?.close();
  });

  test('300 jobs completing in one turn with a pool of 6: the pool queue stays within the five tasks, a request sent mid-burst is answered before the burst\'s work ends, every notification, usage and idea happens once', async () => {
    const databaseUrl = await (await server()).createDatabase();
    h = await startService({ databaseUrl, env: { DATABASE_POOL_MAX: '6' } });
    const N = 300;
    const ready = await burstReady(h, N);
    const seeded = ready.seeded;
    agent = ready.agent;
    const connection = h.service.context.store.connection;
    if (connection.dialect !== 'postgres') throw new Error('this test reads the PostgreSQL pool');
    // The pool's own queue, read each time a connection is asked for (kysely asks once per query or transaction).
    const pool = connection.pool as pg.Pool & { connect: () => Promise<pg.PoolClient> };
    const connect = pool.connect.bind(pool);
    let mostWaiting = 0;
    pool.connect = () => {
      const asked = connect();
      mostWaiting = Math.max(mostWaiting, pool.waitingCount);
      return asked;
    };
    const burst = watchBurst(h);
    try {
      await answeredMidBurst(burst, agent, seeded.ids);
      // Five tasks at most run (one notification, two of filament usage, two of ideas): the pool's queue holds
      // those that wait for a connection being opened, never one query per job and listener.
      expect(mostWaiting).toBeLessThanOrEqual(5);
    } finally {
      pool.connect = connect;
      burst.stop();
    }
    await burst.expectEachOnce(seeded);
  });
});
