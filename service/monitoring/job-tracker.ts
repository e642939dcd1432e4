/**
 * Job tracking: every status update of a printer that prints either finds its
 * job or creates one (when `job_creation_auto_create` is on), and the job
 * follows the print to its end.
 *
 * Duplicates are kept out in three layers: the in-memory cache of each
 * printer's current job; the stored jobs (after a restart or a wiped cache,
 * the printer's active tracked job is looked up and matched by file name and
 * start); and a unique index on (printer, print identity) in the database,
 * which also holds against a second process.
 */
import type { Logger } from 'pino';
import { isUniqueViolation } from '../db/connection';
import type { Store } from '../db';
import type { FileRecord } from '../db/repositories/files';
import type { JobPatch, JobRecord, NewJob } from '../db/repositories/jobs';
import type { EventBus, JobUpdateEvent } from '../events';
import type { MachineState, PrinterState, PrintProgress } from '../printers/driver';
import { printOutcome, recordedEnd } from './print-outcome';
import type { SettingsService } from '../settings';
import { RetryLater, type RetryLaterOptions } from '../util/retry-later';
import { nowIso } from '../util/time';
import { WorkQueue } from '../util/work-queue';
import { NewJobGate, type NewJobGateOptions } from './new-job-gate';
import { isSameRun, normaliseFileName, printedFile, printFileName, printKey, runOfJob, startMinute, type RunIdentity } from './print-identity';

const PRINTING: readonly MachineState[] = ['preparing', 'printing', 'paused'];
const ACTIVE_JOB = ['printing', 'paused'] as const;
const UPDATES_AT_ONCE = 4;

/** The job of a run: `name`, `startMinute` (the printer's, when it reports one) and `printerJobId` tell the run. */
interface Tracked extends RunIdentity {
  jobId: number;
  startTime: string;
  status: string;
  percent: number;
  progress: number;
  estimatedUsage: number | null;
  powerWatts: number | null;
}

/** What a file's metadata (from the preview library) tells about the job: settings, material, estimated usage. */
function fromMetadata(m: Record<string, unknown> | null, costPerKg: number): Partial<NewJob> {
  if (!m) return {};
  const n = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : null);
  const settings = {
    layer_height: n(m.layer_height),
    infill: n(m.infill),
    nozzle_temp: n(m.nozzle_temperature),
    bed_temp: n(m.bed_temperature),
  };
  return {
    print_settings: Object.fromEntries(Object.entries(settings).filter(([, v]) => v !== null)),
    material_type: typeof m.material_type === 'string' ? m.material_type : null,
    material_estimated_usage: n(m.filament_used_g),
    material_cost_per_gram: costPerKg / 1000,
    ...(n(m.estimated_print_time) !== null ? { estimated_duration: n(m.estimated_print_time) } : {}),
  };
}

/**
 * The print queue's side of job creation: the dispatch a print belongs to (its job carries queue_item_id and
 * becomes the dispatch's job, never a second one), and the call that tells the queue the job's id.
 */
export interface DispatchLink {
  linkFor(printerId: string, state: PrinterState): { queue_item_id: string; dispatch_id: string } | null;
  linked(dispatchId: string, jobId: number): Promise<void>;
}

export class JobTracker {
  private dispatches: DispatchLink | null = null;
  private readonly current = new Map<string, Tracked | null>();
  /** Printers seen not printing since the service started: a print found on any other printer was running at start. */
  private readonly seenIdle = new Set<string>();
  private readonly pending = new Map<string, PrinterState>();
  private readonly running = new Map<string, Promise<void>>();
  /** Printers whose last update failed to be handled: their next report of any kind retries, or a timer. */
  private readonly retries: RetryLater;
  /** The print of each printer's last new job: the same print seen again (after a cancel) is no new job and no flood. */
  private readonly lastCreated = new Map<string, Tracked>();
  private readonly gate: NewJobGate;
  /** UPDATES_AT_ONCE printers' updates at a time (a farm back after a drop reports every ended print in one turn); one waits per printer. */
  private readonly turns: WorkQueue;

  constructor(
    private readonly store: Store,
    private readonly settings: SettingsService,
    private readonly bus: EventBus,
    private readonly log: Logger,
    options: NewJobGateOptions & { retry?: RetryLaterOptions } = {},
  ) {
    this.gate = new NewJobGate(options);
    this.retries = new RetryLater(options.retry);
    this.turns = new WorkQueue({ name: 'job tracking', concurrency: UPDATES_AT_ONCE, maxBacklog: Infinity, log, whenFull: 'never: one update per printer' });
  }

  /** A printer's link came (back) up: what it prints now may have started while it was out of sight. */
  linkUp(printerId: string): void {
    this.gate.sawStart(printerId);
  }

