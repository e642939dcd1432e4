/**
 * Which printer states the printer node passes on. A printing farm reports
 * several times a second (temperatures by 0.5 °C, every whole percent); a
 * debug node wired to "all printers" should show changes a person cares
 * about, not every report:
 *
 * - `changes` (the editor's default): status, connection, job and error
 *   changes at once; progress at most every `throttle` seconds per printer;
 *   temperature-only changes not at all (they stay in each message's payload).
 * - `every`: every change the service reports (flows from before the option).
 */
import type { PrinterSnapshot } from '../service/client';

export type UpdateMode = 'changes' | 'every';

interface Sent {
  key: string;
  progress: number;
  at: number;
}

/** What makes a state worth a message at once. */
function keyOf(p: PrinterSnapshot): string {
  // A spool loaded, taken out or lighter after a print (its grams) is a change too; the AMS percentage is not.
  const spools = (p.materials ?? []).map((m) => [m.slot, m.type, m.spool_id, m.remaining_weight_g === null ? null : Math.round(m.remaining_weight_g)]);
  return JSON.stringify([p.status, p.connection_status, p.is_active, p.current_job?.id ?? null, p.current_job?.name ?? null, p.error?.code ?? null, p.error?.message ?? null, spools]);
}

export class PrinterUpdateFilter {
  private readonly sent = new Map<string, Sent>();

  constructor(
    private readonly mode: UpdateMode,
    private readonly throttleMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** True when `p` should go out (and remembers it as sent). */
  pass(p: PrinterSnapshot): boolean {
    if (this.mode === 'every') return true;
    const key = keyOf(p);
    const progress = Math.floor(p.progress);
    const last = this.sent.get(p.id);
    const at = this.now();
    const changed = !last || last.key !== key || (last.progress !== progress && at - last.at >= this.throttleMs);
    if (changed) this.sent.set(p.id, { key, progress, at });
    return changed;
  }

  /** Forgets a printer (removed), so its next state goes out. */
  forget(id: string): void {
    this.sent.delete(id);
  }
}

/** The node's settings as a filter; flows saved before the option (undefined) keep sending every change. */
export function updateFilter(mode: unknown, throttleSeconds: unknown): PrinterUpdateFilter {
  const seconds = throttleSeconds === '' || throttleSeconds === undefined || throttleSeconds === null ? 10 : Math.max(0, Number(throttleSeconds) || 0);
  return new PrinterUpdateFilter(mode === 'changes' ? 'changes' : 'every', seconds * 1000);
}
