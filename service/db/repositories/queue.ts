/**
 * The print queue's tables: queue items and their dispatches (one per started
 * copy). Queries use kysely's builder only (no SQLite-only functions), so the
 * repository runs on PostgreSQL as well.
 */
import { sql, type Selectable, type UpdateObject } from 'kysely';
import type { Db } from '../connection';
import type { DB, QueueDispatchesTable, QueueItemsTable } from '../schema';
import { dialectOf, readSnapshot } from '../dialect';
import { lockQueueOrder } from '../queue-order-lock';

export const QUEUE_ITEM_STATUSES = ['queued', 'held', 'printing', 'completed', 'failed', 'cancelled'] as const;
export type QueueItemStatus = (typeof QUEUE_ITEM_STATUSES)[number];

export const DISPATCH_STATES = ['claimed', 'uploading', 'starting', 'printing', 'completed', 'failed', 'cancelled', 'start_failed'] as const;
export type DispatchState = (typeof DISPATCH_STATES)[number];
/** Items with a place in the queue's order (a move counts these; a new item goes after the last of them). */
export const OPEN_ITEM_STATUSES: readonly QueueItemStatus[] = ['queued', 'held', 'printing'];
/** A dispatch in one of these holds its printer and counts as a started (or starting) copy. */
export const OPEN_DISPATCH_STATES: readonly DispatchState[] = ['claimed', 'uploading', 'starting', 'printing'];
/** A copy in one of these is completed or under way: it counts against the item's copies. */
export const STARTED_DISPATCH_STATES: readonly DispatchState[] = [...OPEN_DISPATCH_STATES, 'completed'];
/** A dispatch that ended without a completed print: its copy goes back to the queue. */
export const UNSUCCESSFUL_DISPATCH_STATES: readonly DispatchState[] = ['failed', 'cancelled', 'start_failed'];

export interface QueueTarget {
  printer_ids?: string[];
  printer_type?: 'bambu_lab' | 'prusa_core' | 'klipper';
  models?: string[];
}

export interface QueueRequirements {
  material?: string;
  color?: string;
  nozzle_diameter?: number;
}

export interface QueueOptions {
  bed_leveling?: boolean;
  timelapse?: boolean;
  flow_cali?: boolean;
  vibration_cali?: boolean;
}

/** One sliced file of an item (a variant per printer model). */
export interface QueueVariant {
  file_id: string;
  plate: number;
}

export interface QueueItemRecord extends Omit<Selectable<QueueItemsTable>, 'status' | 'target' | 'requirements' | 'options' | 'files'> {
  status: QueueItemStatus;
  target: QueueTarget | null;
  requirements: QueueRequirements | null;
  options: QueueOptions | null;
  /** Variants; null: the item's one file_id/plate. */
  files: QueueVariant[] | null;
}

export interface DispatchRecord extends Omit<Selectable<QueueDispatchesTable>, 'state'> {
  state: DispatchState;
}

export type QueueItemPatch = Partial<Omit<QueueItemRecord, 'id' | 'created_at'>>;
export type DispatchPatch = Partial<Omit<DispatchRecord, 'id' | 'item_id' | 'printer_id' | 'created_at'>>;

const JSON_COLUMNS = ['target', 'requirements', 'options', 'files'] as const;

function itemRow(values: QueueItemPatch): Partial<QueueItemsTable> {
  const row: Record<string, unknown> = { ...values };
  for (const col of JSON_COLUMNS) if (col in values) row[col] = values[col] == null ? null : JSON.stringify(values[col]);
  return row as Partial<QueueItemsTable>;
}

function itemRecord(row: Selectable<QueueItemsTable>): QueueItemRecord {
  const parse = <T>(v: string | null) => (v == null ? null : (JSON.parse(v) as T));
  return {
    ...row,
    status: row.status as QueueItemStatus,
    target: parse<QueueTarget>(row.target),
    requirements: parse<QueueRequirements>(row.requirements),
    options: parse<QueueOptions>(row.options),
    files: parse<QueueVariant[]>(row.files),
    position: Number(row.position),
  };
}

