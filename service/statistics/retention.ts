/**
 * Keeps the printer status history from growing without end: once at start
 * and then daily, rows older than `status_history_retention_days` go (each
 * printer keeps the row in effect at the cutoff, so uptime after it stays
 * exact). Statistics of ranges older than the retention lose their uptime.
 */
import type { Logger } from 'pino';
import type { Store } from '../db';
import type { SettingsService } from '../settings';

const DAY_MS = 86_400_000;

export class HistoryRetention {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<number> = Promise.resolve(0);

  constructor(
    private readonly store: Store,
    private readonly settings: SettingsService,
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  start(periodMs = DAY_MS): void {
    this.schedule();
    this.timer = setInterval(() => this.schedule(), periodMs);
    this.timer.unref();
  }

  /** Prunes now; resolves with the number of rows removed. */
  prune(): Promise<number> {
    const days = this.settings.get('status_history_retention_days');
    const cutoff = new Date(this.now() - days * DAY_MS).toISOString();
    return this.store.statusHistory.prune(cutoff).then((removed) => {
      if (removed > 0) this.log.info({ removed, before: cutoff }, 'pruned printer status history');
      return removed;
    });
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running.catch(() => 0);
  }

  private schedule(): void {
    // One prune at a time; a failure is logged and tried again at the next turn.
    this.running = this.running.catch(() => 0).then(() => this.prune()).catch((err) => {
      this.log.error({ err }, 'could not prune printer status history');
      return 0;
    });
  }
}
