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
import type { Logger } from 'pino';
import type { Store } from '../db';
import type { EventBus } from '../events';
import type { PrinterRecord } from '../db/repositories/printers';
import type { DispatchRecord, QueueItemRecord } from '../db/repositories/queue';
import type { PrinterState } from '../printers/driver';
import type { Fleet } from '../printers/fleet';
import type { SettingsService } from '../settings';
import { nowIso } from '../util/time';
import type { FilamentGate } from './filament-gate';
import type { Mismatch, PrinterFacts } from './compatibility';
import { DispatchRunner } from './dispatch-run';
import type { FactsCache } from './facts-cache';
import type { PlateTracker } from './plate';
import { orderPrinters, pinnedPrinter, USAGE_WINDOW_DAYS } from './printer-choice';
import { farmGate, gateSettingsOf, isHeating, timeGate } from './start-gates';
import { firstFit, loadVariants, variantMemo, type LoadedVariant } from './variants';
import { availabilityReason, variantsReason, type Availability } from './waiting-reasons';
import { familyOf } from './printer-families';
import { newDispatch, queuedStart } from './queued-start';
import { ItemSettler } from './item-settle';
import { SeenPrinters } from './seen-printers';
import { copyCounts } from './views';
import { PassLoop } from './pass-loop';
import { resumeInterrupted, watchAgain, type RecoveryHost } from './recovery';

const SAFETY_PASS_MS = 30_000;
/** How long a printer that answered 409 (not ready at its screen) is left alone unless its state changes. */
const NOT_READY_RETRY_MS = 60_000;

/** How long the print hours per printer (least_used) are reused before they are read again. */
const USAGE_TTL_MS = 60_000;

export interface DispatcherDeps {
  store: Store;
  settings: SettingsService;
  fleet: Fleet;
  log: Logger;
  facts: FactsCache;
  plates: PlateTracker;
  bus: EventBus;
  /** Filament tracking's check of the spools a print would use (filament-gate.ts); none: not checked. */
  filamentGate?: FilamentGate;
  /** Announces an item (queue_update): as stored now, or as the caller just read it. */
  publish(itemId: string, known?: { item: QueueItemRecord; dispatches: DispatchRecord[] }): Promise<unknown>;
  /** NOT_READY_RETRY_MS unless given (tests shorten it). */
  notReadyRetryMs?: number;
}

export class Dispatcher {
  readonly runner: DispatchRunner;
  private readonly passes = new PassLoop(
    () => this.pass(),
    (err, reason) => this.deps.log.error({ err, reason }, 'dispatcher pass failed'),
  );
  private safety: NodeJS.Timeout | null = null;
  /** Wakes the dispatcher when a waiting start is due (start_after, working hours, stagger). */
  private wakeTimer: NodeJS.Timeout | null = null;
  private lastClaimAt = 0;
  private usageCache: { at: number; seconds: ReadonlyMap<string, number> } | null = null;
  private closed = false;
  private records = new Map<string, PrinterRecord>();
  /** The printer records are read again only after a printer was created, changed or deleted (and on the safety pass). */
  private recordsStale = true;
  private stopListening: (() => void) | null = null;
  /** What each printer's last report showed of what decides a start. */
  private readonly seen = new SeenPrinters();
  private readonly notReadyUntil = new Map<string, { raw: string; until: number }>();
  private readonly lastStart = new Map<string, number>();
  private readonly settler: ItemSettler;
  private readonly recovery: RecoveryHost;

