/**
 * GET /queue/schedule: gathers what the plan needs (the queued items and their
 * variants, each printer's facts and the moment it is free, the dispatcher's
 * printer order) and shapes the answer. The estimate is made on each request,
 * so it always follows the latest change.
 */
import type { Store } from '../db';
import type { PrinterRecord } from '../db/repositories/printers';
import type { DispatchRecord, QueueItemRecord } from '../db/repositories/queue';
import type { Fleet } from '../printers/fleet';
import type { QueueScheduleView } from '../schemas/queue';
import type { SettingsService } from '../settings';
import type { PrinterFacts } from './compatibility';
import type { FactsCache } from './facts-cache';
import { pinnedPrinter } from './printer-choice';
import { DEFAULT_PRINT_S, planSchedule, type PlanItem, type PlanPrinter } from './schedule';
import { gateSettingsOf } from './start-gates';
import { loadMemoized, loadVariants, variantMemo, variantOf, type VariantMemo } from './variants';
import { copyCounts } from './views';

/** What the schedule asks of the dispatcher: its printer order and its view of a printer. */
export interface ScheduleSource {
  lastStarts(): ReadonlyMap<string, number>;
  usage(now: number): Promise<ReadonlyMap<string, number>>;
  printerFacts(p: PrinterRecord): PrinterFacts;
}

const iso = (t: number) => new Date(t).toISOString();

export class QueueSchedule {
  constructor(
    private readonly store: Store,
    private readonly fleet: Fleet,
    private readonly settings: SettingsService,
    private readonly facts: FactsCache,
    private readonly source: ScheduleSource,
  ) {}

  async build(): Promise<QueueScheduleView> {
    const now = Date.now();
    const items = await this.store.queue.itemsIn(['queued']);
    const dispatches = await this.store.queue.dispatchesOf(items.map((i) => i.id));
    const records = (await this.store.printers.list()).filter((p) => p.is_active);
    const known = new Map(records.map((p) => [p.id, p]));
    const choice = this.settings.get('queue_printer_choice');
    const open = await this.store.queue.openDispatches();
    // The items of copies sent but not reporting yet, and every file the plan reads, each in one statement.
    const sent = await this.store.queue.getItems(open.map((d) => d.item_id));
    const memo = await variantMemo(this.store, items, open.flatMap((d) => (sent.has(d.item_id) ? [variantOf(sent.get(d.item_id)!, d)] : [])));
    const printers = await this.printers(now, records, open, sent, memo);
    const planItems: PlanItem[] = [];
    for (const item of items) {
      const done = dispatches.get(item.id) ?? [];
      const { loaded } = await loadVariants(this.store, this.facts, item, memo);
      planItems.push({ item, remaining: copyCounts(item.copies, done).remaining, variants: loaded, pinned: pinnedPrinter(choice, done, known)?.id ?? null });
    }
    const plan = planSchedule(now, printers, planItems, { ...gateSettingsOf(this.settings), queue_printer_choice: choice });
    const byItem = new Map(items.map((i) => [i.id, i]));
    return {
      generated_at: iso(now),
      entries: plan.entries.map((e) => ({ ...e, start: iso(e.start), end: iso(e.end) })),
      printers: printers.map((p) => ({ id: p.record.id, name: p.record.name, free_at: iso(p.free_at) })),
      unplaced: plan.unplaced.map((u) => ({
        item_id: u.item_id,
        item_name: byItem.get(u.item_id)?.name ?? '',
        copies: u.copies,
        reason: byItem.get(u.item_id)?.waiting_reason ?? 'no compatible printer within the schedule',
      })),
    };
  }

  /** Connected printers with the moment each is free: now, or when its print (or the copy it was just sent) ends. */
  private async printers(now: number, records: PrinterRecord[], dispatches: DispatchRecord[], sent: ReadonlyMap<string, QueueItemRecord>, memo: VariantMemo): Promise<PlanPrinter[]> {
    const connected = new Set(this.fleet.connectedPrinters());
    const open = new Map(dispatches.map((d) => [d.printer_id, d]));
    const usage = this.settings.get('queue_printer_choice') === 'least_used' ? await this.source.usage(now) : new Map<string, number>();
    const lastStarts = this.source.lastStarts();
    const out: PlanPrinter[] = [];
    for (const record of records) {
      if (!connected.has(record.id)) continue;
      const state = this.fleet.stateOf(record.id);
      let free = now;
      const busy = state && ['preparing', 'printing', 'paused'].includes(state.state);
      if (busy && state.job?.remaining_seconds) free = now + state.job.remaining_seconds * 1000;
      else if (open.has(record.id)) {
        // Sent but not reporting its job yet: the copy's own print time.
        const d = open.get(record.id)!;
        const item = sent.get(d.item_id);
        const loaded = item ? await loadMemoized(this.store, this.facts, variantOf(item, d), memo) : null;
        free = now + ((loaded && !('error' in loaded) ? loaded.facts.print_time_s : null) ?? DEFAULT_PRINT_S) * 1000;
      } else if (busy) free = now + DEFAULT_PRINT_S * 1000;
      out.push({ record, facts: this.source.printerFacts(record), free_at: free, last_start: lastStarts.get(record.id) ?? 0, usage_s: usage.get(record.id) ?? 0 });
    }
    return out;
  }
}
