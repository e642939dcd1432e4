/**
 * The most statements waiting for the database at once, for the burst tests: SQLite's turns count their own
 * (service/db/sqlite-turns.ts); on PostgreSQL the pool's queue is read each time a connection is asked for
 * (kysely asks once per query or transaction).
 */
import type pg from 'pg';
import type { Store } from '../../service/db';

export function watchWaiting(store: Store): { most: () => number; stop: () => void } {
  const connection = store.connection;
  if (connection.dialect === 'sqlite') {
    connection.turns.mostWaiting = 0;
    return { most: () => connection.turns.mostWaiting, stop: () => undefined };
  }
  const pool = connection.pool as pg.Pool & { connect: () => Promise<pg.PoolClient> };
  const connect = pool.connect.bind(pool);
  let most = 0;
  pool.connect = () => {
    const asked = connect();
    most = Math.max(most, pool.waitingCount);
    return asked;
  };
  return { most: () => most, stop: () => void (pool.connect = connect) };
}
