/**
 * The life of one dispatch (one started copy), after the dispatcher claimed a
 * printer for it: upload (at most `queue_max_parallel_uploads` printers at
 * once), start, wait for the printer's acknowledgement (Bambu: a running
 * state with our task or file; PrusaLink: PRINTING with a job id new to us)
 * within `queue_start_timeout_s`, then follow the print to its end. Every step
 * is stored before the next one begins, so that after a restart nothing is
 * started twice: `uploading` is retried, `starting` is resolved from what the
 * printer reports.
 */
import type { Logger } from 'pino';
import type { Store } from '../db';
import type { DispatchRecord, DispatchState } from '../db/repositories/queue';
import { normaliseFileName, printFileName } from '../monitoring/print-identity';
import { printOutcome, recordedEnd, type PrintOutcome } from '../monitoring/print-outcome';
import { DriverError, type PrinterState, type QueuedStart } from '../printers/driver';
import type { SettingsService } from '../settings';
import { nowIso } from '../util/time';
import { WorkQueue } from '../util/work-queue';

/**
 * Printers whose start acknowledgement or print end is being recorded at once. Each is several statements (the
 * dispatch's move, then its item settled); a farm back after a network drop reports all its ended prints in one
 * turn, and one chain per printer put every printer's statements before the database's other users at once.
 */
const ENDS_AT_ONCE = 2;

/** The outcome of a print: completed, or a copy that goes back to the queue. */
type Outcome = PrintOutcome;

/** What the runner needs of the dispatcher and the fleet. */
export interface RunnerHost {
  /** The driver's queued-start function of a connected printer (throws when offline). */
  sender(printerId: string): NonNullable<import('../printers/driver').PrinterDriver['sendAndStart']>;
  stateOf(printerId: string): PrinterState | undefined;
  /** True while the printer's link is up (it can acknowledge a start). */
  isConnected(printerId: string): boolean;
  /** True when the printer may get a start now (online, idle, plate clear). */
  isFree(printerId: string): boolean;
  printerType(printerId: string): 'bambu_lab' | 'prusa_core' | 'klipper' | undefined;
  /** Stores the item's counters and status after a dispatch changed, announces it, and wakes the dispatcher. */
  settle(itemId: string, failure: 'reset' | 'count' | null): Promise<void>;
  /** A PrusaLink printer answered 409: not ready at its screen. */
  notReady(printerId: string, state: PrinterState | undefined): void;
  /** A queued print ended (also one that ended while the service was down): the plate needs clearing. */
  printEnded(printerId: string): void;
  /** The queued print is over: its file goes from the printer's card. */
  cleanUp(printerId: string, remoteName: string): void;
  /** A Bambu printer never acknowledged a start: reconnect MQTT with a fresh client id before the next one (QUEUE.md). */
  reconnect(printerId: string): void;
}

export const NOT_READY = 'printer not ready at its screen';

class DispatchAbort extends Error {}

/** A bounded number of uploads at once; the limit is read on each take (it is a setting). */
class Slots {
  private active = 0;
  private readonly waiting: (() => void)[] = [];
  constructor(private readonly limit: () => number) {}
  async take(): Promise<void> {
    while (this.active >= this.limit()) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.active++;
  }
  release(): void {
    this.active--;
    this.waiting.shift()?.();
  }
}

/** A dispatch whose printer is watched: for the acknowledgement (starting) or the print's end (printing). */
interface Watched {
  dispatch: DispatchRecord;
  state: 'starting' | 'printing';
  /** The printer's job id of our print once acknowledged (a different one means ours is over). */
  jobKey: string | null;
  progress: number;
  /** The printer's start of our print, once reported: the printer's record of its end must be of this run. */
  startedAt?: string | null;
  /** Resolved after a restart: a print that already ended still counts as started. */
  recovered: boolean;
  timer: NodeJS.Timeout | null;
}

const RUNNING = ['preparing', 'printing', 'paused'];

export class DispatchRunner {
  private readonly uploads: Slots;
  private readonly watched = new Map<string, Watched>();
  private readonly runs = new Set<Promise<void>>();
  private readonly owned = new Set<string>();
  /** When the last start went to each printer, until it acknowledged (the hold). */
  private readonly holds = new Map<string, number>();
  /** The database side of acknowledgements and ends, a printer's in the order seen (keyed by printer). */
  private readonly ends: WorkQueue;
  private closed = false;

