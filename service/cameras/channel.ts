/**
 * One printer's camera in the hub: at most one upstream connection however
 * many viewers and snapshots want it, the latest frame, and the rules of its
 * life: opened on demand, closed `idle` after the last viewer or snapshot,
 * restarted (with backoff, while viewers wait) after an error or a stall.
 */
import { CameraError, type CameraFrame, type CameraSource } from './source';
import type { MjpegViewer } from './viewer';

export interface ChannelPlan {
  kind: CameraSource['kind'];
  /** Changes whenever anything the upstream connection depends on changes. */
  key: string;
  create(): CameraSource;
}

export interface ChannelTimings {
  /** How long to wait for a frame before the upstream counts as stalled (ms). */
  timeoutMs(): number;
  /** How long the upstream stays open without a viewer or snapshot (ms). */
  idleMs(): number;
  /** Most frames per second passed to viewers. */
  maxFps(): number;
}

export interface ChannelEvents {
  /** The camera gave a frame after a failure (or its first), or failed. */
  availability(available: boolean, error: CameraError | null): void;
  /** An upstream connection was opened (counted for diagnostics). */
  opened(): void;
}

interface Waiter {
  resolve(frame: CameraFrame): void;
  reject(error: CameraError): void;
  timer: NodeJS.Timeout;
}

const RETRY_BASE_MS = 1000;
const RETRY_MAX_MS = 30_000;

export class CameraChannel {
  latest: CameraFrame | null = null;
  /** The last failure, until the next frame. */
  failure: CameraError | null = null;
  readonly viewers = new Set<MjpegViewer>();
  private source: CameraSource | null = null;
  private waiters: Waiter[] = [];
  private idleTimer: NodeJS.Timeout | null = null;
  private watchdog: NodeJS.Timeout | null = null;
  private retryTimer: NodeJS.Timeout | null = null;
  private retries = 0;
  private lastDelivered = 0;
  private closed = false;
  /** Whether availability was last announced as true (null: never announced). */
  private announced: boolean | null = null;

  constructor(
    readonly plan: ChannelPlan,
    private readonly timings: ChannelTimings,
    private readonly events: ChannelEvents,
  ) {}

  /** True while an upstream connection is open. */
  get upstreamOpen(): boolean {
    return this.source !== null;
  }