  constructor(private readonly deps: DispatcherDeps) {
    this.settler = new ItemSettler(deps, (reason) => this.wake(reason));
    this.runner = new DispatchRunner(deps.store, deps.settings, deps.log, {
      sender: (id) => {
        const driver = deps.fleet.driverOf(id);
        if (!driver.sendAndStart) throw new Error('this printer cannot start queued prints');
        return driver.sendAndStart.bind(driver);
      },
      stateOf: (id) => deps.fleet.stateOf(id),
      isConnected: (id) => deps.fleet.isConnected(id),
      isFree: (id) => this.availability(id, true) === 'free',
      printerType: (id) => this.records.get(id)?.type,
      settle: (itemId, failure) => this.settle(itemId, failure),
      notReady: (id, state) => this.notReadyUntil.set(id, { raw: state?.raw_state ?? '', until: Date.now() + (deps.notReadyRetryMs ?? NOT_READY_RETRY_MS) }),
      printEnded: (id) => deps.plates.printEnded(id, this.records.get(id)?.plate_auto_clear === true),
      cleanUp: (id, name) => {
        // Offline: the file stays (a later upload of the same name replaces it).
        if (!deps.fleet.isConnected(id)) return;
        void deps.fleet.driverOf(id).removeQueuedFile?.(name).catch((err) => deps.log.warn({ err: (err as Error).message, printer_id: id }, 'could not remove a printed queue file'));
      },
      reconnect: (id) => {
        if (!this.closed) void deps.fleet.testConnection(id).catch((err) => deps.log.warn({ err, printer_id: id }, 'reconnect after an unacknowledged start failed'));
      },
    });
    this.recovery = {
      store: deps.store,
      facts: deps.facts,
      log: deps.log,
      runner: this.runner,
      printerFacts: (id) => {
        const record = this.records.get(id);
        return record && this.printerFacts(record);
      },
      isFree: (id) => this.availability(id, true) === 'free',
      settle: (itemId) => this.settle(itemId, null),
    };
  }

  /** Picks up dispatches left open by the last run, then starts listening. */
  async start(): Promise<void> {
    await this.deps.plates.load();
    this.records = new Map((await this.deps.store.printers.list()).map((p) => [p.id, p]));
    await watchAgain(this.recovery, await this.deps.store.queue.openDispatches());
    this.deps.fleet.onReport((id, state) => this.onReport(id, state), { telemetry: (id, state) => this.followsTelemetry(id, state) });
    this.stopListening = this.deps.bus.on('printer_status', (e) => {
      if (e.change === 'state') return;
      this.recordsStale = true;
      this.wake('printer changed');
    }, { telemetry: false });
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
    this.passes.stop();
    if (this.safety) clearInterval(this.safety);
    if (this.wakeTimer) clearTimeout(this.wakeTimer);
    this.stopListening?.();
  }

  async close(): Promise<void> {
    this.halt();
    await this.passes.idle();
    await this.runner.close();
  }

  /** Runs a pass soon (pass-loop.ts: passes never overlap, and the wakes during one or soon after make one more). */
  wake = (reason: string): void => {
    if (!this.closed) this.passes.wake(reason);
  };

