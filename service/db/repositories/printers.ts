import { sql, type Selectable } from 'kysely';
import type { Db } from '../connection';
import { flavourOf } from '../dialect';
import type { PrintersTable } from '../schema';

export type PlateState = 'clear' | 'needs_clearing';

/**
 * A printers row as the service uses it: a known type, is_active as a boolean. The plate and camera fields are
 * always there when read; a new record may leave them out (the database defaults: clear, no automatic clearing, no camera override).
 */
export type PrinterRecord = Omit<PrintersTable, 'type' | 'is_active' | 'plate_state' | 'plate_auto_clear' | 'camera_port' | 'camera_url'> & {
  type: 'bambu_lab' | 'prusa_core' | 'klipper';
  is_active: boolean;
  plate_state?: PlateState;
  plate_auto_clear?: boolean;
  /** Always there when read; a new record may leave them out (NULL: the printer's own camera on its default port). */
  camera_port?: number | null;
  camera_url?: string | null;
};

export type PrinterPatch = Partial<Omit<PrinterRecord, 'id' | 'type' | 'created_at'>>;

const toRecord = (row: Selectable<PrintersTable>): PrinterRecord => ({
  ...row,
  type: row.type as PrinterRecord['type'],
  is_active: row.is_active === 1,
  plate_state: row.plate_state === 'needs_clearing' ? 'needs_clearing' : 'clear',
  plate_auto_clear: row.plate_auto_clear === 1,
});

function toRow(patch: PrinterPatch): Partial<PrintersTable> {
  const { is_active, plate_auto_clear, ...rest } = patch;
  return {
    ...rest,
    ...(is_active === undefined ? {} : { is_active: is_active ? 1 : 0 }),
    ...(plate_auto_clear === undefined ? {} : { plate_auto_clear: plate_auto_clear ? 1 : 0 }),
  };
}

export class PrintersRepository {
  constructor(private readonly db: Db) {}

  async list(filter: { active?: boolean; type?: string } = {}): Promise<PrinterRecord[]> {
    let q = this.db.selectFrom('printers').selectAll();
    if (filter.active !== undefined) q = q.where('is_active', '=', filter.active ? 1 : 0);
    if (filter.type !== undefined) q = q.where('type', '=', filter.type);
    // Ids of printers created in the same millisecond by code point, on PostgreSQL too whatever its collation.
    const rows = await q.orderBy('created_at').orderBy(flavourOf(this.db).sortKey(sql.ref('id'))).execute();
    return rows.map(toRecord);
  }

  async get(id: string): Promise<PrinterRecord | undefined> {
    const row = await this.db.selectFrom('printers').selectAll().where('id', '=', id).executeTakeFirst();
    return row && toRecord(row);
  }

  async exists(id: string): Promise<boolean> {
    return (await this.db.selectFrom('printers').select('id').where('id', '=', id).executeTakeFirst()) !== undefined;
  }

  /** Throws a unique-constraint error when the id is taken. */
  async insert(record: PrinterRecord): Promise<void> {
    await this.db.insertInto('printers').values(toRow(record) as PrintersTable).execute();
  }

  async update(id: string, patch: PrinterPatch): Promise<boolean> {
    const result = await this.db.updateTable('printers').set(toRow(patch)).where('id', '=', id).executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /** Changes a printer only while it is (in)active as `active` says (false when it is not, or gone). */
  async updateWhile(active: boolean, id: string, patch: PrinterPatch): Promise<boolean> {
    const result = await this.db.updateTable('printers').set(toRow(patch)).where('id', '=', id).where('is_active', '=', active ? 1 : 0).executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /** Marks printers seen at `at`: one statement for the reports of many printers (the fleet gathers them). */
  async touchLastSeen(ids: string[], at: string): Promise<void> {
    for (let i = 0; i < ids.length; i += 500) {
      await this.db.updateTable('printers').set({ last_seen: at }).where('id', 'in', ids.slice(i, i + 500)).execute();
    }
  }

  async delete(id: string): Promise<boolean> {
    const result = await this.db.deleteFrom('printers').where('id', '=', id).executeTakeFirst();
    return result.numDeletedRows > 0n;
  }

  async counts(): Promise<{ total: number; active: number }> {
    const row = await this.db
      .selectFrom('printers')
      .select((eb) => [eb.fn.countAll<number>().as('total'), eb.fn.sum<number>('is_active').as('active')])
      .executeTakeFirstOrThrow();
    return { total: Number(row.total), active: Number(row.active ?? 0) };
  }
}
