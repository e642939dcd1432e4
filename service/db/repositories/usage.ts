import { sql, type Generated, type Selectable } from 'kysely';
import type { Db } from '../connection';
import { dialectOf } from '../dialect';

/** Table types of migration 007 (reached through `withTables`, so schema.ts stays as it is). */
export interface UsageEventsTable {
  id: Generated<number>;
  type: string;
  /** The hour the counter belongs to (ISO timestamp truncated to the hour). */
  bucket: string;
  count: number;
  first_at: string;
  last_at: string;
  submitted: Generated<number>;
  submitted_at: string | null;
}

export interface UsageStateTable {
  id: number;
  opted_in: number;
  installation_id: string | null;
  opted_in_at: string | null;
  opted_out_at: string | null;
  last_submission_at: string | null;
  last_attempt_at: string | null;
  last_error: string | null;
  submission_count: number;
  uploads_seen_at: string | null;
  /** JSON {payload, captured}: the submission sent but not yet answered (migration 018). */
  pending_submission: string | null;
  updated_at: string;
}

export type UsageEventRow = Selectable<UsageEventsTable>;

export interface UsageEventRecord {
  id: number;
  type: string;
  bucket: string;
  count: number;
  first_at: string;
  last_at: string;
  submitted: boolean;
  submitted_at: string | null;
}

/** The stored row as the service sees it: the flag a boolean, the row id internal. */
export type UsageState = Omit<UsageStateTable, 'id' | 'opted_in'> & { opted_in: boolean };

export type UsageStatePatch = Partial<Omit<UsageState, 'updated_at'>>;

const toEvent = (row: UsageEventRow): UsageEventRecord => ({ ...row, submitted: row.submitted === 1 });

/** What a submission covered: the open counters as they were when the payload was built. */
export interface CapturedCounter {
  id: number;
  count: number;
}

/** Local usage counters and the opt-in state. */
export class UsageRepository {
  private readonly db;

  constructor(db: Db) {
    this.db = db.withTables<{ usage_events: UsageEventsTable; usage_state: UsageStateTable }>();
  }

  async state(): Promise<UsageState> {
    const row = await this.db.selectFrom('usage_state').selectAll().where('id', '=', 1).executeTakeFirst();
    if (!row) throw new Error('usage_state row missing (migration 007 not applied?)');
    const { id: _id, opted_in, ...rest } = row;
    return { ...rest, opted_in: opted_in === 1 };
  }

  async updateState(patch: UsageStatePatch, at: string): Promise<void> {
    const { opted_in, ...rest } = patch;
    await this.db
      .updateTable('usage_state')
      .set({ ...rest, ...(opted_in === undefined ? {} : { opted_in: opted_in ? 1 : 0 }), updated_at: at })
      .where('id', '=', 1)
      .execute();
  }

  /** Adds `count` to the open counter of (type, hour of `at`). */
  async add(type: string, count: number, at: string): Promise<void> {
    const bucket = `${at.slice(0, 13)}:00:00.000Z`;
    await this.db
      .insertInto('usage_events')
      .values({ type, bucket, count, first_at: at, last_at: at })
      .onConflict((oc) =>
        oc
          .columns(['type', 'bucket'])
          // The partial index's predicate, as a literal: SQLite matches it textually (a bound 0 would not do).
          .where('submitted', '=', sql.lit(0))
          .doUpdateSet({ count: sql`usage_events.count + excluded.count`, last_at: sql`excluded.last_at` }),
      )
      .execute();
  }

  /** Open counters, oldest first. */
  async pending(): Promise<UsageEventRecord[]> {
    const rows = await this.db.selectFrom('usage_events').selectAll().where('submitted', '=', 0).orderBy('bucket').orderBy('id').execute();
    return rows.map(toEvent);
  }

  /** Every counter, newest first. */
  async all(limit?: number): Promise<UsageEventRecord[]> {
    let q = this.db.selectFrom('usage_events').selectAll().orderBy('bucket', 'desc').orderBy('id', 'desc');
    if (limit !== undefined) q = q.limit(limit);
    return (await q.execute()).map(toEvent);
  }

