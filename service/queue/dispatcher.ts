/**
 * The dispatcher: one loop in the service that decides which queued copy
 * starts on which printer. It runs when something happened that can let a
 * copy start (an item added or changed, a printer became free or changed its
 * filament, a plate was cleared, a setting changed, a dispatch ended), plus a
 * slow safety pass; never as a fast poll. A pass:
 *  - takes the queued items in order (priority, then age);
 *  - for each, the printers that can print its file (compatibility.ts) and
 *    are free: online, idle, plate clear, not claimed by another dispatch,
 *    not held after a start, not refusing at their screen;
 *  - claims one printer per copy (stored, one open dispatch per printer) and
 *    hands the dispatch to the runner;
 *  - says in words why an item still waits.
 */
import { randomInt, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import type { Logger } from 'pino';
import type { Store } from '../db';
import type { EventBus } from '../events';
import type { FileRecord } from '../db/repositories/files';
import type { PrinterRecord } from '../db/repositories/printers';
import type { DispatchRecord, QueueItemRecord } from '../db/repositories/queue';
import type { PrinterState } from '../printers/driver';
import { familyOf } from '../printers/families';
import type { Fleet } from '../printers/fleet';
import { sameLoadedMaterials } from '../printers/state-equality';
import type { SettingsService } from '../settings';
import { nowIso } from '../util/time';
import { checkPrinter, mismatchReason, type Mismatch, type PrinterFacts } from './compatibility';
import { DispatchRunner, NOT_READY } from './dispatch-run';
import type { FactsCache } from './facts-cache';
import type { FileFacts } from './file-facts';
import type { PlateTracker } from './plate';
import { queuedStart, remoteName } from './queued-start';
import { copyCounts, derivedStatus } from './views';

const SAFETY_PASS_MS = 30_000;
/** How long a printer that answered 409 (not ready at its screen) is left alone unless its state changes. */
const NOT_READY_RETRY_MS = 60_000;

type Availability = 'free' | 'offline' | 'busy' | 'plate' | 'not_ready';

interface SeenPrinter {
  availability: Availability;
  nozzle: number | null;
  model: string | null;
  materials: PrinterState['materials'];
}

export interface DispatcherDeps {
  store: Store;
  settings: SettingsService;
  fleet: Fleet;
  log: Logger;
  facts: FactsCache;
  plates: PlateTracker;
  bus: EventBus;
  /** Announces an item (queue_update): as stored now, or as the caller just read it. */
  publish(itemId: string, known?: { item: QueueItemRecord; dispatches: DispatchRecord[] }): Promise<unknown>;
}

export class Dispatcher {
  readonly runner: DispatchRunner;
  private passing: Promise<void> | null = null;
  private again = false;
  private safety: NodeJS.Timeout | null = null;
  /** Wakes the dispatcher when the earliest start_after comes. */
  private startAfterTimer: NodeJS.Timeout | null = null;
  private closed = false;
  private records = new Map<string, PrinterRecord>();
  /** The printer records are read again only after a printer was created, changed or deleted (and on the safety pass). */
  private recordsStale = true;
  private stopListening: (() => void) | null = null;
  /** What each printer's last report showed of what decides a start. */
  private readonly seen = new Map<string, SeenPrinter>();
  private readonly notReadyUntil = new Map<string, { raw: string; until: number }>();
  private readonly lastStart = new Map<string, number>();
  private readonly itemLocks = new Map<string, Promise<unknown>>();

  constructor(private readonly deps: DispatcherDeps) {
    this.runner = new DispatchRunner(deps.store, deps.settings, deps.log, {
      sender: (id) => {
        const driver = deps.fleet.driverOf(id);
        if (!driver.sendAndStart) throw new Error('this printer cannot start queued prints');
        return driver.sendAndStart.bind(driver);
      },
      stateOf: (id) => deps.fleet.stateOf(id),
      isFree: (id) => this.availability(id, true) === 'free',
      printerType: (id) => this.records.get(id)?.type,
      settle: (itemId, failure) => this.settle(itemId, failure),
      notReady: (id, state) => this.notReadyUntil.set(id, { raw: state?.raw_state ?? '', until: Date.now() + NOT_READY_RETRY_MS }),
      printEnded: (id) => deps.plates.printEnded(id, this.records.get(id)?.plate_auto_clear === true),
      cleanUp: (id, name) => {
        let driver;
        try {
          driver = deps.fleet.driverOf(id);
        } catch {
          return; // offline: the file stays (a later upload of the same name replaces it)
        }
        void driver.removeQueuedFile?.(name).catch((err) => deps.log.warn({ err: (err as Error).message, printer_id: id }, 'could not remove a printed queue file'));
      },
      reconnect: (id) => {
        if (!this.closed) void deps.fleet.testConnection(id).catch((err) => deps.log.warn({ err, printer_id: id }, 'reconnect after an unacknowledged start failed'));
      },
    });
  }

  /** Picks up dispatches left open by the last run, then starts listening. */
  async start(): Promise<void> {
    await this.deps.plates.load();
    this.records = new Map((await this.deps.store.printers.list()).map((p) => [p.id, p]));
    for (const d of await this.deps.store.queue.openDispatches()) {
      const job = d.job_id !== null ? await this.deps.store.jobs.get(d.job_id) : undefined;
      this.runner.recover(d, job?.progress ?? 0);
    }
    this.deps.fleet.onReport((id, state) => this.onReport(id, state));
    this.stopListening = this.deps.bus.on('printer_status', (e) => {
      if (e.change === 'state') return;
      this.recordsStale = true;
      this.wake('printer changed');
    });
    this.deps.settings.onChange((keys) => {
      if (keys.some((k) => k.startsWith('queue_'))) this.wake('settings changed');
    });
    this.safety = setInterval(() => {
      this.recordsStale = true;
      this.wake('safety pass');
    }, SAFETY_PASS_MS);
    this.safety.unref();
    this.wake('start');
  }

  /** Stops deciding (before the drivers close: an upload cut by the shutdown stays `uploading`, to be retried). */
  halt(): void {
    this.closed = true;
    this.runner.halt();
    if (this.safety) clearInterval(this.safety);
    if (this.startAfterTimer) clearTimeout(this.startAfterTimer);
    this.stopListening?.();
  }

  async close(): Promise<void> {
    this.halt();
    await this.passing;
    await this.runner.close();
  }

  /** Runs a pass soon; passes never overlap, and requests during one make one more. */
  wake(reason: string): void {
    if (this.closed) return;
    if (this.passing) {
      this.again = true;
      return;
    }
    this.passing = (async () => {
      do {
        this.again = false;
        try {
          await this.pass();
        } catch (err) {
          this.deps.log.error({ err, reason }, 'dispatcher pass failed');
        }
      } while (this.again && !this.closed);
    })().finally(() => (this.passing = null));
  }

  /** Waits until no pass runs (tests). */
  async idle(): Promise<void> {
    while (this.passing) await this.passing;
  }

  /** The dispatch a tracked job belongs to (the job tracker asks before it creates a job). */
  linkFor(printerId: string, state: PrinterState): { queue_item_id: string; dispatch_id: string } | null {
    const d = this.runner.linkFor(printerId, state);
    return d ? { queue_item_id: d.item_id, dispatch_id: d.id } : null;
  }

  /** The job tracker created the dispatch's job. */
  async linked(dispatchId: string, jobId: number): Promise<void> {
    const d = await this.deps.store.queue.getDispatch(dispatchId);
    if (!d) return;
    await this.deps.store.queue.updateDispatch(dispatchId, { job_id: jobId, updated_at: nowIso() });
    await this.settle(d.item_id, null);
  }

  /** The user cleared a printer's plate. */
  async plateCleared(printerId: string): Promise<void> {
    await this.deps.plates.clear(printerId);
    this.wake('plate cleared');
  }

  private onReport(printerId: string, state: PrinterState): void {
    const record = this.records.get(printerId);
    this.deps.plates.onReport(printerId, state, record?.plate_auto_clear === true);
    void this.runner.onReport(printerId, state)?.catch((err) => this.deps.log.error({ err, printer_id: printerId }, 'dispatch tracking failed'));
    // A new pass only when something changed that can let a copy start here (compared field by field: this
    // runs on every report). Filament counts by slot, type and colour; how much is left changes all through a
    // print and decides nothing.
    const seen: SeenPrinter = { availability: this.availability(printerId, false), nozzle: state.nozzle_diameter ?? null, model: state.model ?? null, materials: state.materials };
    const last = this.seen.get(printerId);
    this.seen.set(printerId, seen);
    if (last && last.availability === seen.availability && last.nozzle === seen.nozzle && last.model === seen.model && sameLoadedMaterials(last.materials, seen.materials)) return;
    this.wake('printer changed');
  }

  /** Whether a start may go to the printer now; `forStart` skips the claim check (the runner's own dispatch holds it). */
  private availability(printerId: string, forStart: boolean): Availability {
    const record = this.records.get(printerId);
    if (!record || !record.is_active) return 'offline';
    const state = this.deps.fleet.stateOf(printerId);
    if (!state || !this.deps.fleet.isConnected(printerId)) return 'offline';
    // Printer states in which a start may be sent (QUEUE.md): never to a busy printer.
    if (!familyOf(record.type).startable.includes(state.raw_state) || !['idle', 'finished', 'failed', 'stopped'].includes(state.state)) return 'busy';
    if (!forStart && this.runner.isHeld(printerId)) return 'busy';
    const refusal = this.notReadyUntil.get(printerId);
    if (refusal) {
      if (refusal.raw === state.raw_state && Date.now() < refusal.until) return 'not_ready';
      this.notReadyUntil.delete(printerId);
    }
    if (this.deps.plates.plateOf(printerId) === 'needs_clearing') return 'plate';
    return 'free';
  }

  private async pass(): Promise<void> {
    const { store, settings } = this.deps;
    if (this.recordsStale) {
      this.recordsStale = false;
      this.records = new Map((await store.printers.list()).map((p) => [p.id, p]));
    }
    const items = await store.queue.itemsIn(['queued']);
    const open = await store.queue.openDispatches();
    const claimed = new Set(open.map((d) => d.printer_id));
    await this.resumeInterrupted(open);
    if (!settings.get('queue_dispatch_enabled')) {
      for (const item of items) await this.setReason(item, 'dispatching paused');
      return;
    }
    const dispatches = await store.queue.dispatchesOf(items.map((i) => i.id));
    const active = [...this.records.values()].filter((p) => p.is_active);
    const facts = (p: PrinterRecord): PrinterFacts => {
      const s = this.deps.fleet.stateOf(p.id);
      return { id: p.id, name: p.name, type: p.type, model: s?.model ?? p.model, nozzle_diameter: s?.nozzle_diameter ?? null, materials: s?.materials ?? null };
    };
    // Least recently started first, so that work spreads over the farm.
    const printers = active.sort((a, b) => (this.lastStart.get(a.id) ?? 0) - (this.lastStart.get(b.id) ?? 0));
    let nextStartAfter = Infinity;
    for (const item of items) {
      if (this.closed) return;
      if (item.start_after && Date.parse(item.start_after) > Date.now()) {
        nextStartAfter = Math.min(nextStartAfter, Date.parse(item.start_after));
        await this.setReason(item, 'start_after not reached');
        continue;
      }
      let remaining = copyCounts(item.copies, dispatches.get(item.id) ?? []).remaining;
      if (remaining <= 0) continue;
      const file = await store.files.get(item.file_id);
      if (!file?.local_path || !fs.existsSync(file.local_path)) {
        await this.setReason(item, 'the file is no longer available on the service');
        continue;
      }
      let fileFacts: FileFacts;
      try {
        fileFacts = await this.deps.facts.get(file as FileRecord & { local_path: string }, item.plate);
      } catch (err) {
        await this.setReason(item, `the file cannot be read: ${(err as Error).message}`);
        continue;
      }
      const mismatches: { printer: PrinterFacts; mismatch: Mismatch }[] = [];
      const waiting: { printer: PrinterRecord; why: Availability }[] = [];
      for (const printer of printers) {
        if (remaining <= 0) break;
        const pf = facts(printer);
        const fit = checkPrinter(fileFacts, item, pf);
        if (!fit.ok) {
          mismatches.push({ printer: pf, mismatch: fit.mismatch });
          continue;
        }
        const why = claimed.has(printer.id) ? 'busy' : this.availability(printer.id, false);
        if (why !== 'free') {
          waiting.push({ printer, why });
          continue;
        }
        if (await this.claim(item, printer, file as FileRecord & { local_path: string }, fit.ams_mapping, dispatches.get(item.id) ?? [])) {
          claimed.add(printer.id);
          remaining--;
        }
      }
      if (remaining <= 0) await this.setReason(item, null);
      else await this.setReason(item, waiting.length ? availabilityReason(waiting) : mismatchReason(fileFacts, mismatches, active.length));
    }
    this.armStartAfter(nextStartAfter);
  }

  /** One timer for the earliest start_after still ahead (the safety pass would find it too, up to 30 s late). */
  private armStartAfter(at: number): void {
    if (this.startAfterTimer) clearTimeout(this.startAfterTimer);
    this.startAfterTimer = null;
    if (!Number.isFinite(at) || this.closed) return;
    this.startAfterTimer = setTimeout(() => this.wake('start_after reached'), Math.min(Math.max(0, at - Date.now()) + 10, SAFETY_PASS_MS));
    this.startAfterTimer.unref();
  }

  /** Dispatches left claimed or uploading by an interrupted run: retried once their printer is free. */
  private async resumeInterrupted(open: DispatchRecord[]): Promise<void> {
    for (const d of open) {
      if (!this.records.has(d.printer_id)) {
        // The printer was removed: its copy goes back to the queue (not counted as a failure).
        this.runner.forget(d.printer_id);
        const ended = await this.deps.store.queue.transitionDispatch(d.id, [d.state], { state: 'cancelled', error: 'the printer was removed', updated_at: nowIso() });
        if (ended) void this.settle(d.item_id, null);
        continue;
      }
      if ((d.state !== 'claimed' && d.state !== 'uploading') || this.runner.owns(d.id)) continue;
      if (this.availability(d.printer_id, true) !== 'free') continue;
      const item = await this.deps.store.queue.getItem(d.item_id);
      const file = item && (await this.deps.store.files.get(item.file_id));
      if (!item || !file?.local_path) continue;
      const facts = await this.deps.facts.get(file as FileRecord & { local_path: string }, item.plate).catch(() => null);
      const record = this.records.get(d.printer_id);
      const state = this.deps.fleet.stateOf(d.printer_id);
      if (!facts || !record) continue;
      const fit = checkPrinter(facts, item, { id: record.id, name: record.name, type: record.type, model: state?.model ?? record.model, nozzle_diameter: state?.nozzle_diameter ?? null, materials: state?.materials ?? null });
      this.deps.log.info({ dispatch_id: d.id, printer_id: d.printer_id }, 'retrying a dispatch interrupted while uploading');
      this.runner.launch(d, queuedStart(item, d, file as FileRecord & { local_path: string }, fit.ok ? fit.ams_mapping : []));
    }
  }

  private async claim(item: QueueItemRecord, printer: PrinterRecord, file: FileRecord & { local_path: string }, mapping: number[], previous: DispatchRecord[]): Promise<boolean> {
    const now = nowIso();
    const dispatch: DispatchRecord = {
      id: randomUUID().replace(/-/g, '').slice(0, 16),
      item_id: item.id,
      printer_id: printer.id,
      job_id: null,
      state: 'claimed',
      attempt: previous.length + 1,
      error: null,
      remote_name: remoteName(file.filename, printer.type),
      // A fresh decimal id below 2^31-1 for every start ("0" resumes an old print, larger ids stall a P1S).
      task_id: String(randomInt(100_000, 2_147_483_647)),
      baseline_job_id: null,
      start_sent_at: null,
      created_at: now,
      updated_at: now,
    };
    if (!(await this.deps.store.queue.claim(dispatch))) return false;
    previous.push(dispatch);
    this.lastStart.set(printer.id, Date.now());
    this.deps.log.info({ item_id: item.id, printer_id: printer.id, dispatch_id: dispatch.id, attempt: dispatch.attempt }, 'queued copy claimed a printer');
    void this.settle(item.id, null);
    this.runner.launch(dispatch, queuedStart(item, dispatch, file, mapping));
    return true;
  }

  private async setReason(item: QueueItemRecord, reason: string | null): Promise<void> {
    if (item.waiting_reason === reason) return;
    if (!(await this.deps.store.queue.transitionItem(item.id, ['queued'], { waiting_reason: reason, updated_at: nowIso() }))) return;
    item.waiting_reason = reason;
    await this.deps.publish(item.id);
  }

  /** After a dispatch changed: the item's failure count and status, stored and announced; one item at a time. */
  settle(itemId: string, failure: 'reset' | 'count' | null): Promise<void> {
    const previous = this.itemLocks.get(itemId) ?? Promise.resolve();
    const next = previous.then(async () => {
      const { store, settings } = this.deps;
      const item = await store.queue.getItem(itemId);
      if (!item) return;
      const dispatches = (await store.queue.dispatchesOf([itemId])).get(itemId) ?? [];
      const failures = failure === 'reset' ? 0 : failure === 'count' ? item.failures_in_row + 1 : item.failures_in_row;
      const status = derivedStatus({ ...item, failures_in_row: failures }, dispatches, settings.get('queue_max_attempts'));
      const patch = { failures_in_row: failures, status, updated_at: nowIso(), ...(status !== 'queued' && status !== 'held' ? { waiting_reason: null } : {}) };
      await store.queue.updateItem(itemId, patch);
      if (status === 'failed') {
        for (const d of dispatches) await store.queue.transitionDispatch(d.id, ['claimed', 'uploading'], { state: 'cancelled', error: 'the queue item failed', updated_at: nowIso() });
      }
      // Announced from what was just read (the dispatches of a large item are many): a change after the read settles again.
      await this.deps.publish(itemId, status === 'failed' ? undefined : { item: { ...item, ...patch }, dispatches });
      if (failure !== null || status !== item.status) this.wake('dispatch ended');
    });
    const settled = next.catch((err) => this.deps.log.error({ err, item_id: itemId }, 'could not update the queue item'));
    this.itemLocks.set(itemId, settled);
    void settled.finally(() => this.itemLocks.get(itemId) === settled && this.itemLocks.delete(itemId));
    return settled;
  }
}

function availabilityReason(waiting: { printer: PrinterRecord; why: Availability }[]): string {
  const names = (why: Availability) => waiting.filter((w) => w.why === why).map((w) => w.printer.name);
  const list = (n: string[]) => n.slice(0, 3).join(', ') + (n.length > 3 ? ` and ${n.length - 3} more` : '');
  const plate = names('plate');
  if (plate.length) return `plate needs clearing on ${list(plate)}`;
  const notReady = names('not_ready');
  if (notReady.length) return `${NOT_READY} (${list(notReady)})`;
  if (waiting.every((w) => w.why === 'offline')) return 'all compatible printers offline';
  return 'all compatible printers busy';
}
