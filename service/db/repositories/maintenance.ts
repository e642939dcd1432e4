import { sql, type Generated, type Selectable } from 'kysely';
import type { Db } from '../connection';

/** Table type of migration 004 (reached through `withTables`, so schema.ts stays as it is). */
export interface MaintenanceEventsTable {
  id: Generated<number>;
  printer_id: string;
  kind: string;
  notes: string | null;
  performed_at: string;
  created_at: string;
}

export type MaintenanceRecord = Selectable<MaintenanceEventsTable>;
export type NewMaintenance = Omit<MaintenanceRecord, 'id'>;

/** Maintenance events users record on a printer (nozzle changes, bed calibrations...). */
export class MaintenanceRepository {
  private readonly db;

  constructor(db: Db) {
    this.db = db.withTables<{ maintenance_events: MaintenanceEventsTable }>();
  }

  async insert(event: NewMaintenance): Promise<MaintenanceRecord> {
    const result = await this.db.insertInto('maintenance_events').values(event).returning('id').executeTakeFirstOrThrow();
    return { id: Number(result.id), ...event };
  }

  /** Newest first (by performed_at, then id). */
  async list(printerId: string, q: { kind?: string; page: number; limit: number }): Promise<{ events: MaintenanceRecord[]; total: number }> {
    let base = this.db.selectFrom('maintenance_events').where('printer_id', '=', printerId);
    if (q.kind !== undefined) base = base.where('kind', '=', q.kind);
    const { total } = await base.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow();
    const events = await base
      .selectAll()
      .orderBy('performed_at', 'desc')
      .orderBy('id', 'desc')
      .limit(q.limit)
      .offset((q.page - 1) * q.limit)
      .execute();
    return { events, total: Number(total) };
  }

  /**
   * For a printer's statistics: the latest event at or before `to` (any kind), and the nozzle changes and
   * bed calibrations performed in [from, to).
   */
  async summary(printerId: string, from: string, to: string): Promise<{ last: string | null; nozzle_changes: number; bed_calibrations: number }> {
    const row = await this.db
      .selectFrom('maintenance_events')
      .where('printer_id', '=', printerId)
      .where('performed_at', '<', to)
      .select([
        sql<string | null>`max(performed_at)`.as('last'),
        sql<number>`coalesce(sum(CASE WHEN kind = 'nozzle_change' AND performed_at >= ${from} THEN 1 ELSE 0 END), 0)`.as('nozzle_changes'),
        sql<number>`coalesce(sum(CASE WHEN kind = 'bed_calibration' AND performed_at >= ${from} THEN 1 ELSE 0 END), 0)`.as('bed_calibrations'),
      ])
      .executeTakeFirstOrThrow();
    return { last: row.last ?? null, nozzle_changes: Number(row.nozzle_changes), bed_calibrations: Number(row.bed_calibrations) };
  }
}
