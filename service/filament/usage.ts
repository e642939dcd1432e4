/**
 * What every print used. A job's plan is taken when it starts; when it ends
 * (completed: everything; failed or cancelled: pro rata to the progress
 * reached) its grams go to the spool in each slot, once: the usage rows are
 * unique per job and slot and written in one transaction with the
 * subtraction, and a restart settles every plan left open (a SIGKILL between
 * the job's end and its usage). The work of each event is queued (util/work-queue.ts): a few jobs at a
 * time, each job's steps in order, so that a burst of job ends does not put all of their statements before
 * the database's other users at once.
 */
import type { Logger } from 'pino';
import type { Store } from '../db';
import type { FilamentPlan, NewUsage, PlanEntry } from '../db/repositories/filament-usage';
import type { EventBus, JobUpdateEvent } from '../events';
import type { PrinterState } from '../printers/driver';
import type { SettingsService } from '../settings';
import { nowIso } from '../util/time';
import { WorkQueue } from '../util/work-queue';
import type { FileGramsCache } from './file-grams';
import { planEntries } from './plan';
import type { SpoolService } from './spools';
import { round2 } from '../util/round';

const ENDED = ['completed', 'failed', 'cancelled'];
/** Plans settled per restart pass (a farm down for long has a few dozen). */
const RECOVERY_BATCH = 500;
/** Trays remembered per running print (multi-colour prints by hand use a few). */
const MAX_SLOTS_SEEN = 32;
/** Jobs worked on at once: two keep PostgreSQL's round trips overlapping and leave the pool to requests. */
const CONCURRENCY = 2;
/**
 * Steps waiting at most. Beyond, an end is remembered by its job id alone (up to as many again) and settled
 * once the backlog drains, after which every plan still open whose job ended is settled too (the restart's
 * recovery): nothing is lost, a refused start only makes the plan at the end (as for a job seen first ending).
 */
const MAX_WAITING = 50_000;


export class FilamentUsageService {
  /** The running job of each printer with a plan, and the trays it was seen feeding from. */
  private readonly running = new Map<string, { jobId: number; seen: number[] }>();
  /** Job ends refused by a full backlog, settled by the catch-up. */
  private readonly refusedEnds = new Set<number>();
  readonly work: WorkQueue;

  constructor(
    private readonly store: Store,
    private readonly spools: SpoolService,
    private readonly settings: SettingsService,
    private readonly bus: EventBus,
    private readonly stateOf: (printerId: string) => PrinterState | undefined,
    private readonly grams: FileGramsCache,
    private readonly log: Logger,
    private readonly maxWaiting = MAX_WAITING,
  ) {
    this.work = new WorkQueue({
      name: 'filament usage',
      concurrency: CONCURRENCY,
      maxBacklog: maxWaiting,
      log,
      catchUp: () => this.catchUp(),
      whenFull: 'job ends are settled once it drains, with every plan still open whose job ended',
    });
  }

  /** Settles the plans a stop left open; remembers the running ones. */
  async start(): Promise<void> {
    await this.settleOpenPlans(RECOVERY_BATCH, true);
  }

  /**
   * Settles the open plans of ended jobs, `batch` at a time (all of them unless `once`); remembers the running
   * ones when `remember` (at start: the catch-up runs beside the live jobs, whose state is newer).
   */
  private async settleOpenPlans(batch: number, remember: boolean, once = remember): Promise<void> {
    let after = 0;
    for (;;) {
      const ids = await this.store.filamentUsage.unsettledJobs(batch, after);
      for (const jobId of ids) {
        const job = await this.store.jobs.get(jobId);
        if (!job || ENDED.includes(job.status)) await this.settle(jobId);
        else if (remember) {
          const plan = await this.store.filamentUsage.plan(jobId);
          if (plan) this.running.set(plan.printer_id, { jobId, seen: plan.slots_seen });
        }
      }
      if (once || ids.length < batch) return;
      after = ids[ids.length - 1];
    }
  }

  /**
   * After a full backlog: the ends it refused, then every open plan of an ended job. A settlement is written
   * once per job and slot whoever runs it, so one running here beside a queued one counts once.
   */
  private async catchUp(): Promise<void> {
    const ends = [...this.refusedEnds];
    this.refusedEnds.clear();
    for (const jobId of ends) await this.settle(jobId);
    await this.settleOpenPlans(RECOVERY_BATCH, false, false);
  }

  /** Waits for the work under way (tests, shutdown). */
  async idle(): Promise<void> {
    await this.work.idle();
  }

  onJobUpdate(e: JobUpdateEvent): void {
    if (e.change === 'created') this.serial(e.job_id, `plan:${e.job_id}`, () => this.plan(e.job_id));
    else if ((e.change === 'status' || e.change === 'cancelled') && ENDED.includes(e.status)) {
      if (!this.serial(e.job_id, `settle:${e.job_id}`, () => this.settle(e.job_id)) && this.refusedEnds.size < this.maxWaiting) this.refusedEnds.add(e.job_id);
    }
  }

  /** The printer feeds from `slot` now: remembered for the print's end (prints started by hand). */
  sawSlot(printerId: string, slot: number | null | undefined): void {
    const run = this.running.get(printerId);
    if (!run || slot === null || slot === undefined || run.seen.includes(slot) || run.seen.length >= MAX_SLOTS_SEEN) return;
    run.seen.push(slot);
    // Read when written: a write still waiting writes the trays seen until it runs.
    this.serial(run.jobId, `slots:${run.jobId}`, () => this.store.filamentUsage.setSlotsSeen(run.jobId, [...run.seen]));
  }

