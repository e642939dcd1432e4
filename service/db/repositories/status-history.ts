import { sql, type Generated } from 'kysely';
import type { Db } from '../connection';
import { flavourOf } from '../dialect';

/** Table types of migration 004 (kept here rather than in schema.ts; repositories reach them through `withTables`). */
export interface PrinterStatusHistoryTable {
  id: Generated<number>;
  printer_id: string;
  status: string;
  connection_status: string;
  at: string;
}

export interface StatusHistoryRow {
  status: string;
  connection_status: string;
  at: string;
}

/**
 * The printer status history: one row per CHANGE of a printer's status or
 * connection status, never one per report. Rows come from the fleet (the
 * connection test, reconnects, state changes, the start and end of
 * monitoring) and the registry (created, (de)activated, deleted). Uptime is
 * the time a printer spent with connection_status `connected`.
 */
export class StatusHistoryRepository {
  private readonly db;

  constructor(db: Db) {
    this.db = db.withTables<{ printer_status_history: PrinterStatusHistoryTable }>();
  }

  /**
   * Adds a row unless the state in effect at `at` (the printer's latest row at or before it) already says
   * the same: one statement, one index probe, so callers may call it on every persisted change without
   * reading first. True when a row was written.
   */
  record(printerId: string, status: string, connectionStatus: string, at: string): Promise<boolean> {
    // One printer's rows are written one after another. On PostgreSQL two statements on two connections of
    // the pool both found no row saying the same (neither saw the other's uncommitted insert) and both
    // inserted: the registry and the fleet record a deactivated printer's offline/disconnected at the same
    // moment, and the history had it twice. SQLite's single connection already ran them in turn.
    const previous = this.writing.get(printerId);
    const next = (previous ? previous.catch(() => undefined) : Promise.resolve()).then(() => this.insert(printerId, status, connectionStatus, at));
    this.writing.set(printerId, next);
    const forget = () => {
      if (this.writing.get(printerId) === next) this.writing.delete(printerId);
    };
    next.then(forget, forget);
    return next;
  }

  /** Each printer's last record() still running. */
  private readonly writing = new Map<string, Promise<boolean>>();

  private async insert(printerId: string, status: string, connectionStatus: string, at: string): Promise<boolean> {
    const result = await sql`
      INSERT INTO printer_status_history (printer_id, status, connection_status, at)
      SELECT ${printerId}, ${status}, ${connectionStatus}, ${at}
      WHERE NOT EXISTS (
        SELECT 1 FROM (
          SELECT status, connection_status FROM printer_status_history
          WHERE printer_id = ${printerId} AND at <= ${at} ORDER BY at DESC, id DESC LIMIT 1
        ) AS prev
        WHERE prev.status = ${status} AND prev.connection_status = ${connectionStatus}
      )`.execute(this.db);
    return (result.numAffectedRows ?? 0n) > 0n;
  }

  /**
   * Forgets the rows before `before`, except each printer's last one before it: that row is the state in
   * effect at the cutoff, so uptime from the cutoff on stays exact. Deletes in batches, so that a large first
   * prune never holds the database for long. Returns the number of rows deleted.
   */
  async prune(before: string, batch = 5000): Promise<number> {
    let deleted = 0;
    for (;;) {
      const result = await sql`
        DELETE FROM printer_status_history WHERE id IN (
          SELECT h.id FROM printer_status_history AS h
          WHERE h.at < ${before}
            AND EXISTS (SELECT 1 FROM printer_status_history AS later WHERE later.printer_id = h.printer_id AND later.at < ${before}
                          AND (later.at > h.at OR (later.at = h.at AND later.id > h.id)))
          LIMIT ${batch}
        )`.execute(this.db);
      const n = Number(result.numAffectedRows ?? 0n);
      deleted += n;
      if (n < batch) return deleted;
    }
  }

  /** A printer's rows in time order, optionally those at or after `from` and before `to`. */
  async list(printerId: string, range: { from?: string; to?: string } = {}): Promise<StatusHistoryRow[]> {
    let q = this.db.selectFrom('printer_status_history').select(['status', 'connection_status', 'at']).where('printer_id', '=', printerId);
    if (range.from !== undefined) q = q.where('at', '>=', range.from);
    if (range.to !== undefined) q = q.where('at', '<', range.to);
    return q.orderBy('at').orderBy('id').execute();
  }

  /**
   * Seconds in [from, to) during which the printer was connected: the state at `from` is the last row
   * at or before it, each row lasts until the next one, the last one until `to`. Time before the first
   * row counts as not connected.
   */
  async connectedSeconds(printerId: string, from: string, to: string): Promise<number> {
    if (!(from < to)) return 0;
    const f = flavourOf(this.db);
    const span = f.greatest(sql`0`, f.secondsBetween(f.greatest(sql`at`, sql`${from}`), f.least(sql`coalesce(next_at, ${to})`, sql`${to}`)));
    const { rows } = await sql<{ seconds: number }>`
      WITH spans AS (
        SELECT connection_status, at, lead(at) OVER (ORDER BY at, id) AS next_at
        FROM printer_status_history
        WHERE printer_id = ${printerId}
          AND at >= coalesce((SELECT max(at) FROM printer_status_history WHERE printer_id = ${printerId} AND at <= ${from}), ${from})
          AND at < ${to}
      )
      SELECT coalesce(sum(${span}), 0) AS seconds
      FROM spans WHERE connection_status = 'connected'`.execute(this.db);
    return Number(rows[0]?.seconds ?? 0);
  }
}