  constructor(
    private readonly store: Store,
    private readonly settings: SettingsService,
    private readonly log: Logger,
    private readonly host: RunnerHost,
  ) {
    this.uploads = new Slots(() => this.settings.get('queue_max_parallel_uploads'));
    // One task per watched dispatch at most (its acknowledgement, its end): the backlog is bounded by the farm.
    this.ends = new WorkQueue({ name: 'queued print ends', concurrency: ENDS_AT_ONCE, maxBacklog: Infinity, log, whenFull: 'never: one task per watched printer' });
  }

  /** Whether a start under way follows the printer's reports: held for it, or watched for its acknowledgement or end. */
  follows(printerId: string): boolean {
    return this.holds.has(printerId) || this.watched.has(printerId);
  }

  /** True while the printer is held after a start it has not acknowledged yet (at most queue_printer_hold_s). */
  isHeld(printerId: string): boolean {
    const until = this.holds.get(printerId);
    if (until === undefined) return false;
    if (Date.now() < until) return true;
    this.holds.delete(printerId);
    return false;
  }

  /** Runs a claimed (or, after a restart, an interrupted uploading) dispatch. */
  launch(dispatch: DispatchRecord, start: QueuedStart): void {
    this.owned.add(dispatch.id);
    const run = this.run(dispatch, start).finally(() => {
      this.runs.delete(run);
      this.owned.delete(dispatch.id);
    });
    this.runs.add(run);
  }

  /** An interrupted dispatch that cannot be resumed (its file went): start_failed, not counted against the printer. */
  async drop(d: DispatchRecord, reason: string): Promise<void> {
    await this.startFailed(d, d.state, new DispatchAbort(reason));
  }

  /** True while a run of this dispatch is under way in this process. */
  owns(dispatchId: string): boolean {
    return this.owned.has(dispatchId);
  }

  /** Resumes watching a dispatch that was starting or printing when the service stopped. */
  recover(dispatch: DispatchRecord, progress: number): void {
    if (dispatch.state !== 'starting' && dispatch.state !== 'printing') return;
    this.watch(dispatch, dispatch.state, true, progress);
  }

  /** The open dispatch on a printer that a job tracker's new job belongs to (starting or printing, our file or task). */
  linkFor(printerId: string, state: PrinterState): DispatchRecord | null {
    const w = this.watched.get(printerId);
    return w && this.isOurs(w, state) ? w.dispatch : null;
  }

  onReport(printerId: string, state: PrinterState): Promise<void> | undefined {
    const w = this.watched.get(printerId);
    if (!w) return undefined;
    if (w.state === 'starting') {
      if (!this.acknowledges(w, state)) {
        // A start recovered after a restart, or whose time ran out while the printer was unreachable, gets its
        // deadline from the printer's first report (see watch() and timedOut()).
        if (!w.timer) this.arm(w, Date.now());
        return undefined;
      }
      // Taken now, so that the next report sees it printing; recorded in the printer's turn.
      if (w.timer) clearTimeout(w.timer);
      w.timer = null;
      w.state = 'printing';
      w.jobKey = state.job?.printer_job_id ?? null;
      this.holds.delete(printerId);
      return this.inTurn(printerId, () => this.acknowledged(w, state));
    }
    const outcome = this.endOf(w, state);
    if (!outcome) return undefined;
    this.unwatch(printerId, w.dispatch.id);
    return this.inTurn(printerId, () => this.finish(w, outcome, state));
  }