  /**
   * Takes a printer's state. Updates of one printer are handled one at a time;
   * when several arrive while one is handled, only the newest is kept.
   */
  report(printerId: string, state: PrinterState): void {
    if (!this.running.has(printerId) && (this.idleWithoutJob(printerId, state) || this.sameProgress(printerId, state))) return;
    this.pending.set(printerId, state);
    if (this.running.has(printerId)) return;
    const loop = (async () => {
      for (let next = this.pending.get(printerId); next; next = this.pending.get(printerId)) {
        const update = next;
        this.pending.delete(printerId);
        try {
          await this.inTurn(printerId, () => this.handle(printerId, update));
          this.retries.done(printerId);
        } catch (err) {
          // Rule 6: logged, never shown to users, retried with the next update (or later); monitoring goes on.
          this.current.delete(printerId);
          this.retries.failed(printerId, () => !this.running.has(printerId) && this.report(printerId, update));
          this.log.error({ err, printer_id: printerId }, 'job tracking failed; retrying on the next update');
        }
      }
    })().finally(() => this.running.delete(printerId));
    this.running.set(printerId, loop);
  }

  /** Runs `task` once fewer than UPDATES_AT_ONCE printers' updates are handled; settles with it. */
  private inTurn(printerId: string, task: () => Promise<void>): Promise<void> {
    return new Promise<void>((resolve, reject) => void this.turns.push(() => task().then(resolve, reject), { key: printerId }));
  }

  /** Whether an update of the printer failed and waits: its next report, even one of temperatures alone, retries it. */
  awaitsRetry(printerId: string): boolean {
    return this.retries.has(printerId) && !this.running.has(printerId);
  }

  /** Links the jobs of queued prints to their dispatches (set once the print queue exists). */
  linkDispatches(link: DispatchLink): void {
    this.dispatches = link;
  }

  /** Waits until every update handed in so far is handled (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.running.size) await Promise.all(this.running.values());
  }

  /** Shutdown: after idle(), no retry waits. */
  close(): void {
    this.retries.close();
  }

  /** Forgets the cached jobs (a wiped cache must not duplicate jobs: the database is asked again). */
  forgetCache(): void {
    this.current.clear();
  }

  /**
   * The most common report, an idle printer with no job to end, handled at once: what handle() would do for
   * it, without its asynchronous round (it runs for every report of every printer).
   */
  private idleWithoutJob(printerId: string, state: PrinterState): boolean {
    if (PRINTING.includes(state.state) || this.current.get(printerId) !== null) return false;
    this.seenIdle.add(printerId);
    this.gate.sawStart(printerId);
    this.lastCreated.delete(printerId);
    return true;
  }

  /** The next most common: the tracked print goes on within the same whole percent (nothing to write or tell). */
  private sameProgress(printerId: string, state: PrinterState): boolean {
    const tracked = this.current.get(printerId);
    const job = state.job;
    if (!tracked || !job || !PRINTING.includes(state.state)) return false;
    const status = state.state === 'paused' ? 'paused' : 'printing';
    if (status !== tracked.status || Math.floor(job.progress) !== tracked.percent || !this.samePrint(tracked, job)) return false;
    tracked.progress = job.progress;
    return true;
  }

  private async handle(printerId: string, state: PrinterState): Promise<void> {
    const foundAtStart = !this.seenIdle.has(printerId);
    let tracked = this.current.get(printerId);
    if (tracked === undefined) {
      const job = await this.store.jobs.activeTrackedForPrinter(printerId);
      tracked = job ? await this.fromRecord(job) : null;
      this.current.set(printerId, tracked);
    }
    const printing = PRINTING.includes(state.state);
    if (!printing) {
      this.seenIdle.add(printerId);
      this.gate.sawStart(printerId);
      this.lastCreated.delete(printerId);
    }
    if (printing && state.job) {
      if (tracked && this.samePrint(tracked, state.job)) return this.progress(printerId, tracked, state);
      const last = this.lastCreated.get(printerId);
      if (!tracked && last && this.samePrint(last, state.job)) return; // a job ended by a user while the print goes on
      const link = this.dispatches?.linkFor(printerId, state) ?? null;
      // A queued print is a start the service made itself: the flood gate does not apply to it.
      const verdict = link ? 'ok' : this.gate.check(printerId, state.job.started_at);
      // Another name without a start of the printer is noise (or a flood), not a new print: the tracked job goes on.
      if (verdict === 'no_start') return this.refuse(printerId, state.job, verdict);
      // A different print than the one we track: the old one ended while we did not see it.
      if (tracked) await this.finish(printerId, tracked, { ...state, state: 'idle' });
      // A queued print always gets its job: the queue counts its copies by them.
      if (!link && !this.settings.get('job_creation_auto_create')) return;
      if (verdict === 'too_soon') return this.refuse(printerId, state.job, verdict);
      return this.create(printerId, state, state.job, foundAtStart, link);
    }
    // A printing state without job details (an early or partial report) neither creates nor ends a job.
    if (tracked && !printing) await this.finish(printerId, tracked, state);
  }