  /** Totals per type: pending (not yet submitted) and all time. */
  async totals(): Promise<{ type: string; pending: number; total: number }[]> {
    const rows = await this.db
      .selectFrom('usage_events')
      .select((eb) => [
        'type',
        eb.fn.sum<number>(sql`CASE WHEN submitted = 0 THEN count ELSE 0 END`).as('pending'),
        eb.fn.sum<number>('count').as('total'),
      ])
      .groupBy('type')
      .orderBy('type')
      .execute();
    return rows.map((r) => ({ type: r.type, pending: Number(r.pending), total: Number(r.total) }));
  }

  async countEvents(): Promise<number> {
    const { n } = await this.db.selectFrom('usage_events').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    return Number(n);
  }

  /**
   * Marks what a submission covered as submitted. Counts that arrived after the payload was built stay
   * open (split into a new row), so nothing is marked that was not sent.
   */
  async markSubmitted(captured: CapturedCounter[], at: string): Promise<number> {
    const postgres = dialectOf(this.db) === 'postgres';
    return this.db.transaction().execute(async (trx) => {
      let marked = 0;
      for (const { id, count } of captured) {
        // PostgreSQL runs a count (add) beside this transaction: the row is locked as it is read, else a count
        // committed between this read and the update below would be written over (SQLite has one writer anyway).
        let read = trx.selectFrom('usage_events').selectAll().where('id', '=', id).where('submitted', '=', 0);
        if (postgres) read = read.forUpdate();
        const row = await read.executeTakeFirst();
        if (!row) continue;
        await trx.updateTable('usage_events').set({ submitted: 1, submitted_at: at, count }).where('id', '=', id).execute();
        if (row.count > count) {
          await trx
            .insertInto('usage_events')
            .values({ type: row.type, bucket: row.bucket, count: row.count - count, first_at: row.first_at, last_at: row.last_at })
            .execute();
        }
        marked++;
      }
      return marked;
    });
  }

  /** Removes every counter and resets the state to a fresh one with the given opt-in choice. */
  async deleteAll(state: UsageStatePatch, at: string): Promise<number> {
    return this.db.transaction().execute(async (trx) => {
      const result = await trx.deleteFrom('usage_events').executeTakeFirst();
      const { opted_in, ...rest } = state;
      await trx
        .updateTable('usage_state')
        .set({
          installation_id: null,
          opted_in_at: null,
          opted_out_at: null,
          last_submission_at: null,
          last_attempt_at: null,
          last_error: null,
          submission_count: 0,
          uploads_seen_at: null,
          pending_submission: null,
          ...rest,
          ...(opted_in === undefined ? {} : { opted_in: opted_in ? 1 : 0 }),
          updated_at: at,
        })
        .where('id', '=', 1)
        .execute();
      return Number(result.numDeletedRows);
    });
  }

  /** Printers per type (no names, addresses or serial numbers). */
  async printerTypeCounts(): Promise<Record<string, number>> {
    const rows = await this.db
      .selectFrom('printers')
      .select((eb) => ['type', eb.fn.countAll<number>().as('n')])
      .groupBy('type')
      .orderBy('type')
      .execute();
    return Object.fromEntries(rows.map((r) => [r.type, Number(r.n)]));
  }

  /** Local uploads (files without a printer) stored after `since`, and the newest one's time. */
  async uploadsSince(since: string): Promise<{ count: number; newest: string | null }> {
    const row = await this.db
      .selectFrom('files')
      .select((eb) => [eb.fn.countAll<number>().as('n'), eb.fn.max('created_at').as('newest')])
      .where('printer_id', 'is', null)
      .where('created_at', '>', since)
      .executeTakeFirstOrThrow();
    return { count: Number(row.n), newest: (row.newest as string | null) ?? null };
  }
}
