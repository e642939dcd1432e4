/**
 * What prints used: each print's plan (taken when it starts), the usage rows
 * written when it ends (one per job and slot, unique: a print is counted
 * once however often its end is seen), the subtraction from the embedded
 * spools in the same transaction, and the Spoolman outbox (usage rows whose
 * `spoolman_state` is pending).
 */
import type { CompiledQuery, Selectable } from 'kysely';
import type { Db } from '../connection';
import type { FilamentUsageTable } from '../schema';
import type { QueryReader } from './statistics';
import { round2 } from '../../util/round';

export interface PlanEntry {
  /** 1-based filament number of the file (G-code: the extruder + 1). */
  filament: number;
  /** Global tray / extruder it prints from; null when not known yet (a print started by hand). */
  slot: number | null;
  grams: number;
  material: string | null;
  color: string | null;
  /**
   * No grams known (a print started by hand from a file the service has no copy of): the AMS's remaining
   * percentage of each tray at the start and the full spool's grams; the print's grams are the drop.
   */
  remain_start?: Record<string, { percent: number; full_g: number }>;
}

export interface FilamentPlan {
  job_id: number;
  printer_id: string;
  entries: PlanEntry[];
  slots_seen: number[];
  settled_at: string | null;
}

export interface NewUsage {
  job_id: number;
  printer_id: string;
  slot: number;
  source: 'local' | 'spoolman' | null;
  spool_id: number | null;
  material: string | null;
  color: string | null;
  grams: number;
  cost: number | null;
}

export type UsageRecord = Omit<Selectable<FilamentUsageTable>, 'id'> & { id: number };

export interface UsageTotals {
  key: string;
  grams: number;
  cost: number;
  jobs: number;
}

const usageRecord = (r: Selectable<FilamentUsageTable>): UsageRecord => ({
  ...r,
  id: Number(r.id),
  job_id: Number(r.job_id),
  slot: Number(r.slot),
  spool_id: r.spool_id === null ? null : Number(r.spool_id),
  grams: Number(r.grams),
  cost: r.cost === null ? null : Number(r.cost),
  spoolman_attempts: Number(r.spoolman_attempts),
});

export class FilamentUsageRepository {
  constructor(
    private readonly db: Db,
    /** Runs the period totals off the main connection (see StatisticsRepository): a year's usage rows take seconds. */
    private readonly reader?: QueryReader,
  ) {}

  async plan(jobId: number): Promise<FilamentPlan | undefined> {
    const row = await this.db.selectFrom('filament_plans').selectAll().where('job_id', '=', jobId).executeTakeFirst();
    return row && { job_id: Number(row.job_id), printer_id: row.printer_id, entries: JSON.parse(row.entries), slots_seen: JSON.parse(row.slots_seen), settled_at: row.settled_at };
  }

  /** Stores a plan unless the job has one (a replayed start keeps the first). */
  async savePlan(plan: Omit<FilamentPlan, 'settled_at'>, now: string): Promise<void> {
    await this.db
      .insertInto('filament_plans')
      .values({ job_id: plan.job_id, printer_id: plan.printer_id, entries: JSON.stringify(plan.entries), slots_seen: JSON.stringify(plan.slots_seen), settled_at: null, created_at: now })
      .onConflict((oc) => oc.column('job_id').doNothing())
      .execute();
  }

  async setSlotsSeen(jobId: number, slots: number[]): Promise<void> {
    await this.db.updateTable('filament_plans').set({ slots_seen: JSON.stringify(slots) }).where('job_id', '=', jobId).where('settled_at', 'is', null).execute();
  }

  /** Jobs whose plan is not settled yet (oldest first, after `afterJobId`): what a restart finishes. */
  async unsettledJobs(limit: number, afterJobId = 0): Promise<number[]> {
    const rows = await this.db.selectFrom('filament_plans').select('job_id').where('settled_at', 'is', null).where('job_id', '>', afterJobId).orderBy('job_id').limit(limit).execute();
    return rows.map((r) => Number(r.job_id));
  }

  /**
   * Writes the usage of an ended print and takes the grams off the embedded spools, in one transaction. A row
   * that exists already (same job and slot) is skipped with its subtraction: counted once. Marks the plan settled,
   * and when rows were written sets the job's totals (grams and cost of all its rows) in the same transaction.
   * Returns the rows written now, all of the job's rows and their total grams.
   */
  async settle(jobId: number, rows: NewUsage[], now: string): Promise<{ written: UsageRecord[]; all: UsageRecord[]; total: number }> {
    return this.db.transaction().execute(async (trx) => {
      const written: UsageRecord[] = [];
      for (const u of rows) {
        const inserted = await trx
          .insertInto('filament_usage')
          .values({ ...u, spoolman_state: u.source === 'spoolman' && u.spool_id !== null && u.grams > 0 ? 'pending' : null, created_at: now })
          .onConflict((oc) => oc.columns(['job_id', 'slot']).doNothing())
          .returningAll()
          .executeTakeFirst();
        if (!inserted) continue;
        written.push(usageRecord(inserted));
        if (u.source === 'local' && u.spool_id !== null && u.grams > 0) {
          await trx
            .updateTable('spools')
            .set((eb) => ({ remaining_weight_g: eb.case().when('remaining_weight_g', '>', u.grams).then(eb('remaining_weight_g', '-', u.grams)).else(0).end(), updated_at: now }))
            .where('id', '=', u.spool_id)
            .execute();
        }
      }
      await trx.updateTable('filament_plans').set({ settled_at: now }).where('job_id', '=', jobId).execute();
      if (written.length === 0) return { written, all: [], total: 0 };
      const all = (await trx.selectFrom('filament_usage').selectAll().where('job_id', '=', jobId).orderBy('slot').execute()).map(usageRecord);
      const total = round2(all.reduce((s, u) => s + u.grams, 0));
      const cost = round2(all.reduce((s, u) => s + (u.cost ?? 0), 0));
      await trx.updateTable('jobs').set({ material_actual_usage: total, material_cost: cost, updated_at: now }).where('id', '=', jobId).execute();
      return { written, all, total };
    });
  }

