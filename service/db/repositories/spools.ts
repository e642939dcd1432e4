/**
 * The embedded spool inventory (table `spools`) and, for Spoolman mode, which
 * slot holds which Spoolman spool (`spoolman_slots`). A slot holds at most one
 * spool: assignment moves the slot's previous spool out in the same
 * transaction (unique index on printer_id + slot as the last guard).
 */
import type { Insertable, Selectable, Updateable } from 'kysely';
import { isUniqueViolation, type Db } from '../connection';
import { dialectOf, readSnapshot } from '../dialect';
import type { SpoolsTable } from '../schema';

export interface SpoolRecord extends Omit<Selectable<SpoolsTable>, 'archived' | 'low_notified'> {
  archived: boolean;
  low_notified: boolean;
}

export type NewSpool = Omit<SpoolRecord, 'id' | 'low_notified'> & { low_notified?: boolean };
export type SpoolPatch = Partial<Omit<SpoolRecord, 'id' | 'created_at'>>;

export interface SpoolQuery {
  material?: string;
  printer_id?: string;
  archived?: boolean;
  /** Only spools with less than this many grams left. */
  below_g?: number;
  /** Only spools with at least this many grams left. */
  at_least_g?: number;
  page: number;
  limit: number;
  order_by: 'id' | 'remaining_weight_g' | 'updated_at';
  order_dir: 'asc' | 'desc';
}

export interface SlotRef {
  printer_id: string;
  slot: number;
}

function toRow(values: SpoolPatch | NewSpool): Updateable<SpoolsTable> {
  const row: Record<string, unknown> = { ...values };
  if (values.archived !== undefined) row.archived = values.archived ? 1 : 0;
  if (values.low_notified !== undefined) row.low_notified = values.low_notified ? 1 : 0;
  return row as Updateable<SpoolsTable>;
}

const toRecord = (row: Selectable<SpoolsTable>): SpoolRecord => ({
  ...row,
  id: Number(row.id),
  slot: row.slot === null ? null : Number(row.slot),
  archived: Number(row.archived) === 1,
  low_notified: Number(row.low_notified) === 1,
});

/** The unique indexes that keep one spool per slot (and, in Spoolman mode, one slot per spool). */
const SLOT_INDEXES = new Set(['spools_slot', 'spoolman_slots_pk', 'spoolman_slots_spool']);

/**
 * Runs a slot load again when PostgreSQL refuses it for a load of the same slot committed meanwhile (the two
 * ran side by side; SQLite's one writer runs them one after the other): the second run sees that load and
 * takes its spool out, as on SQLite. A few runs at most; anything else is thrown at once.
 */
async function redoOnSlotClash<T>(postgres: boolean, load: () => Promise<T>): Promise<T> {
  for (let run = 1; ; run++) {
    try {
      return await load();
    } catch (err) {
      const index = (err as { constraint?: unknown }).constraint;
      if (!postgres || run >= 3 || !isUniqueViolation(err) || typeof index !== 'string' || !SLOT_INDEXES.has(index)) throw err;
    }
  }
}

export class SpoolsRepository {
  constructor(private readonly db: Db) {}

  async get(id: number): Promise<SpoolRecord | undefined> {
    const row = await this.db.selectFrom('spools').selectAll().where('id', '=', id).executeTakeFirst();
    return row && toRecord(row);
  }

  async insert(spool: NewSpool): Promise<SpoolRecord> {
    const row = await this.db
      .insertInto('spools')
      .values(toRow(spool) as Insertable<SpoolsTable>)
      .returningAll()
      .executeTakeFirstOrThrow();
    return toRecord(row);
  }