  /** A frame at most `maxAgeMs` old: the cached one, or the next one (upstream opened on demand, waiting at most timeoutMs). */
  frame(maxAgeMs: number): Promise<CameraFrame> {
    if (this.closed) return Promise.reject(new CameraError('OFFLINE', 'the camera was closed'));
    if (this.latest && Date.now() - this.latest.at <= maxAgeMs) {
      this.touch();
      return Promise.resolve(this.latest);
    }
    return new Promise<CameraFrame>((resolve, reject) => {
      const timeoutMs = this.timings.timeoutMs();
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        reject(new CameraError('TIMEOUT', `no frame within ${Math.round(timeoutMs / 1000)} s`));
        this.touch();
      }, timeoutMs);
      const waiter: Waiter = { resolve, reject, timer };
      this.waiters.push(waiter);
      this.clearIdle();
      this.ensureUpstream(true);
    });
  }

  addViewer(viewer: MjpegViewer): void {
    this.viewers.add(viewer);
    this.clearIdle();
    this.ensureUpstream(false);
  }

  removeViewer(viewer: MjpegViewer): void {
    this.viewers.delete(viewer);
    this.touch();
  }

  /** Ends every viewer and waiter and the upstream connection. */
  async close(): Promise<void> {
    this.closed = true;
    for (const timer of [this.idleTimer, this.watchdog, this.retryTimer]) if (timer) clearTimeout(timer);
    this.rejectWaiters(new CameraError('OFFLINE', 'the camera was closed'));
    for (const viewer of [...this.viewers]) viewer.finish();
    await this.closeUpstream();
  }

  /** Starts the idle countdown when nobody uses the channel any more. */
  private touch(): void {
    if (this.closed || this.viewers.size > 0 || this.waiters.length > 0) return;
    this.clearIdle();
    this.idleTimer = setTimeout(() => {
      this.idleTimer = null;
      if (this.viewers.size > 0 || this.waiters.length > 0) return;
      // Nobody looks: the connection goes, and so does the picture (it would be stale by the next look).
      this.latest = null;
      void this.closeUpstream();
    }, this.timings.idleMs());
    this.idleTimer.unref?.();
  }

  private clearIdle(): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = null;
  }

  /** Opens the upstream unless it is open; `now` skips a pending retry (a snapshot does not wait for the backoff). */
  private ensureUpstream(now: boolean): void {
    if (this.closed || this.source) return;
    if (this.retryTimer && !now) return;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    let source: CameraSource;
    try {
      source = this.plan.create();
    } catch (err) {
      // No source can be made (an RTSPS camera without ffmpeg): the waiters learn why at once.
      const error = err instanceof CameraError ? err : new CameraError('PROTOCOL', (err as Error).message);
      this.failure = error;
      this.rejectWaiters(error);
      this.announce(false, error);
      return this.touch();
    }
    this.source = source;
    this.events.opened();
    source.onFrame((frame) => this.onFrame(source, frame));
    source.onError((error) => this.onError(source, error));
    this.armWatchdog();
    try {
      source.start();
    } catch (err) {
      this.onError(source, err instanceof CameraError ? err : new CameraError('PROTOCOL', (err as Error).message));
    }
  }

  private armWatchdog(): void {
    if (this.watchdog) clearTimeout(this.watchdog);
    const timeoutMs = this.timings.timeoutMs();
    const source = this.source;
    this.watchdog = setTimeout(() => {
      this.watchdog = null;
      if (source && source === this.source) this.onError(source, new CameraError('TIMEOUT', `no frame within ${Math.round(timeoutMs / 1000)} s`));
    }, timeoutMs);
  }

  private onFrame(source: CameraSource, frame: CameraFrame): void {
    if (source !== this.source) return;
    this.latest = frame;
    this.retries = 0;
    this.armWatchdog();
    if (this.failure || this.announced !== true) {
      this.failure = null;
      this.announce(true, null);
    }
    const waiters = this.waiters.splice(0);
    for (const w of waiters) {
      clearTimeout(w.timer);
      w.resolve(frame);
    }
    if (waiters.length) this.touch();
    // The rate cap, with some slack for jitter: a 5 fps camera under a 5 fps cap keeps every frame.
    const minGap = 1000 / Math.max(0.1, this.timings.maxFps());
    if (frame.at - this.lastDelivered < minGap * 0.8) return;
    this.lastDelivered = frame.at;
    for (const viewer of [...this.viewers]) viewer.offer(frame);
  }

  private onError(source: CameraSource, error: CameraError): void {
    if (source !== this.source) return;
    this.failure = error;
    this.latest = null;
    void this.closeUpstream();
    this.rejectWaiters(error);
    this.announce(false, error);
    if (this.viewers.size === 0 || this.closed) return this.touch();
    // Viewers stay connected and see the picture again once the camera is back.
    const delay = Math.min(RETRY_MAX_MS, RETRY_BASE_MS * 2 ** this.retries++);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      if (this.viewers.size > 0) this.ensureUpstream(false);
    }, delay);
  }

  private announce(available: boolean, error: CameraError | null): void {
    if (this.announced === available && available) return;
    const changed = this.announced !== available;
    this.announced = available;
    if (changed) this.events.availability(available, error);
  }

  private rejectWaiters(error: CameraError): void {
    for (const w of this.waiters.splice(0)) {
      clearTimeout(w.timer);
      w.reject(error);
    }
  }

  private async closeUpstream(): Promise<void> {
    const source = this.source;
    this.source = null;
    if (this.watchdog) clearTimeout(this.watchdog);
    this.watchdog = null;
    if (source) await source.close().catch(() => undefined);
  }
}