  /** Settles a plan with nothing to write (no grams known). */
  async markSettled(jobId: number, now: string): Promise<void> {
    await this.db.updateTable('filament_plans').set({ settled_at: now }).where('job_id', '=', jobId).execute();
  }

  async usageOf(jobIds: readonly number[]): Promise<Map<number, UsageRecord[]>> {
    const out = new Map<number, UsageRecord[]>();
    if (jobIds.length === 0) return out;
    const rows = await this.db.selectFrom('filament_usage').selectAll().where('job_id', 'in', [...jobIds]).orderBy('job_id').orderBy('slot').execute();
    for (const r of rows.map(usageRecord)) out.set(r.job_id, [...(out.get(r.job_id) ?? []), r]);
    return out;
  }

  /** Grams and cost between two times, per spool (`source:id`) or per material. */
  async totals(by: 'spool' | 'material', from: string | null, to: string | null): Promise<UsageTotals[]> {
    let q = this.db.selectFrom('filament_usage');
    if (from) q = q.where('created_at', '>=', from);
    if (to) q = q.where('created_at', '<=', to);
    const query: CompiledQuery<Record<string, unknown>> =
      by === 'spool'
        ? q
            .select(['source', 'spool_id', (eb) => eb.fn.sum<number>('grams').as('grams'), (eb) => eb.fn.sum<number>('cost').as('cost'), (eb) => eb.fn.count<number>('job_id').distinct().as('jobs')])
            .where('spool_id', 'is not', null)
            .groupBy(['source', 'spool_id'])
            .compile()
        : q
            .select(['material', (eb) => eb.fn.sum<number>('grams').as('grams'), (eb) => eb.fn.sum<number>('cost').as('cost'), (eb) => eb.fn.count<number>('job_id').distinct().as('jobs')])
            .groupBy('material')
            .compile();
    const rows = this.reader ? await this.reader.all(query) : (await this.db.executeQuery(query)).rows;
    // Equal grams are ordered here, not left in the order of the GROUP BY: SQLite's comes sorted with NULL first,
    // PostgreSQL's in hash order or by its collation with NULL last.
    const tie = (r: Record<string, unknown>): [number, string, number] =>
      by === 'spool' ? [0, String(r.source), Number(r.spool_id)] : [r.material == null ? 1 : 0, String(r.material ?? ''), 0];
    const byTie = (a: [number, string, number], b: [number, string, number]) => a[0] - b[0] || (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0) || a[2] - b[2];
    return rows
      .map((r) => {
        const rec = r as Record<string, unknown>;
        const key = by === 'spool' ? `${rec.source}:${rec.spool_id}` : String(rec.material ?? 'unknown');
        return { key, grams: Number(rec.grams ?? 0), cost: Number(rec.cost ?? 0), jobs: Number(rec.jobs ?? 0), tie: tie(rec) };
      })
      .sort((a, b) => b.grams - a.grams || byTie(a.tie, b.tie))
      .map(({ tie: _tie, ...totals }) => totals);
  }

  // --- Spoolman outbox ---

  async pendingSpoolman(limit: number): Promise<UsageRecord[]> {
    const rows = await this.db.selectFrom('filament_usage').selectAll().where('spoolman_state', '=', 'pending').orderBy('id').limit(limit).execute();
    return rows.map(usageRecord);
  }

  async countPendingSpoolman(): Promise<number> {
    const { n } = await this.db.selectFrom('filament_usage').select((eb) => eb.fn.countAll<number>().as('n')).where('spoolman_state', '=', 'pending').executeTakeFirstOrThrow();
    return Number(n);
  }

  async spoolmanAttempt(id: number, patch: { spoolman_used_before?: number | null; spoolman_error?: string | null }): Promise<void> {
    await this.db
      .updateTable('filament_usage')
      .set((eb) => ({ ...patch, spoolman_attempts: eb('spoolman_attempts', '+', 1) }))
      .where('id', '=', id)
      .execute();
  }

  async spoolmanSent(id: number, now: string, state: 'sent' | 'dropped' = 'sent', error: string | null = null): Promise<void> {
    await this.db.updateTable('filament_usage').set({ spoolman_state: state, spoolman_sent_at: now, spoolman_error: error }).where('id', '=', id).execute();
  }
}
