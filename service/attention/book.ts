/**
 * The farm's attention book: for every printer, the causes its driver reports now and since when. It hears
 * every report (Fleet.onReport) but only looks further when the driver handed a different list (drivers keep
 * the same array while hms/print_error or the PrusaLink state stay the same), and announces a
 * `printer_attention` event once per cause that appears or clears, never per report.
 */
import type { EventBus } from '../events';
import { severityRank, textIn, worstFirst, type AttentionCause, type AttentionSeverity, type AttentionSource } from '../printers/attention';
import { nowIso } from '../util/time';

/** One cause as the API shows it. */
export interface AttentionEntry {
  code: string;
  severity: AttentionSeverity;
  message: string;
  action: string;
  since: string;
  source: AttentionSource;
}

export interface AttentionChange {
  printer_id: string;
  /** Everything the printer needs now, worst first. */
  attention: AttentionEntry[];
  appeared: AttentionEntry[];
  cleared: AttentionEntry[];
}

interface Held {
  cause: AttentionCause;
  since: string;
}

interface Page {
  /** The list last handed by the driver (compared by reference on every report). */
  causes: readonly AttentionCause[];
  held: Map<string, Held>;
}

const NONE: readonly AttentionCause[] = Object.freeze([]);
const keyOf = (c: AttentionCause) => `${c.source}:${c.code}`;

export class AttentionBook {
  private readonly pages = new Map<string, Page>();

  constructor(
    private readonly bus: EventBus,
    /** The language of messages (the `language` setting). */
    private readonly language: () => string,
    private readonly now: () => string = nowIso,
  ) {}

  /** A printer's report: cheap when its causes are the list already known. */
  report(printerId: string, causes: readonly AttentionCause[] | undefined): void {
    const list = causes ?? NONE;
    const page = this.pages.get(printerId);
    if (page && page.causes === list) return;
    if (!page && list.length === 0) {
      this.pages.set(printerId, { causes: list, held: new Map() });
      return;
    }
    this.apply(printerId, page ?? { causes: NONE, held: new Map() }, list);
  }

  /** A removed printer: its causes clear. */
  forget(printerId: string): void {
    const page = this.pages.get(printerId);
    if (!page) return;
    if (page.held.size) this.apply(printerId, page, NONE);
    this.pages.delete(printerId);
  }

  /** The printer's causes now, worst first. */
  of(printerId: string): AttentionEntry[] {
    const page = this.pages.get(printerId);
    return page ? this.entries(page.held) : [];
  }

  /** A cause a printer reports now, with its words in every language the vendor has. */
  causeOf(printerId: string, source: string, code: string): AttentionCause | undefined {
    return this.pages.get(printerId)?.held.get(`${source}:${code}`)?.cause;
  }

  /** Every printer with something to say. */
  all(): Array<{ printer_id: string; entries: AttentionEntry[] }> {
    const out: Array<{ printer_id: string; entries: AttentionEntry[] }> = [];
    for (const [printerId, page] of this.pages) if (page.held.size) out.push({ printer_id: printerId, entries: this.entries(page.held) });
    return out;
  }

  private apply(printerId: string, page: Page, list: readonly AttentionCause[]): void {
    const at = this.now();
    const next = new Map<string, Held>();
    const appeared: Held[] = [];
    for (const cause of list) {
      const key = keyOf(cause);
      if (next.has(key)) continue;
      const old = page.held.get(key);
      const held = { cause, since: old?.since ?? at };
      next.set(key, held);
      if (!old) appeared.push(held);
    }
    const cleared = [...page.held].filter(([key]) => !next.has(key)).map(([, held]) => held);
    this.pages.set(printerId, { causes: list, held: next });
    if (!appeared.length && !cleared.length) return;
    this.bus.emit('printer_attention', {
      printer_id: printerId,
      attention: this.entries(next),
      appeared: this.entries(new Map(appeared.map((h) => [keyOf(h.cause), h]))),
      cleared: this.entries(new Map(cleared.map((h) => [keyOf(h.cause), h]))),
    });
  }

  private entries(held: Map<string, Held>): AttentionEntry[] {
    const language = this.language();
    return worstFirst(
      [...held.values()].map(({ cause, since }) => {
        const text = textIn(cause, language);
        return { code: cause.code, severity: cause.severity, message: text.message, action: text.action, since, source: cause.source };
      }),
    );
  }
}

/** Farm-wide order: worst first, then the oldest. */
export function farmOrder<T extends AttentionEntry>(list: T[]): T[] {
  return [...list].sort((a, b) => severityRank(a.severity) - severityRank(b.severity) || a.since.localeCompare(b.since));
}
