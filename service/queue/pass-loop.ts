/**
 * Runs the dispatcher's pass when woken: passes never overlap, and the wakes that come during a pass or in
 * the gap after it make one more pass at the gap's end. At a farm's startup every printer that connects and
 * every spool its AMS shows wakes the dispatcher, and a pass looks at every printer: without the gap, 1000
 * printers made some 3500 passes (10 s of CPU). The gap is four times the last pass's duration (25 ms at
 * least, 1 s at most), so passes take at most a fifth of the process whatever the farm's size; a wake after a
 * quiet spell still passes at once.
 */
const GAP_MIN_MS = 25;
const GAP_MAX_MS = 1000;
const GAP_PER_PASS = 4;

export class PassLoop {
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = false;
  /** Ends the gap after a pass early (stop). */
  private endGap: (() => void) | null = null;

  constructor(
    private readonly pass: () => Promise<void>,
    private readonly failed: (err: unknown, reason: string) => void,
  ) {}

  wake(reason: string): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = (async () => {
      do {
        this.again = false;
        const started = performance.now();
        try {
          await this.pass();
        } catch (err) {
          this.failed(err, reason);
        }
        await this.gap(Math.min(GAP_MAX_MS, Math.max(GAP_MIN_MS, GAP_PER_PASS * (performance.now() - started))));
      } while (this.again && !this.stopped);
    })().finally(() => (this.running = null));
  }

  /** No pass starts from now on; the gap under way ends at once. */
  stop(): void {
    this.stopped = true;
    this.endGap?.();
  }

  /** Resolves when no pass runs or waits (a wake during the gap makes one more). */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  private gap(ms: number): Promise<void> {
    if (this.stopped) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.endGap?.(), ms);
      this.endGap = () => {
        clearTimeout(timer);
        this.endGap = null;
        resolve();
      };
    });
  }
}