  /** Queues a step of the job (after its earlier ones); false when the backlog refused it. */
  private serial(jobId: number, once: string, work: () => Promise<void>): boolean {
    return this.work.push(() => work().catch((err) => this.log.error({ err, job_id: jobId }, 'filament usage failed')), { key: jobId, once });
  }

  private async plan(jobId: number): Promise<void> {
    const job = await this.store.jobs.get(jobId);
    // Jobs typed in through the API print nothing the service sees; tracked and queued prints do.
    if (!job || (!job.queue_item_id && job.customer_info?.auto_created !== true)) return;
    const state = this.stateOf(job.printer_id);
    const printer = await this.store.printers.get(job.printer_id);
    const entries = await planEntries(this.store, this.grams, job, printer?.type ?? 'bambu_lab', state);
    const seen = state?.active_slot !== null && state?.active_slot !== undefined ? [state.active_slot] : [];
    await this.store.filamentUsage.savePlan({ job_id: jobId, printer_id: job.printer_id, entries, slots_seen: seen }, nowIso());
    this.running.set(job.printer_id, { jobId, seen });
  }

  private async settle(jobId: number): Promise<void> {
    const job = await this.store.jobs.get(jobId);
    let plan: FilamentPlan | undefined = await this.store.filamentUsage.plan(jobId);
    if (this.running.get(plan?.printer_id ?? job?.printer_id ?? '')?.jobId === jobId) this.running.delete(plan?.printer_id ?? job!.printer_id);
    if (plan?.settled_at || !job) {
      if (plan && !plan.settled_at) await this.store.filamentUsage.markSettled(jobId, nowIso());
      return;
    }
    if (!plan) {
      // The start was not seen (the service was down, or the job was created before a restart): plan now.
      await this.plan(jobId);
      this.running.delete(job.printer_id);
      plan = await this.store.filamentUsage.plan(jobId);
      if (!plan) return;
    }
    const factor = job.status === 'completed' ? 1 : Math.max(0, Math.min(100, job.progress)) / 100;
    const rows = this.rowsOf(plan, factor, this.stateOf(plan.printer_id));
    const now = nowIso();
    // The rows and the job's totals are written together: a reader never sees one without the other, and a stop
    // between them could not leave a settled plan whose job has no totals.
    const { written, all, total } = await this.store.filamentUsage.settle(jobId, rows, now);
    if (written.length === 0) return;
    this.log.info({ job_id: jobId, grams: total, slots: written.map((w) => w.slot) }, 'filament usage recorded');
    // Peers count nothing for a tray without a spool and say so only when asked: here it is said at once.
    const untracked = written.filter((w) => w.spool_id === null && w.grams > 0);
    if (untracked.length) {
      const slots = untracked.map((w) => `${w.grams} g from ${w.slot === 254 ? 'the external spool' : `slot ${w.slot}`}`).join(', ');
      this.bus.emit('system_alert', {
        level: 'warning',
        message: `${job.printer_display_name ?? job.printer_id} printed ${slots} with no spool assigned: assign the spool (PUT /printers/${job.printer_id}/slots/{slot}) to count its grams`,
        printer_id: job.printer_id,
        job_id: jobId,
      });
    }
    await this.spools.used(
      written.filter((w) => w.source === 'local' && w.spool_id !== null).map((w) => w.spool_id!),
      written.some((w) => w.source === 'spoolman'),
    );
    this.bus.emit('job_update', { id: jobId, job_id: jobId, printer_id: job.printer_id, change: 'updated', status: job.status, progress: job.progress, filament_usage: all.map(usageView) });
  }

  /** One row per slot: the plan's grams (the file's times `factor`), the spool in the slot, its cost. */
  private rowsOf(plan: FilamentPlan, factor: number, state: PrinterState | undefined): NewUsage[] {
    const bySlot = new Map<number, PlanEntry[]>();
    for (const planned of plan.entries) {
      const slot = planned.slot ?? plan.slots_seen[0] ?? null;
      // Grams of the file count pro rata; the AMS's drop is what the print took already.
      const e = { ...planned, grams: planned.remain_start ? remainDrop(planned, slot, state) : planned.grams * factor };
      if (slot === null) {
        this.log.warn({ job_id: plan.job_id, filament: e.filament }, 'filament usage: the tray of a filament is not known; not counted');
        continue;
      }
      bySlot.set(slot, [...(bySlot.get(slot) ?? []), e]);
    }
    const perKgDefault = this.settings.get('filament_cost_per_kg');
    return [...bySlot.entries()].map(([slot, entries]) => {
      const spool = this.spools.spoolAt(plan.printer_id, slot);
      const grams = round2(entries.reduce((s, e) => s + e.grams, 0));
      return {
        job_id: plan.job_id,
        printer_id: plan.printer_id,
        slot,
        source: spool?.source ?? null,
        spool_id: spool?.id ?? null,
        material: spool?.material ?? entries[0].material,
        color: spool?.color ?? entries[0].color,
        grams,
        cost: round2((grams * (spool?.cost_per_kg ?? perKgDefault)) / 1000),
      };
    });
  }
}

/** Grams the AMS's percentage of `slot` dropped by since the start (the print's real share: no pro rata). */
function remainDrop(e: PlanEntry, slot: number | null, state: PrinterState | undefined): number {
  const start = slot === null ? undefined : e.remain_start?.[String(slot)];
  const now = state?.materials?.find((m) => m.slot === slot)?.remaining_percent;
  if (!start || now === null || now === undefined || now > start.percent) return 0;
  return ((start.percent - now) / 100) * start.full_g;
}

export function usageView(u: { spool_id: number | null; slot: number; material: string | null; color: string | null; grams: number; cost: number | null }) {
  return { spool_id: u.spool_id, slot: u.slot, material: u.material, color: u.color, grams: u.grams, cost: u.cost };
}