  /** Logs every refused new job at debug level; a warning and a system_alert at most once per interval, with the count. */
  private refuse(printerId: string, job: PrintProgress, verdict: 'no_start' | 'too_soon'): void {
    this.log.debug({ printer_id: printerId, job_name: job.name, reason: verdict }, 'new job refused');
    const count = this.gate.refused(printerId);
    if (count === null) return;
    const why = verdict === 'no_start' ? 'the printer did not start a print' : `at most one new job per ${Math.round(this.gate.minIntervalMs / 1000)} s`;
    const message = `Printer ${printerId} reported a new print "${job.name.slice(0, 80)}" that did not become a job (${why}); ${count} refused since the last alert`;
    this.log.warn({ printer_id: printerId, refused: count, reason: verdict }, message);
    this.bus.emit('system_alert', { level: 'warning', message, printer_id: printerId, refused_jobs: count, reason: verdict });
  }

  private samePrint(tracked: Tracked, job: PrintProgress): boolean {
    return isSameRun(tracked, job);
  }

  private async fromRecord(job: JobRecord): Promise<Tracked> {
    return {
      jobId: job.id,
      ...runOfJob(job),
      startTime: job.start_time ?? job.created_at,
      status: job.status,
      percent: Math.floor(job.progress),
      progress: job.progress,
      estimatedUsage: job.material_estimated_usage,
      powerWatts: (await this.store.printers.get(job.printer_id))?.power_watts ?? null,
    };
  }

  private async create(
    printerId: string,
    state: PrinterState,
    job: PrintProgress,
    foundAtStart: boolean,
    link: { queue_item_id: string; dispatch_id: string } | null = null,
  ): Promise<void> {
    const printer = await this.store.printers.get(printerId);
    if (!printer) return;
    const discovery = nowIso();
    const start = job.started_at ?? discovery;
    const file = printFileName(job);
    const filename = file.replace(/\\/g, '/').split('/').filter(Boolean).pop() ?? file;
    const customerInfo: Record<string, unknown> = {
      auto_created: true,
      discovery_time: discovery,
      ...(job.started_at ? { printer_start_time: job.started_at } : {}),
      discovered_on_startup: foundAtStart,
    };
    const status = state.state === 'paused' ? 'paused' : 'printing';
    // Copies of a queued file are never one print: each dispatch has its own identity.
    const key = link ? `${printKey(file, start)}#${link.dispatch_id}` : printKey(file, start);
    const known = await this.catalogFile(printerId, job);
    let id: number;
    try {
      id = await this.store.jobs.insert({
        printer_id: printerId,
        printer_name: printer.name,
        job_name: job.name || filename,
        filename,
        status,
        progress: job.progress,
        layer_current: job.layer_current,
        layer_total: job.layer_total,
        start_time: start,
        estimated_duration: job.remaining_seconds !== null && job.progress < 100 ? Math.round(job.remaining_seconds / Math.max(0.01, 1 - job.progress / 100)) : null,
        estimated_completion: job.remaining_seconds !== null ? new Date(Date.now() + job.remaining_seconds * 1000).toISOString() : null,
        file_path: known?.printer_path ?? job.file,
        file_size: known?.file_size ?? null,
        file_hash: known?.checksum ?? null,
        file_uploaded_at: known?.created_on_printer ?? null,
        ...fromMetadata(known?.metadata ?? null, this.settings.get('filament_cost_per_kg')),
        is_business: false,
        customer_info: customerInfo,
        created_at: discovery,
        updated_at: discovery,
        print_key: key,
        printer_job_id: job.printer_job_id,
        ...(link ? { queue_item_id: link.queue_item_id } : {}),
      });
    } catch (err) {
      if (!isUniqueViolation(err)) throw err;
      // Another update (or process) created it first: adopt that job, announce nothing.
      const existing = await this.store.jobs.byPrintKey(printerId, key);
      if (existing) this.current.set(printerId, await this.fromRecord(existing));
      return;
    }
    const tracked: Tracked = {
      jobId: id,
      name: normaliseFileName(file),
      startMinute: job.started_at ? startMinute(job.started_at) : null,
      printerJobId: job.printer_job_id,
      startTime: start,
      status,
      percent: Math.floor(job.progress),
      progress: job.progress,
      estimatedUsage: typeof known?.metadata?.filament_used_g === 'number' ? known.metadata.filament_used_g : null,
      powerWatts: printer.power_watts,
    };
    this.current.set(printerId, tracked);
    this.gate.created(printerId, job.started_at);
    this.lastCreated.set(printerId, { ...tracked });
    if (link) await this.dispatches?.linked(link.dispatch_id, id);
    this.log.info({ printer_id: printerId, job_id: id, filename, discovered_on_startup: foundAtStart }, 'job auto-created');
    this.bus.emit('job_auto_created', {
      id: String(id),
      printer_id: printerId,
      job_name: job.name || filename,
      filename,
      status: 'running',
      start_time: start,
      customer_info: customerInfo,
    });
    this.publish(id, printerId, 'created', status, job.progress, job.name || filename);
  }