const dispatchRecord = (row: Selectable<QueueDispatchesTable>): DispatchRecord => ({
  ...row,
  state: row.state as DispatchState,
  job_id: row.job_id === null ? null : Number(row.job_id),
  plate: row.plate === null || row.plate === undefined ? null : Number(row.plate),
  file_id: row.file_id ?? null,
});

/** The place after the last open item of `priority` (1 when there is none), as a subquery of the statement that writes it. */
function nextPlace(db: Db, priority: number) {
  return db
    .selectFrom('queue_items')
    .select(sql<number>`coalesce(max(position), 0) + 1`.as('next'))
    .where('priority', '=', priority)
    .where('status', 'in', [...OPEN_ITEM_STATUSES]);
}

/** The update of transitionItem (see there), on `db` or a transaction. */
function compareAndSet(db: Db, id: string, from: readonly QueueItemStatus[], values: UpdateObject<DB, 'queue_items'>, started?: number) {
  let update = db.updateTable('queue_items').set(values).where('id', '=', id).where('status', 'in', [...from]);
  if (started !== undefined) {
    update = update.where((eb) =>
      eb(
        eb.selectFrom('queue_dispatches').select((s) => s.fn.countAll<number>().as('n')).where('item_id', '=', id).where('state', 'in', [...STARTED_DISPATCH_STATES]),
        '=',
        started,
      ),
    );
  }
  return update;
}

/** The items in one of `statuses` (of one priority when given) in the dispatcher's order. */
async function ordered(db: Db, statuses: readonly QueueItemStatus[], priority?: number): Promise<QueueItemRecord[]> {
  let query = db.selectFrom('queue_items').selectAll().where('status', 'in', [...statuses]);
  if (priority !== undefined) query = query.where('priority', '=', priority);
  const rows = await query.orderBy('priority', 'desc').orderBy('position', 'asc').orderBy('created_at', 'asc').orderBy('id', 'asc').execute();
  return rows.map(itemRecord);
}

/** Items whose places one statement of a move writes (two parameters each: well below either database's limit). */
const MOVE_BATCH = 500;
/** Ids one `in (...)` holds. */
const IN_BATCH = 1000;

export class QueueRepository {
  constructor(private readonly db: Db) {}

