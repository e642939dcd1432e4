/**
 * When will it be done? An estimate of when each queued copy starts and ends
 * and on which printer, made by playing the dispatcher's own rules forward in
 * time: the same order of items, the same compatibility (materials as loaded
 * now), the printer choice, working hours, finish_by, the heat-up limit and
 * the stagger. A printer is free when its print ends (its remaining time) and
 * its plate is assumed cleared then. Print times are the slicer's estimates;
 * a file without one counts as DEFAULT_PRINT_S. Pure: inputs in, plan out.
 */
import type { PrinterRecord } from '../db/repositories/printers';
import type { QueueItemRecord } from '../db/repositories/queue';
import { checkPrinter, type PrinterFacts } from './compatibility';
import { orderPrinters } from './printer-choice';
import { timeGate, type GateSettings } from './start-gates';
import type { LoadedVariant } from './variants';
import { hoursAt, parseHours } from './working-hours';

export const DEFAULT_PRINT_S = 3600;
/** How long a start counts as heating for the heat-up limit (beds take a few minutes). */
export const HEAT_ESTIMATE_S = 180;
/** Entries planned at most, and how far ahead (a longer plan says nothing useful). */
export const MAX_ENTRIES = 2000;
const HORIZON_MS = 60 * 86_400_000;

export interface PlanPrinter {
  record: PrinterRecord;
  facts: PrinterFacts;
  /** When it can take a print (now, or when its print ends). */
  free_at: number;
  last_start: number;
  usage_s: number;
}

export interface PlanItem {
  item: QueueItemRecord;
  remaining: number;
  variants: LoadedVariant[];
  /** same_as_last: the printer its copies stay on. */
  pinned: string | null;
}

export interface PlanEntry {
  item_id: string;
  item_name: string;
  /** 1-based among the item's copies not started yet. */
  copy: number;
  printer_id: string;
  printer_name: string;
  file_id: string;
  plate: number;
  start: number;
  end: number;
  /** False when the file states no print time (DEFAULT_PRINT_S was used). */
  print_time_known: boolean;
}

export interface Plan {
  entries: PlanEntry[];
  /** Items with copies the plan could not place, and how many. */
  unplaced: { item_id: string; copies: number }[];
}

type Fit = { variant: LoadedVariant } | null;
type Pending = PlanItem & { copy: number };

export function planSchedule(now: number, printers: PlanPrinter[], items: PlanItem[], s: GateSettings & { queue_printer_choice: string }): Plan {
  const hours = parseHours(s.queue_hours);
  const fits = new Map<string, Fit>();
  // Compatibility per item and printer is decided once (materials as loaded now).
  const fitOf = (p: Pending, printer: PlanPrinter): Fit => {
    const key = `${p.item.id}\u0000${printer.record.id}`;
    if (!fits.has(key)) fits.set(key, p.variants.map((v) => (checkPrinter(v.facts, p.item, printer.facts).ok ? { variant: v } : null)).find(Boolean) ?? null);
    return fits.get(key)!;
  };
  const pending: Pending[] = items.filter((p) => p.remaining > 0 && p.variants.length).map((p) => ({ ...p, copy: 0 }));
  const byId = new Map(printers.map((p) => [p.record.id, p]));
  const entries: PlanEntry[] = [];
  let lastStart = -Infinity;
  let t = now;
  for (let guard = 0; pending.length && entries.length < MAX_ENTRIES && t < now + HORIZON_MS && guard < 100_000; guard++) {
    const open = hoursAt(hours, t, s.timezone);
    if (!open.open) {
      if (open.opens_at === null) break;
      t = open.opens_at;
      continue;
    }
    const heating = s.queue_max_concurrent_heatups > 0 ? entries.filter((e) => e.start <= t && t < e.start + HEAT_ESTIMATE_S * 1000).length : 0;
    let budget = s.queue_max_concurrent_heatups > 0 ? s.queue_max_concurrent_heatups - heating : Infinity;
    if (s.queue_start_stagger_s > 0) budget = t >= lastStart + s.queue_start_stagger_s * 1000 ? Math.min(budget, 1) : 0;
    const ordered = orderPrinters(
      s.queue_printer_choice,
      printers.map((p) => p.record),
      new Map(printers.map((p) => [p.record.id, p.last_start])),
      new Map(printers.map((p) => [p.record.id, p.usage_s])),
    ).map((r) => byId.get(r.id)!);
    for (const p of pending) {
      if (budget <= 0) break;
      if (p.item.start_after && Date.parse(p.item.start_after) > t) continue;
      const pinned = p.pinned ? byId.get(p.pinned) : undefined;
      for (const printer of pinned ? [pinned] : ordered) {
        if (p.remaining <= 0 || budget <= 0) break;
        if (printer.free_at > t) continue;
        const fit = fitOf(p, printer);
        if (!fit) continue;
        const printS = fit.variant.facts.print_time_s;
        if (timeGate(p.item.finish_by, printS, t, open, s.timezone)) continue;
        const end = t + (printS ?? DEFAULT_PRINT_S) * 1000;
        entries.push({
          item_id: p.item.id,
          item_name: p.item.name,
          copy: ++p.copy,
          printer_id: printer.record.id,
          printer_name: printer.record.name,
          file_id: fit.variant.variant.file_id,
          plate: fit.variant.variant.plate,
          start: t,
          end,
          print_time_known: printS !== null,
        });
        printer.free_at = end;
        printer.last_start = t;
        printer.usage_s += printS ?? DEFAULT_PRINT_S;
        lastStart = t;
        p.remaining--;
        budget--;
        if (s.queue_printer_choice === 'same_as_last') {
          p.pinned = printer.record.id;
          break;
        }
      }
    }
    for (let i = pending.length - 1; i >= 0; i--) if (pending[i].remaining <= 0) pending.splice(i, 1);
    // The next moment something can change: a printer frees, a start_after comes, the stagger or a heat-up ends, the hours close.
    const next = [
      ...printers.map((p) => p.free_at),
      ...pending.map((p) => (p.item.start_after ? Date.parse(p.item.start_after) : Infinity)),
      lastStart + s.queue_start_stagger_s * 1000,
      ...entries.slice(-Math.max(1, s.queue_max_concurrent_heatups)).map((e) => e.start + HEAT_ESTIMATE_S * 1000),
      open.closes_at ?? Infinity,
    ].filter((x) => x > t && Number.isFinite(x));
    if (!next.length) break;
    t = Math.min(...next);
  }
  return {
    entries: entries.sort((a, b) => a.start - b.start || a.printer_id.localeCompare(b.printer_id)),
    unplaced: pending.filter((p) => p.remaining > 0).map((p) => ({ item_id: p.item.id, copies: p.remaining })),
  };
}
