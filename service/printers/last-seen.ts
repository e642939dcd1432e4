/**
 * last_seen of reporting printers, written together. A printer that keeps
 * reporting is marked at most once per LAST_SEEN_WRITE_MS (the value is kept
 * in memory in between); the marks of LAST_SEEN_FLUSH_MS go to the database
 * in one statement, so 1000 printers cost one write every few seconds
 * instead of 33 a second on the report path.
 */
import type { Logger } from 'pino';
import type { Store } from '../db';
import { nowIso } from '../util/time';

/** How often last_seen is written while a printer keeps reporting. */
export const LAST_SEEN_WRITE_MS = 30_000;
/** How long marks gather before they are written. */
const LAST_SEEN_FLUSH_MS = 5000;

export class LastSeenWriter {
  private readonly due = new Set<string>();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly store: Store,
    private readonly log: Logger,
  ) {}

  mark(printerId: string): void {
    this.due.add(printerId);
    this.timer ??= setTimeout(() => void this.flush(), LAST_SEEN_FLUSH_MS);
  }

  /** Writes what is due now (also at close: nothing marked is lost). */
  async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const ids = [...this.due];
    this.due.clear();
    if (ids.length) await this.store.printers.touchLastSeen(ids, nowIso()).catch((err) => this.log.error({ err }, 'could not store last_seen'));
  }
}
