/** What the soak run is given and what it answers, and the small tools its parts share (statistics, pacing, HTTP). */

export interface SoakOptions {
  bambu: number;
  prusa: number;
  clients: number;
  /** Seconds of load before the measured window (memory settles, jobs get created). */
  warmupS: number;
  /** Seconds of the measured window. */
  durationS: number;
  /** API requests per second (open loop: a fixed schedule, not waiting for answers). */
  rps: number;
  /** Seconds of the same API request mix against the idle service (printers registered but inactive) first; 0 skips it. */
  baselineS: number;
  /** Simulated printer time per wall-clock second (prints last ~10 min of printer time). */
  speed: number;
  /** How to start the service: node arguments that run `printfarm` (e.g. [bin/printfarm.js]); `serve --port 0 ...` is appended. */
  serviceArgv: string[];
  /** Memory sample period (ms). */
  sampleMs: number;
  /** Seconds at each end of the window whose RSS medians are compared. */
  memoryEdgeS: number;
  /** Progress lines (default: none). */
  log?: (line: string) => void;
}

export interface ApiStats {
  requests: number;
  errors: number;
  /** The first few failures: "GET /path -> 500 body…". */
  errorSamples: string[];
  p50: number;
  p99: number;
  /** Per request kind ("GET /printers/{id}"): count and latency p50/p99 (ms). */
  byKind: Record<string, { n: number; p50: number; p99: number }>;
}

export interface ClientReport {
  frames: number;
  hash: string;
  /** Window reports of the Bambu printers that arrived as their frame, in order. */
  matched: number;
  /** Frames of the window's Bambu reports that never arrived. */
  lost: number;
  /** Bambu frames whose report was not ahead in the ledger (out of order or not from a report). */
  unexpected: number;
  /** Frames whose timestamp went back for their printer. */
  timestampRegressions: number;
  /** Frames whose progress went back during a running print. */
  progressRegressions: number;
  violations: string[];
}

export interface MemoryCheckpoint {
  rssKb: number;
  heapUsedKb: number;
}

export interface SoakResult {
  printers: number;
  bambu: number;
  prusa: number;
  clients: number;
  windowS: number;
  /** Reports the Bambu simulators sent in the window (each must reach every client). */
  windowReports: number;
  api: ApiStats;
  baseline: ApiStats | null;
  clientReports: ClientReport[];
  /** printer_status frames per Bambu/Prusa printer seen by client 0 in the window. */
  windowFrames: { bambu: number; prusa: number; total: number };
  /** Frame types seen by client 0 over the whole run. */
  frameTypes: Record<string, number>;
  lagP50: number;
  lagP99: number;
  lagMax: number;
  /** Event-loop delay p99 (ms) of this process (simulators, clients, load) over the window: lag measured here includes it. */
  loadLoopP99: number;
  /** RSS sampled every sampleMs during the load; medians of the window's first and last memoryEdgeS seconds. */
  rss: { samples: Array<{ t: number; kb: number; phase: string }>; warmKb: number; endKb: number; ratio: number };
  /** After a full garbage collection at the end of the warm-up and at the end of the window. */
  retained: { warm: MemoryCheckpoint; end: MemoryCheckpoint; rssRatio: number; heapRatio: number };
  /** Service log lines at level error or above (pino JSON on stdout). */
  serviceErrors: string[];
  setupS: number;
  totalS: number;
  loadAverage: number;
}

export const DEFAULT_OPTIONS: Omit<SoakOptions, 'serviceArgv'> = {
  bambu: 160,
  prusa: 40,
  clients: 20,
  warmupS: 10,
  durationS: 25,
  rps: 5,
  baselineS: 0,
  speed: 10,
  sampleMs: 500,
  memoryEdgeS: 5,
};

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function median(values: number[]): number {
  if (!values.length) return NaN;
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

export function percentile(values: ArrayLike<number>, p: number): number {
  if (!values.length) return NaN;
  const s = Float64Array.from(values as ArrayLike<number>).sort();
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
}

/** Runs `fn` over `items` with at most `limit` in flight. */
export async function pool<T>(items: T[], limit: number, fn: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        await fn(items[i], i);
      }
    }),
  );
}

/** Delivery lag in 0.1 ms buckets up to 60 s (constant memory for long runs). */
export class LagHistogram {
  private readonly buckets = new Uint32Array(600_000);
  count = 0;
  max = 0;
  add(ms: number): void {
    const i = Math.min(this.buckets.length - 1, Math.max(0, Math.round(ms * 10)));
    this.buckets[i]++;
    this.count++;
    if (ms > this.max) this.max = ms;
  }
  percentile(p: number): number {
    if (!this.count) return NaN;
    const target = Math.ceil((p / 100) * this.count);
    let seen = 0;
    for (let i = 0; i < this.buckets.length; i++) {
      seen += this.buckets[i];
      if (seen >= target) return i / 10;
    }
    return this.max;
  }
}

export async function json(base: string, method: string, urlPath: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(base + urlPath, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

/**
 * Polls until `probe` holds. A probe that throws (a connection reset while a
 * loaded machine closes an idle keep-alive socket) counts as "not yet"; the
 * last error is named if the deadline passes.
 */
export async function waitFor(what: string | (() => string), probe: () => Promise<boolean> | boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  let lastError: unknown = null;
  for (;;) {
    try {
      if (await probe()) return;
      lastError = null;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      const why = lastError ? ` (last error: ${(lastError as Error).message}${(lastError as { cause?: Error }).cause ? `: ${(lastError as { cause: Error }).cause.message}` : ''})` : '';
      throw new Error(`timed out waiting for ${typeof what === 'string' ? what : what()}${why}`);
    }
    await sleep(200);
  }
}
