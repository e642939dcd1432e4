/**
 * The lock that puts changes of the queue's order within one priority one after the other: an item added (last
 * place), an item changed to the priority (last place there) and a move (the whole order renumbered). Each reads
 * the order and writes places from what it read; two at once on PostgreSQL, whose transactions run side by side,
 * gave two items one place, or an item added during a move a place ahead of the moved ones.
 *
 * PostgreSQL: a transaction-level advisory lock per priority, released by the commit or rollback (nothing to leak
 * on an error) and taken by every service on the database, not only this process. It is taken as the
 * transaction's first statement, before any row is locked, and each transaction takes one of them only: no
 * order of locks to get wrong, no deadlock. It must be a statement of its own: under READ COMMITTED a statement
 * reads the snapshot of its start, which a lock taken inside it would come after.
 * SQLite: the service's one connection runs transactions one after the other already.
 */
import { sql, type Transaction } from 'kysely';
import { dialectOf } from './dialect';

/** The first key of the two-key advisory locks that guard the queue's order ('QORD'); the second is the priority. */
export const QUEUE_ORDER_LOCK_CLASS = 0x514f5244;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function lockQueueOrder(trx: Transaction<any>, priority: number): Promise<void> {
  if (dialectOf(trx) !== 'postgres') return;
  await sql`SELECT pg_advisory_xact_lock(${sql.lit(QUEUE_ORDER_LOCK_CLASS)}, CAST(${priority} AS integer))`.execute(trx);
}
