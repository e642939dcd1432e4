/**
 * Work per printer that failed and waits to be done again. The printer's next report retries it (its owner
 * asks `has` before a report that moved only temperatures is spared it), but a printer whose reports change
 * nothing sends its listeners no report at all: a job end that failed to be written would then wait for the
 * printer's next print. So a timer retries too, after a wait that doubles from `firstMs` up to `maxMs`, at
 * most `attempts` times; after that only a report does (a printer removed meanwhile is not retried forever).
 */
export interface RetryLaterOptions {
  firstMs?: number;
  maxMs?: number;
  attempts?: number;
}

interface Waiting {
  timer: NodeJS.Timeout | null;
  failures: number;
}

export class RetryLater {
  private readonly waiting = new Map<string, Waiting>();
  private readonly firstMs: number;
  private readonly maxMs: number;
  private readonly attempts: number;
  private closed = false;

  constructor(options: RetryLaterOptions = {}) {
    this.firstMs = options.firstMs ?? 5_000;
    this.maxMs = options.maxMs ?? 5 * 60_000;
    this.attempts = options.attempts ?? 10;
  }

  /** Whether `key`'s work failed and was not done since. */
  has(key: string): boolean {
    return this.waiting.has(key);
  }

  /** `key`'s work failed: `retry` runs after the wait, unless the work is done (or failed again) first. */
  failed(key: string, retry: () => void): void {
    const entry = this.waiting.get(key) ?? { timer: null, failures: 0 };
    if (entry.timer) clearTimeout(entry.timer);
    entry.timer = null;
    entry.failures++;
    this.waiting.set(key, entry);
    if (this.closed || entry.failures > this.attempts) return;
    const timer = setTimeout(() => {
      if (entry.timer !== timer) return;
      entry.timer = null;
      retry();
    }, Math.min(this.maxMs, this.firstMs * 2 ** (entry.failures - 1)));
    // A retry never keeps the process alive on its own; close() clears it on shutdown.
    timer.unref();
    entry.timer = timer;
  }

  /** `key`'s work was done (or is not wanted any more): nothing waits. */
  done(key: string): void {
    const entry = this.waiting.get(key);
    if (!entry) return;
    if (entry.timer) clearTimeout(entry.timer);
    this.waiting.delete(key);
  }

  close(): void {
    this.closed = true;
    for (const entry of this.waiting.values()) if (entry.timer) clearTimeout(entry.timer);
    this.waiting.clear();
  }
}
