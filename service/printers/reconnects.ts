/**
 * When a driver (Bambu Lab, Klipper) tries its printer again: exponential backoff with full
 * jitter after a lost link or a failed attempt, and only slowly (about once
 * per `authRetryMs`) after a refused access code or a printer fault, which do
 * not heal by retrying. One timer at a time; stop() ends it for good.
 */
import { backoffDelay } from './driver';
import type { Guard } from './guard';

export interface ReconnectTimings {
  backoffBaseMs: number;
  backoffMaxMs: number;
  authRetryMs: number;
  random: () => number;
}

/** What a driver's options may say about its retries (tests make them short and pin the jitter). */
export interface ReconnectOptions {
  /** First backoff step (ms); 1000 in production, smaller in tests. */
  backoffBaseMs?: number;
  /** Longest backoff step (ms), 60 000 by default. */
  backoffMaxMs?: number;
  /** About how long to wait before trying a refused code or a faulty peer again (ms, jittered to 50-100 %); default backoffMaxMs. */
  authRetryMs?: number;
  /** Random source for the jitter (tests pin it). */
  random?: () => number;
}

/** The timings of `options`, defaults filled in. */
export function reconnectTimings(options: ReconnectOptions): ReconnectTimings {
  const backoffMaxMs = options.backoffMaxMs ?? 60_000;
  return { backoffBaseMs: options.backoffBaseMs ?? 1000, backoffMaxMs, authRetryMs: options.authRetryMs ?? backoffMaxMs, random: options.random ?? Math.random };
}

export class Reconnects {
  private attempt = 0;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;

  constructor(
    private readonly t: ReconnectTimings,
    private readonly guard: Guard,
    private readonly retry: () => void,
  ) {}

  /** After a lost link or a failed attempt: the next step of the backoff. */
  backoff(): void {
    this.schedule(backoffDelay(this.attempt++, this.t.random, this.t.backoffBaseMs, this.t.backoffMaxMs));
  }

  /** A wrong code stays wrong until someone changes it: retry slowly, never in a tight loop. */
  slowly(): void {
    this.schedule(backoffDelay(30, this.t.random, this.t.backoffBaseMs, Math.max(this.t.backoffBaseMs, this.t.authRetryMs)));
  }

  /** A message proves the link: the next failure starts the backoff from the bottom again. */
  reset(): void {
    this.attempt = 0;
  }

  /** Cancels a pending retry (an explicit connect() does not wait out the backoff). */
  clear(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  /** The driver closed: no retry any more. */
  stop(): void {
    this.stopped = true;
    this.clear();
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.clear();
    this.timer = setTimeout(
      this.guard(() => {
        this.timer = null;
        this.retry();
      }),
      delayMs,
    );
  }
}