  /** The catalog's entry for the printed file, when the catalog knows it. */
  private async catalogFile(printerId: string, job: PrintProgress): Promise<FileRecord | undefined> {
    return printedFile(await this.store.files.forPrinter(printerId), { path: job.file, name: printFileName(job) });
  }

  /** Progress, layers and the estimate follow the printer; the db is written on status or whole-percent changes only. */
  private async progress(printerId: string, tracked: Tracked, state: PrinterState): Promise<void> {
    const job = state.job!;
    const status = state.state === 'paused' ? 'paused' : 'printing';
    const percent = Math.floor(job.progress);
    tracked.progress = job.progress;
    if (status === tracked.status && percent === tracked.percent) return;
    const now = nowIso();
    const changed = await this.store.jobs.transition(tracked.jobId, ACTIVE_JOB, {
      status,
      progress: job.progress,
      layer_current: job.layer_current,
      layer_total: job.layer_total,
      estimated_completion: job.remaining_seconds !== null ? new Date(Date.now() + job.remaining_seconds * 1000).toISOString() : null,
      updated_at: now,
    });
    if (!changed) {
      // Cancelled or deleted by a user meanwhile: stop tracking it (a new print will get a new job).
      this.current.set(printerId, null);
      return;
    }
    const statusChanged = status !== tracked.status;
    tracked.status = status;
    tracked.percent = percent;
    this.publish(tracked.jobId, printerId, statusChanged ? 'status' : 'progress', status, job.progress);
  }

  private async finish(printerId: string, tracked: Tracked, state: PrinterState): Promise<void> {
    const now = nowIso();
    const duration = Math.max(0, Math.round((Date.parse(now) - Date.parse(tracked.startTime)) / 1000));
    const job = await this.store.jobs.get(tracked.jobId);
    const recorded = recordedEnd(state, { name: job?.filename ?? job?.job_name ?? tracked.name, startTime: tracked.startTime }); // Klipper's history: lost or cancelled
    const outcome = printOutcome(state.state, tracked.progress, recorded);
    const reason = outcome === 'failed' && recorded?.outcome === 'failed' ? recorded.reason : null;
    const progress = outcome === 'completed' ? 100 : (state.job?.progress ?? tracked.progress);
    const usage = job?.material_estimated_usage ?? tracked.estimatedUsage;
    const actualUsage = usage === null ? null : Math.round((outcome === 'completed' ? usage : (usage * progress) / 100) * 100) / 100;
    const watts = tracked.powerWatts ?? this.settings.get('default_printer_power_watts');
    const patch: JobPatch = {
      status: outcome,
      progress,
      end_time: now,
      actual_duration: duration,
      estimated_completion: null,
      power_cost: Math.round((duration / 3600) * (watts / 1000) * this.settings.get('energy_price_per_kwh') * 100) / 100,
      updated_at: now,
    };
    if (reason && job) patch.customer_info = { ...(job.customer_info ?? {}), end_reason: reason }; // beside the tracker's other notes of the run
    if (actualUsage !== null) {
      patch.material_actual_usage = actualUsage;
      if (job?.material_cost == null) {
        const perGram = job?.material_cost_per_gram ?? this.settings.get('filament_cost_per_kg') / 1000;
        patch.material_cost = Math.round(actualUsage * perGram * 100) / 100;
      }
    }
    this.current.set(printerId, null);
    if (!(await this.store.jobs.transition(tracked.jobId, ACTIVE_JOB, patch))) return;
    this.log.info({ printer_id: printerId, job_id: tracked.jobId, outcome, duration, ...(reason ? { reason } : {}) }, 'job ended');
    // With its name and a lost print's reason: the notification of the end needs them, and need not read the job for them.
    this.publish(tracked.jobId, printerId, 'status', outcome, progress, job?.job_name ?? undefined, reason);
  }

  private publish(id: number, printerId: string, change: JobUpdateEvent['change'], status: string, progress: number, jobName?: string, endReason?: string | null): void {
    this.bus.emit('job_update', { id, job_id: id, printer_id: printerId, change, status, progress, ...(jobName ? { job_name: jobName } : {}), ...(endReason ? { end_reason: endReason } : {}) });
  }
}
