/**
 * Which free printer a copy goes to (`queue_printer_choice`):
 *  - first_free: the printer started least recently first, so that work spreads over the farm;
 *  - least_used: fewest print hours in the last 30 days first (to spread wear), then as first_free;
 *  - same_as_last: an item's copies stay on the printer of its last copy under way or completed (its first
 *    copy goes to the first free printer, one copy per pass; a removed printer frees the item again).
 */
import type { PrinterRecord } from '../db/repositories/printers';
import { OPEN_DISPATCH_STATES, type DispatchRecord } from '../db/repositories/queue';

export type PrinterChoice = 'first_free' | 'least_used' | 'same_as_last';

export const USAGE_WINDOW_DAYS = 30;

export function orderPrinters(choice: string, printers: PrinterRecord[], lastStart: ReadonlyMap<string, number>, usage: ReadonlyMap<string, number>): PrinterRecord[] {
  const started = (p: PrinterRecord) => lastStart.get(p.id) ?? 0;
  if (choice === 'least_used') return [...printers].sort((a, b) => (usage.get(a.id) ?? 0) - (usage.get(b.id) ?? 0) || started(a) - started(b) || a.id.localeCompare(b.id));
  return [...printers].sort((a, b) => started(a) - started(b) || a.id.localeCompare(b.id));
}

/** same_as_last: the printer an item's copies must go to (its last copy that printed), if it is still in the farm. */
export function pinnedPrinter(choice: string, dispatches: readonly DispatchRecord[], known: ReadonlyMap<string, PrinterRecord>): PrinterRecord | null {
  if (choice !== 'same_as_last') return null;
  for (let i = dispatches.length - 1; i >= 0; i--) {
    const d = dispatches[i];
    // A copy under way counts already: the next one must not go elsewhere meanwhile.
    if ((d.state === 'completed' || OPEN_DISPATCH_STATES.includes(d.state)) && known.has(d.printer_id)) return known.get(d.printer_id)!;
  }
  return null;
}