  /**
   * Runs `task` when a slot is free and the printer's earlier tasks are done; settles with it. The dispatch stays
   * open in the database until its move, so the dispatcher claims nothing new on the printer meanwhile.
   */
  private inTurn(printerId: string, task: () => Promise<void>): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (!this.ends.push(() => task().then(resolve, reject), { key: printerId })) resolve(); // stopping: recovered after the restart
    });
  }

  /** From now on nothing is started or recorded as failed (the service is stopping). */
  halt(): void {
    this.closed = true;
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const w of this.watched.values()) if (w.timer) clearTimeout(w.timer);
    this.watched.clear();
    // What waits is dropped: its dispatch stays open and is watched again after the restart.
    await this.ends.close();
    await Promise.allSettled([...this.runs]);
  }

  /** Stops watching a printer (it was removed). */
  forget(printerId: string): void {
    this.unwatch(printerId);
    this.holds.delete(printerId);
  }

  /** Waits for the runs under way (tests). */
  async idle(): Promise<void> {
    while (this.runs.size) await Promise.allSettled([...this.runs]);
    await this.ends.idle();
  }

  private async run(d: DispatchRecord, start: QueuedStart): Promise<void> {
    await this.uploads.take();
    let holding = true;
    const release = () => {
      if (holding) this.uploads.release();
      holding = false;
    };
    let reached: DispatchState = d.state;
    try {
      if (this.closed) return;
      if (!(await this.move(d, ['claimed', 'uploading'], { state: 'uploading', error: null }))) return; // cancelled meanwhile
      reached = 'uploading';
      // Announced, not awaited: the item's updates queue up behind each other, the upload must not.
      void this.host.settle(d.item_id, null);
      const send = this.host.sender(d.printer_id);
      await send(start, {
        beforeStart: async () => {
          release(); // the upload is done: its slot goes to the next printer
          if (this.closed) throw new DispatchAbort('the service is stopping');
          if (!this.host.isFree(d.printer_id)) throw new DispatchAbort('the printer became busy before the start');
          const state = this.host.stateOf(d.printer_id);
          const patch = { state: 'starting' as const, start_sent_at: nowIso(), baseline_job_id: state?.job?.printer_job_id ?? null };
          if (!(await this.move(d, ['uploading'], patch))) throw new DispatchAbort('the copy was cancelled before the start');
          reached = 'starting';
          Object.assign(d, patch);
          this.holds.set(d.printer_id, Date.now() + this.settings.get('queue_printer_hold_s') * 1000);
          this.watch(d, 'starting', false, 0);
          void this.host.settle(d.item_id, null);
        },
      });
    } catch (err) {
      release();
      await this.startFailed(d, reached, err);
    }
  }

  /** A start that did not happen: the copy goes back to the queue (counted unless the printer merely wasn't ready). */
  private async startFailed(d: DispatchRecord, reached: DispatchState, err: unknown): Promise<void> {
    const notReady = err instanceof DriverError && err.code === 'REJECTED' && err.details.status === 409;
    const aborted = err instanceof DispatchAbort;
    const message = notReady ? NOT_READY : err instanceof Error ? err.message : String(err);
    // A run cut by the shutdown stays as it is: uploading is retried, starting resolved, after the restart.
    if (this.closed || !['claimed', 'uploading', 'starting'].includes(reached)) return;
    this.unwatch(d.printer_id, d.id);
    this.holds.delete(d.printer_id);
    // The printer was removed or deactivated under the start (its driver closed): the copy goes back to the queue
    // uncounted, as when a removal comes between two passes (dispatcher.ts); the printer was not at fault.
    const printer = notReady || aborted ? null : await this.store.printers.get(d.printer_id);
    if (!notReady && !aborted && !printer?.is_active) {
      const error = printer ? 'the printer was deactivated' : 'the printer was removed';
      if (await this.move(d, ['claimed', 'uploading', 'starting'], { state: 'cancelled', error })) await this.host.settle(d.item_id, null);
      return;
    }
    if (!(await this.move(d, ['claimed', 'uploading', 'starting'], { state: 'start_failed', error: message }))) return;
    if (notReady) this.host.notReady(d.printer_id, this.host.stateOf(d.printer_id));
    this.log.warn({ dispatch_id: d.id, printer_id: d.printer_id, err: message }, 'queued start failed');
    await this.host.settle(d.item_id, notReady || aborted ? null : 'count');
  }

  private watch(d: DispatchRecord, state: 'starting' | 'printing', recovered: boolean, progress: number): void {
    this.unwatch(d.printer_id);
    const w: Watched = { dispatch: d, state, jobKey: null, progress, recovered, timer: null };
    // A start recovered after a restart is not timed from start_sent_at: the service may have been down longer than
    // queue_start_timeout_s, and the timer would fail the start before the printer even connected, sending back to
    // the queue a copy the printer is printing (printed twice). It is armed on the printer's first report instead.
    if (state === 'starting' && !recovered) this.arm(w, d.start_sent_at ? Date.parse(d.start_sent_at) : Date.now());
    this.watched.set(d.printer_id, w);
  }

  /** Fails a start the printer has not acknowledged within queue_start_timeout_s of `since`. */
  private arm(w: Watched, since: number): void {
    const left = Math.max(0, since + this.settings.get('queue_start_timeout_s') * 1000 - Date.now());
    w.timer = setTimeout(() => void this.timedOut(w), left);
  }

  private unwatch(printerId: string, dispatchId?: string): void {
    const w = this.watched.get(printerId);
    if (!w || (dispatchId && w.dispatch.id !== dispatchId)) return;
    if (w.timer) clearTimeout(w.timer);
    this.watched.delete(printerId);
  }

  /** Our print: the printer names our task id (Bambu), or our file. */
  private isOurs(w: Watched, state: PrinterState): boolean {
    const job = state.job;
    if (!job) return false;
    const d = w.dispatch;
    if (w.jobKey && job.printer_job_id) return job.printer_job_id === w.jobKey;
    if (job.printer_job_id && job.printer_job_id === d.task_id) return true;
    if (this.host.printerType(d.printer_id) === 'prusa_core' && job.printer_job_id && job.printer_job_id === d.baseline_job_id) return false;
    return normaliseFileName(printFileName(job)) === normaliseFileName(d.remote_name) || normaliseFileName(job.name) === normaliseFileName(d.remote_name);
  }

  private acknowledges(w: Watched, state: PrinterState): boolean {
    if (!this.isOurs(w, state)) return false;
    // After a restart a print that already ended is still ours; otherwise only a running state acknowledges.
    return RUNNING.includes(state.state) || (w.recovered && ['finished', 'failed', 'stopped'].includes(state.state));
  }

  /** In the printer's turn, after onReport took the acknowledgement. */
  private async acknowledged(w: Watched, state: PrinterState): Promise<void> {
    if (!(await this.move(w.dispatch, ['starting'], { state: 'printing', error: null }))) return this.unwatch(w.dispatch.printer_id, w.dispatch.id);
    this.log.info({ dispatch_id: w.dispatch.id, printer_id: w.dispatch.printer_id }, 'queued start acknowledged');
    await this.host.settle(w.dispatch.item_id, null);
    // A report meanwhile that ended the print queued its own end (after this one): not ended twice.
    if (this.watched.get(w.dispatch.printer_id) !== w) return;
    const outcome = this.endOf(w, state);
    if (!outcome) return;
    this.unwatch(w.dispatch.printer_id, w.dispatch.id);
    await this.finish(w, outcome, state);
  }

  private endOf(w: Watched, state: PrinterState): Outcome | null {
    if (RUNNING.includes(state.state)) {
      if (this.isOurs(w, state)) {
        w.progress = state.job?.progress ?? w.progress;
        w.startedAt = state.job?.started_at ?? w.startedAt;
        return null;
      }
      if (!state.job) return null; // a partial report
    }
    // 'busy' is no end state: wait for the next report.
    if (state.state === 'busy') return null;
    return printOutcome(state.state, w.progress, this.recorded(w, state));
  }

  /** The printer's record of this copy's end (Klipper's history), by the job tracker's rule: lost, or cancelled. */
  private recorded(w: Watched, state: PrinterState) {
    return recordedEnd(state, { name: w.dispatch.remote_name, startTime: w.startedAt ?? w.dispatch.start_sent_at });
  }

  /** In the printer's turn, once it is no longer watched. */
  private async finish(w: Watched, outcome: Outcome, state: PrinterState): Promise<void> {
    const lost = outcome === 'failed' && !state.error ? this.recorded(w, state)?.reason : null;
    const error = outcome === 'completed' ? null : outcome === 'cancelled' ? 'the print was cancelled' : (state.error?.message ?? lost ?? 'the print failed');
    if (!(await this.move(w.dispatch, ['printing'], { state: outcome, error }))) return;
    this.host.printEnded(w.dispatch.printer_id);
    this.host.cleanUp(w.dispatch.printer_id, w.dispatch.remote_name);
    this.log.info({ dispatch_id: w.dispatch.id, printer_id: w.dispatch.printer_id, outcome }, 'queued print ended');
    await this.host.settle(w.dispatch.item_id, outcome === 'completed' ? 'reset' : 'count');
  }

  private async timedOut(w: Watched): Promise<void> {
    if (this.watched.get(w.dispatch.printer_id) !== w || w.state !== 'starting') return;
    w.timer = null;
    // An unreachable printer may have taken the start and be unable to say so (a network drop right after it):
    // failing it would send back to the queue a copy it may be printing. Its first report once back re-arms it.
    if (!this.host.isConnected(w.dispatch.printer_id)) return;
    const seconds = this.settings.get('queue_start_timeout_s');
    await this.startFailed(w.dispatch, 'starting', new Error(`the printer did not acknowledge the start within ${seconds} s`));
    if (this.host.printerType(w.dispatch.printer_id) === 'bambu_lab') this.host.reconnect(w.dispatch.printer_id);
  }

  private async move(d: DispatchRecord, from: readonly DispatchState[], patch: Partial<DispatchRecord>): Promise<boolean> {
    const ok = await this.store.queue.transitionDispatch(d.id, from, { ...patch, updated_at: nowIso() });
    if (ok && patch.state) d.state = patch.state;
    return ok;
  }
}