  async update(id: number, patch: SpoolPatch): Promise<boolean> {
    const result = await this.db.updateTable('spools').set(toRow(patch)).where('id', '=', id).executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /** Deletes a spool only while it is in no slot; false when it is in one (or gone). */
  async deleteUnassigned(id: number): Promise<boolean> {
    const result = await this.db.deleteFrom('spools').where('id', '=', id).where('printer_id', 'is', null).executeTakeFirst();
    return result.numDeletedRows > 0n;
  }

  list(q: SpoolQuery): Promise<{ spools: SpoolRecord[]; total: number }> {
    return readSnapshot(this.db, async (trx) => {
      let base = trx.selectFrom('spools');
      if (q.material !== undefined) base = base.where((eb) => eb(eb.fn('upper', ['material']), '=', q.material!.toUpperCase()));
      if (q.printer_id !== undefined) base = base.where('printer_id', '=', q.printer_id);
      if (q.archived !== undefined) base = base.where('archived', '=', q.archived ? 1 : 0);
      if (q.below_g !== undefined) base = base.where('remaining_weight_g', '<', q.below_g);
      if (q.at_least_g !== undefined) base = base.where('remaining_weight_g', '>=', q.at_least_g);
      const { total } = await base.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow();
      const rows = await base
        .selectAll()
        .orderBy(q.order_by, q.order_dir)
        .orderBy('id', 'asc')
        .limit(q.limit)
        .offset((q.page - 1) * q.limit)
        .execute();
      return { spools: rows.map(toRecord), total: Number(total) };
    });
  }

  /** Every spool in a slot (a farm has dozens): the in-memory view of what is loaded where. */
  async assigned(): Promise<SpoolRecord[]> {
    const rows = await this.db.selectFrom('spools').selectAll().where('printer_id', 'is not', null).execute();
    return rows.map(toRecord);
  }

  async byRfid(uuid: string): Promise<SpoolRecord | undefined> {
    const row = await this.db.selectFrom('spools').selectAll().where('rfid_uuid', '=', uuid).executeTakeFirst();
    return row && toRecord(row);
  }

  /**
   * Puts a spool in a slot; the spool that was there is taken out. Returns the id of that displaced spool, or false
   * when nothing changed because the printer or the spool is gone or the spool archived (unless the patch unarchives
   * it): checked in the same transaction, so what was removed or archived since the caller read it is not loaded.
   */
  async assign(spoolId: number, at: SlotRef, patch: SpoolPatch, now: string): Promise<number | null | false> {
    const postgres = dialectOf(this.db) === 'postgres';
    return redoOnSlotClash(postgres, () => this.assignOnce(spoolId, at, patch, now, postgres));
  }

  private assignOnce(spoolId: number, at: SlotRef, patch: SpoolPatch, now: string, postgres: boolean): Promise<number | null | false> {
    return this.db.transaction().execute(async (trx) => {
      // PostgreSQL: a removal of the printer waits for this load to commit, then takes the spool out with the others.
      let printer = trx.selectFrom('printers').select('id').where('id', '=', at.printer_id);
      if (postgres) printer = printer.forShare();
      if (!(await printer.executeTakeFirst())) return false;
      let spool = trx.selectFrom('spools').select('archived').where('id', '=', spoolId);
      if (postgres) spool = spool.forUpdate();
      const found = await spool.executeTakeFirst();
      if (!found || (Number(found.archived) === 1 && patch.archived !== false)) return false;
      const previous = await trx.selectFrom('spools').select('id').where('printer_id', '=', at.printer_id).where('slot', '=', at.slot).executeTakeFirst();
      const displaced = previous && Number(previous.id) !== spoolId ? Number(previous.id) : null;
      if (displaced !== null) await trx.updateTable('spools').set({ printer_id: null, slot: null, updated_at: now }).where('id', '=', displaced).execute();
      await trx
        .updateTable('spools')
        .set(toRow({ ...patch, printer_id: at.printer_id, slot: at.slot, updated_at: now }))
        .where('id', '=', spoolId)
        .execute();
      return displaced;
    });
  }

  /** Takes whatever spool is in the slot out of it; its id, or null when the slot was empty. */
  async unassign(at: SlotRef, now: string): Promise<number | null> {
    const row = await this.db.selectFrom('spools').select('id').where('printer_id', '=', at.printer_id).where('slot', '=', at.slot).executeTakeFirst();
    if (!row) return null;
    await this.db.updateTable('spools').set({ printer_id: null, slot: null, updated_at: now }).where('id', '=', row.id).execute();
    return Number(row.id);
  }

  // --- Spoolman mode: the slot -> Spoolman spool id map ---

  async spoolmanSlots(): Promise<{ printer_id: string; slot: number; spoolman_id: number }[]> {
    const rows = await this.db.selectFrom('spoolman_slots').select(['printer_id', 'slot', 'spoolman_id']).execute();
    return rows.map((r) => ({ printer_id: r.printer_id, slot: Number(r.slot), spoolman_id: Number(r.spoolman_id) }));
  }

  /** A Spoolman spool into a slot: out of any other slot, and the slot's previous spool out. */
  async assignSpoolman(spoolmanId: number, at: SlotRef, now: string): Promise<void> {
    await redoOnSlotClash(dialectOf(this.db) === 'postgres', () =>
      this.db.transaction().execute(async (trx) => {
        await trx.deleteFrom('spoolman_slots').where('spoolman_id', '=', spoolmanId).execute();
        await trx.deleteFrom('spoolman_slots').where('printer_id', '=', at.printer_id).where('slot', '=', at.slot).execute();
        await trx.insertInto('spoolman_slots').values({ printer_id: at.printer_id, slot: at.slot, spoolman_id: spoolmanId, assigned_at: now }).execute();
      }),
    );
  }

  async unassignSpoolman(at: SlotRef): Promise<boolean> {
    const result = await this.db.deleteFrom('spoolman_slots').where('printer_id', '=', at.printer_id).where('slot', '=', at.slot).executeTakeFirst();
    return result.numDeletedRows > 0n;
  }
}