  /** Inserts an item last among the open items of its priority (see queue-order-lock.ts). */
  async insertItem(item: QueueItemRecord): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await lockQueueOrder(trx, item.priority);
      // The place in the insert itself: no round trip more than the insert alone.
      await trx
        .insertInto('queue_items')
        .values({ ...(itemRow(item) as QueueItemsTable), position: nextPlace(trx, item.priority) })
        .execute();
    });
  }

  /**
   * transitionItem that also puts the item last among the open items of `patch.priority` (its new priority), the
   * place decided under that priority's order lock.
   */
  async transitionItemToPriority(id: string, from: readonly QueueItemStatus[], patch: QueueItemPatch & { priority: number }, started?: number): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      await lockQueueOrder(trx, patch.priority);
      const result = await compareAndSet(trx, id, from, { ...itemRow(patch), position: nextPlace(trx, patch.priority) }, started).executeTakeFirst();
      return result.numUpdatedRows > 0n;
    });
  }

  /**
   * Moves an open item within its priority: in one transaction under the priority's order lock (no add or other move
   * between the read and the write), `place` gets the other open items of the priority in their order and answers
   * the item's 0-based index among them (negative: nowhere, nothing is written); they all get the positions 1, 2, ...
   * 'gone' when the item is no longer an open item of `priority`.
   */
  async moveItem(id: string, priority: number, place: (others: QueueItemRecord[]) => number, updatedAt: string): Promise<'moved' | 'unplaced' | 'gone'> {
    return this.db.transaction().execute(async (trx) => {
      await lockQueueOrder(trx, priority);
      const group = await ordered(trx, OPEN_ITEM_STATUSES, priority);
      const item = group.find((i) => i.id === id);
      if (!item) return 'gone';
      const others = group.filter((i) => i.id !== id);
      const at = place(others);
      if (at < 0) return 'unplaced';
      others.splice(Math.min(at, others.length), 0, item);
      // Rows are locked in id order whatever the new order: any other writer of several of them locks them in the
      // same order (PostgreSQL would otherwise find a deadlock). An item that changed its priority meanwhile (that
      // takes the other priority's lock) keeps the place its new priority gave it.
      const places = others.map((i, n) => ({ id: i.id, position: n + 1 })).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
      if (dialectOf(trx) === 'postgres') {
        await trx.selectFrom('queue_items').select('id').where('id', 'in', places.map((p) => p.id)).orderBy('id').forUpdate().execute();
      }
      // A statement per MOVE_BATCH items, not one per item: a move in a queue of 500 items was 500 updates.
      for (let from = 0; from < places.length; from += MOVE_BATCH) {
        const batch = places.slice(from, from + MOVE_BATCH);
        const position = sql<number>`case id ${sql.join(batch.map((p) => sql`when ${p.id} then cast(${p.position} as integer)`), sql` `)} end`;
        await trx.updateTable('queue_items').set({ position, updated_at: updatedAt }).where('id', 'in', batch.map((p) => p.id)).where('priority', '=', priority).execute();
      }
      return 'moved';
    });
  }

  async getItem(id: string): Promise<QueueItemRecord | undefined> {
    const row = await this.db.selectFrom('queue_items').selectAll().where('id', '=', id).executeTakeFirst();
    return row && itemRecord(row);
  }

  /** The items of `ids` in one statement (the schedule reads the item of each printer's copy on its way). */
  async getItems(ids: readonly string[]): Promise<Map<string, QueueItemRecord>> {
    const out = new Map<string, QueueItemRecord>();
    const unique = [...new Set(ids)];
    for (let from = 0; from < unique.length; from += IN_BATCH) {
      for (const row of await this.db.selectFrom('queue_items').selectAll().where('id', 'in', unique.slice(from, from + IN_BATCH)).execute()) out.set(row.id, itemRecord(row));
    }
    return out;
  }

  /**
   * Changes an item only while its status is one of `from` (compare-and-set: a hold and a dispatch can't both win)
   * and, when `started` is given, while exactly that many of its copies are completed or under way (a change of
   * copies decided on that count is not written over a copy claimed or ended meanwhile).
   */
  async transitionItem(id: string, from: readonly QueueItemStatus[], patch: QueueItemPatch, started?: number): Promise<boolean> {
    const result = await compareAndSet(this.db, id, from, itemRow(patch), started).executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /** A page of items in the dispatcher's order: higher priority first, then by place (moves), then oldest first. */
  listItems(q: { statuses?: readonly QueueItemStatus[]; page: number; limit: number }): Promise<{ items: QueueItemRecord[]; total: number }> {
    // The page and its total on one snapshot: they agree while items are added or change status.
    return readSnapshot(this.db, async (trx) => {
      let base = trx.selectFrom('queue_items');
      if (q.statuses) base = base.where('status', 'in', [...q.statuses]);
      const { total } = await base.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow();
      const rows = await base
        .selectAll()
        .orderBy('priority', 'desc')
        .orderBy('position', 'asc')
        .orderBy('created_at', 'asc')
        .orderBy('id', 'asc')
        .limit(q.limit)
        .offset((q.page - 1) * q.limit)
        .execute();
      return { items: rows.map(itemRecord), total: Number(total) };
    });
  }

  /** Every item in one of `statuses`, in the dispatcher's order. */
  itemsIn(statuses: readonly QueueItemStatus[]): Promise<QueueItemRecord[]> {
    return ordered(this.db, statuses);
  }

  async countByStatus(): Promise<Record<string, number>> {
    const rows = await this.db
      .selectFrom('queue_items')
      .select(['status', (eb) => eb.fn.countAll<number>().as('n')])
      .groupBy('status')
      .execute();
    return Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));
  }

  /**
   * The dispatches of each item, oldest first. Two copies claimed in one pass can share a millisecond, and ids are
   * random: within the same created_at, the attempt number (1, 2, ... per item, in claim order) says which came first.
   */
  async dispatchesOf(itemIds: readonly string[]): Promise<Map<string, DispatchRecord[]>> {
    const out = new Map<string, DispatchRecord[]>(itemIds.map((id) => [id, []]));
    const unique = [...out.keys()];
    // At most IN_BATCH ids a statement (SQLite takes 32766 parameters, PostgreSQL 65535): each item's
    // dispatches come whole from one statement, in their order.
    for (let from = 0; from < unique.length; from += IN_BATCH) {
      const rows = await this.db
        .selectFrom('queue_dispatches')
        .selectAll()
        .where('item_id', 'in', unique.slice(from, from + IN_BATCH))
        .orderBy('created_at', 'asc')
        .orderBy('attempt', 'asc')
        .orderBy('id', 'asc')
        .execute();
      for (const row of rows) out.get(row.item_id)?.push(dispatchRecord(row));
    }
    return out;
  }

  async getDispatch(id: string): Promise<DispatchRecord | undefined> {
    const row = await this.db.selectFrom('queue_dispatches').selectAll().where('id', '=', id).executeTakeFirst();
    return row && dispatchRecord(row);
  }

  /** Dispatches that are not over yet (claimed, uploading, starting, printing). */
  async openDispatches(): Promise<DispatchRecord[]> {
    const rows = await this.db.selectFrom('queue_dispatches').selectAll().where('state', 'in', [...OPEN_DISPATCH_STATES]).orderBy('created_at', 'asc').execute();
    return rows.map(dispatchRecord);
  }

  /**
   * Claims a printer for a copy: inserts the dispatch only while the printer has no open dispatch and the item is
   * still queued with a copy left to start, in one transaction (a second process or a racing pass cannot claim the
   * same printer; an item cancelled, held or cut to fewer copies after the pass read it gets no printer). False when
   * taken or no longer wanted.
   */
  async claim(dispatch: DispatchRecord): Promise<boolean> {
    const postgres = dialectOf(this.db) === 'postgres';
    return this.db.transaction().execute(async (trx) => {
      // PostgreSQL runs transactions side by side: the item's and the printer's rows are locked first, so that a
      // cancel, a hold or a second claim waits and then sees this one's dispatch (SQLite has one writer anyway).
      let item = trx.selectFrom('queue_items').select(['status', 'copies']).where('id', '=', dispatch.item_id);
      if (postgres) item = item.forUpdate();
      const wanted = await item.executeTakeFirst();
      if (!wanted || wanted.status !== 'queued') return false;
      if (postgres) await trx.selectFrom('printers').select('id').where('id', '=', dispatch.printer_id).forUpdate().execute();
      const { started } = await trx
        .selectFrom('queue_dispatches')
        .select((eb) => eb.fn.countAll<number>().as('started'))
        .where('item_id', '=', dispatch.item_id)
        .where('state', 'in', [...STARTED_DISPATCH_STATES])
        .executeTakeFirstOrThrow();
      if (Number(started) >= Number(wanted.copies)) return false;
      const busy = await trx
        .selectFrom('queue_dispatches')
        .select('id')
        .where('printer_id', '=', dispatch.printer_id)
        .where('state', 'in', [...OPEN_DISPATCH_STATES])
        .executeTakeFirst();
      if (busy) return false;
      await trx.insertInto('queue_dispatches').values(dispatch).execute();
      return true;
    });
  }

  /** Moves a dispatch on only while it is in one of `from` (so a late event cannot undo a newer state). */
  async transitionDispatch(id: string, from: readonly DispatchState[], patch: DispatchPatch): Promise<boolean> {
    const result = await this.db.updateTable('queue_dispatches').set(patch).where('id', '=', id).where('state', 'in', [...from]).executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  async updateDispatch(id: string, patch: DispatchPatch): Promise<boolean> {
    const result = await this.db.updateTable('queue_dispatches').set(patch).where('id', '=', id).executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }
}