  /** Waits until no pass runs (tests). */
  idle = (): Promise<void> => this.passes.idle();

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
    // A new pass only when something changed that can let a copy start here.
    const heating = this.deps.settings.get('queue_max_concurrent_heatups') > 0 && isHeating(state);
    if (this.seen.changed(printerId, this.availability(printerId, false), heating, state)) this.wake('printer changed');
  }

  /**
   * A report of temperatures alone changes what decides a start only while a start follows the printer, a refusal
   * waits to clear (both also end with time) or, under a heat-up limit, while it prints (heating or not).
   */
  private followsTelemetry(printerId: string, state: PrinterState): boolean {
    return this.runner.follows(printerId) || this.notReadyUntil.has(printerId) || (state.state === 'printing' && this.deps.settings.get('queue_max_concurrent_heatups') > 0);
  }

  /** Whether a start may go to the printer now; `forStart` skips the claim check (the runner's own dispatch holds it). */
  private availability(printerId: string, forStart: boolean): Availability {
    const record = this.records.get(printerId);
    if (!record || !record.is_active) return 'offline';
    const state = this.deps.fleet.stateOf(printerId);
    if (!state || !this.deps.fleet.isConnected(printerId)) return 'offline';
    // Only in the states the family's table allows (QUEUE.md: never to a busy printer).
    if (!familyOf(record.type)?.startable.includes(state.raw_state) || !['idle', 'finished', 'failed', 'stopped'].includes(state.state)) return 'busy';
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
    // Nothing waits and nothing is under way: nothing to decide (the records above stay fresh for the reports).
    if (!items.length && !open.length) return this.armWake(Infinity);
    const claimed = new Set(open.map((d) => d.printer_id));
    await resumeInterrupted(this.recovery, open);
    if (!settings.get('queue_dispatch_enabled')) {
      for (const item of items) await this.setReason(item, 'dispatching paused');
      return;
    }
    const now = Date.now();
    const active = [...this.records.values()].filter((p) => p.is_active);
    const gate = farmGate(gateSettingsOf(settings), now, this.heatingPrinters(active, open), this.lastClaimAt);
    let wakeAt = gate.wakeAt ?? Infinity;
    if (gate.closed) {
      for (const item of items) await this.setReason(item, gate.closed);
      return this.armWake(wakeAt);
    }
    let budget = gate.budget;
    const dispatches = await store.queue.dispatchesOf(items.map((i) => i.id));
    const choice = settings.get('queue_printer_choice');
    const printers = orderPrinters(choice, active, this.lastStart, choice === 'least_used' ? await this.usage(now) : new Map());
    // Read once per pass, not once per item and printer: a pass over 1000 items stays cheap.
    const memo = await variantMemo(store, items);
    const facts = new Map(printers.map((p) => [p.id, this.printerFacts(p)]));
    const factsOf = (p: PrinterRecord) => facts.get(p.id) ?? this.printerFacts(p);
    const available = new Map<string, Availability>();
    const availabilityOf = (id: string) => {
      let found = available.get(id);
      if (found !== undefined) return found;
      available.set(id, (found = this.availability(id, false)));
      // Found offline (say in a new link's gap before its first full report): its next report is news even when it
      // shows what the last one before the gap did, so that it starts a pass.
      if (found === 'offline') this.seen.forget(id);
      return found;
    };
    for (const item of items) {
      if (this.closed) return;
      if (item.start_after && Date.parse(item.start_after) > now) {
        wakeAt = Math.min(wakeAt, Date.parse(item.start_after));
        await this.setReason(item, 'start_after not reached');
        continue;
      }
      const done = dispatches.get(item.id) ?? [];
      let remaining = copyCounts(item.copies, done).remaining;
      if (remaining <= 0) continue;
      const { loaded, error } = await loadVariants(store, this.deps.facts, item, memo);
      if (error) {
        await this.setReason(item, error);
        continue;
      }
      const timeReasons = loaded.map((v) => timeGate(item.finish_by, v.facts.print_time_s, now, gate.hours, settings.get('timezone')));
      const usable = loaded.filter((_, i) => timeReasons[i] === null);
      if (!usable.length) {
        await this.setReason(item, timeReasons[0]);
        continue;
      }
      const pinned = pinnedPrinter(choice, done, this.records);
      const mismatches = new Map<LoadedVariant, { printer: PrinterFacts; mismatch: Mismatch }[]>();
      const waiting: { printer: PrinterRecord; why: Availability }[] = [];
      let held = false;
      for (const printer of pinned ? [pinned] : printers) {
        if (remaining <= 0) break;
        const pf = factsOf(printer);
        const fit = firstFit(usable, item, pf, mismatches);
        if (!fit) continue;
        // Filament tracking: a spool too light for this print here is a mismatch like a missing filament.
        const short = await this.deps.filamentGate?.(fit.variant.variant.plate, fit.variant.file, pf, fit.mapping);
        if (short) {
          const noted = mismatches.get(fit.variant) ?? [];
          noted.push({ printer: pf, mismatch: { kind: 'material', reason: short } });
          mismatches.set(fit.variant, noted);
          continue;
        }
        const why = claimed.has(printer.id) ? 'busy' : availabilityOf(printer.id);
        if (why !== 'free') {
          waiting.push({ printer, why });
          continue;
        }
        if (budget <= 0) {
          held = true;
          break;
        }
        if (await this.claim(item, printer, fit.variant, fit.mapping, done)) {
          claimed.add(printer.id);
          // For the copies left over, this printer is busy now (not missing: the reason must not say so).
          waiting.push({ printer, why: 'busy' });
          remaining--;
          budget--;
          if (settings.get('queue_start_stagger_s') > 0) wakeAt = Math.min(wakeAt, this.lastClaimAt + settings.get('queue_start_stagger_s') * 1000);
          // same_as_last: the first copy decides the printer; the others wait for it.
          if (choice === 'same_as_last') break;
        }
      }
      let reason: string | null = null;
      if (remaining > 0) {
        if (held) reason = gate.budgetReason ?? `next start in ${settings.get('queue_start_stagger_s')} s (queue_start_stagger_s)`;
        else if (waiting.length) reason = (pinned ? `same_as_last: waiting for ${pinned.name}, which printed this item's last copy; ` : '') + availabilityReason(waiting);
        else reason = variantsReason(usable, mismatches, active.length);
      }
      await this.setReason(item, reason);
    }
    this.armWake(wakeAt);
  }

  printerFacts(p: PrinterRecord): PrinterFacts {
    const s = this.deps.fleet.stateOf(p.id);
    return { id: p.id, name: p.name, type: p.type, model: s?.model ?? p.model, nozzle_diameter: s?.nozzle_diameter ?? null, materials: s?.materials ?? null };
  }

  /** When each printer last got a queued start (first_free's order). */
  lastStarts = (): ReadonlyMap<string, number> => this.lastStart;

  /** Printers heating now, or about to: a start sent and not yet printing. */
  private heatingPrinters(active: PrinterRecord[], open: DispatchRecord[]): string[] {
    const starting = new Set(open.filter((d) => d.state !== 'printing').map((d) => d.printer_id));
    return active.filter((p) => starting.has(p.id) || isHeating(this.deps.fleet.stateOf(p.id))).map((p) => p.name);
  }

  /** Print seconds per printer over the last 30 days (least_used), read at most once a minute. */
  async usage(now: number): Promise<ReadonlyMap<string, number>> {
    if (!this.usageCache || now - this.usageCache.at > USAGE_TTL_MS) {
      const since = new Date(now - USAGE_WINDOW_DAYS * 86_400_000).toISOString();
      this.usageCache = { at: now, seconds: await this.deps.store.jobs.printSecondsSince(since) };
    }
    return this.usageCache.seconds;
  }

  /** One timer for the earliest instant a waiting start may go (start_after, hours opening, stagger over); the safety pass would find it too, up to 30 s late. */
  private armWake(at: number): void {
    if (this.wakeTimer) clearTimeout(this.wakeTimer);
    this.wakeTimer = null;
    if (!Number.isFinite(at) || this.closed) return;
    this.wakeTimer = setTimeout(() => this.wake('a waiting start is due'), Math.min(Math.max(0, at - Date.now()) + 10, SAFETY_PASS_MS));
    this.wakeTimer.unref();
  }

  private async claim(item: QueueItemRecord, printer: PrinterRecord, variant: LoadedVariant, mapping: number[], previous: DispatchRecord[]): Promise<boolean> {
    const dispatch = newDispatch(item, printer, variant.file.filename, variant.variant, previous.length + 1);
    // Dispatching paused (or the service stopping) while the pass awaited since its check: nothing is claimed.
    if (!this.deps.settings.get('queue_dispatch_enabled') || this.closed || !(await this.deps.store.queue.claim(dispatch))) return false;
    previous.push(dispatch);
    this.lastStart.set(printer.id, Date.now());
    this.lastClaimAt = Date.now();
    this.deps.log.info({ item_id: item.id, printer_id: printer.id, dispatch_id: dispatch.id, attempt: dispatch.attempt }, 'queued copy claimed a printer');
    void this.settle(item.id, null);
    this.runner.launch(dispatch, queuedStart(item, dispatch, variant.file, mapping));
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
    return this.settler.settle(itemId, failure);
  }
}
