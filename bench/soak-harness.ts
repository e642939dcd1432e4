/**
 * The load/soak run shared by test/e2e/soak.test.ts (short, asserts) and
 * bench/soak.ts (long, prints figures). It lives under bench/ because
 * tsconfig.bench.json compiles only service/ and bench/ for `npm run bench`,
 * while jest (ts-jest) can import from anywhere: one module, two callers.
 *
 * What runs where:
 * - the service is a child process (`printfarm serve`), so its memory
 *   (/proc/<pid>/status VmRSS) is its own and not mixed with the simulators,
 *   the clients or jest;
 * - this process runs the simulated printers (Bambu: MQTT over TLS with one
 *   shared certificate, every report a new nozzle temperature; PrusaLink:
 *   HTTP + Digest, polled by the service), the /ws clients and the API load,
 *   so report send times and frame receive times come from one clock.
 *
 * Phases: start the service and the printers; connect every /ws client before
 * any printer exists (so every client must see the same frames); register the
 * printers (inactive first when an idle API baseline is wanted, measured with
 * the same request mix); activate them and start prints; wait until all are
 * connected; steady API load through a warm-up and a measured window; drain.
 *
 * Memory: VmRSS sampled from /proc, and at two checkpoints (end of warm-up,
 * end of the window) RSS and V8 heap after a full garbage collection asked
 * for through the service's inspector (`--inspect=127.0.0.1:0`), because the
 * sampled RSS moves 20-40 % in V8's garbage-collection saw-tooth.
 *
 * Checks made while frames arrive, per client:
 * - the same frames in the same order as every other client (count + running
 *   SHA-1 of the frame texts stamped between the last client's connection and
 *   a common cut after the drain);
 * - per printer: timestamps never go back, progress never goes back while a
 *   print runs;
 * - per Bambu printer: every report sent in the window reached the client as
 *   one printer_status frame, in send order (a ledger of what each simulator
 *   sent, matched by the report's unique nozzle temperature). Skipped reports
 *   are lost; frames that match nothing ahead are out of order / unexpected.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, type Hash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { WebSocket } from 'ws';
import { BENCH_NOZZLE_STEPS, BambuSimulator, type SimReportInfo } from '../service/simulators/bambu';
import { PrusaSimulator } from '../service/simulators/prusa';

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

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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
async function pool<T>(items: T[], limit: number, fn: (item: T, index: number) => Promise<void>): Promise<void> {
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
class LagHistogram {
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

// ---------------------------------------------------------------------------
// What the Bambu simulators sent
// ---------------------------------------------------------------------------

interface Sent {
  nozzle: number;
  at: number;
  inWindow: boolean;
}

class Ledger {
  readonly sent = new Map<string, Sent[]>();
  windowOpen = false;
  windowReports = 0;

  onReport(info: SimReportInfo): void {
    let list = this.sent.get(info.id);
    if (!list) this.sent.set(info.id, (list = []));
    list.push({ nozzle: info.nozzle, at: performance.now(), inWindow: this.windowOpen });
    if (this.windowOpen) this.windowReports++;
  }
}

// ---------------------------------------------------------------------------
// A /ws client that checks what it receives
// ---------------------------------------------------------------------------

interface PrinterTrack {
  lastTs: string;
  lastStatus: string;
  lastProgress: number;
  lastJob: unknown;
  /** Ledger position: index of the next report expected (Bambu). */
  cursor: number;
  lastNozzle: number | null;
}

interface StatusFrame {
  type: string;
  timestamp: string;
  data: { printer_id?: string; status?: string; progress?: number; job_name?: unknown; temperatures?: { nozzle?: number } };
}

class CheckingClient {
  socket!: WebSocket;
  frames = 0;
  private readonly hash: Hash = createHash('sha1');
  private readonly tracks = new Map<string, PrinterTrack>();
  readonly types: Record<string, number> = {};
  matched = 0;
  lost = 0;
  unexpected = 0;
  timestampRegressions = 0;
  progressRegressions = 0;
  windowBambuFrames = 0;
  windowPrusaFrames = 0;
  readonly violations: string[] = [];
  /** Frames stamped before this (ISO) may predate the last client's connection and are not compared. */
  armedAfter = '';
  /**
   * Frames stamped after this (ISO) are not compared either: clients read their sockets at their
   * own pace, so at any instant one may be a frame behind another. Every frame stamped up to here
   * has reached a client once it has seen one stamped later (the service stamps as it sends).
   */
  closeAfter = '';
  passedClose = false;
  countWindow = false;

  constructor(
    private readonly ledger: Ledger,
    private readonly bambuIds: Set<string>,
    private readonly lag: LagHistogram,
  ) {}

  async connect(base: string): Promise<void> {
    this.socket = new WebSocket(`${base.replace(/^http/, 'ws')}/ws`);
    this.socket.on('message', (raw: Buffer) => this.onFrame(raw.toString('utf8')));
    await new Promise<void>((resolve, reject) => {
      this.socket.once('open', () => resolve());
      this.socket.once('error', reject);
    });
  }

  private violation(text: string): void {
    if (this.violations.length < 10) this.violations.push(text);
  }

  private onFrame(text: string): void {
    const now = performance.now();
    let frame: StatusFrame;
    try {
      frame = JSON.parse(text);
    } catch {
      this.violation(`not JSON: ${text.slice(0, 80)}`);
      return;
    }
    if (!this.armedAfter || frame.timestamp <= this.armedAfter) return;
    if (this.closeAfter && frame.timestamp > this.closeAfter) this.passedClose = true;
    else {
      this.frames++;
      this.hash.update(text);
      this.hash.update('\n');
      this.types[frame.type] = (this.types[frame.type] ?? 0) + 1;
    }
    const id = frame.data?.printer_id;
    if (typeof id !== 'string') return;
    let track = this.tracks.get(id);
    if (!track) this.tracks.set(id, (track = { lastTs: '', lastStatus: '', lastProgress: -1, lastJob: undefined, cursor: 0, lastNozzle: null }));
    // Per printer, in order: the service stamps frames as it sends them (ISO, ms).
    if (frame.timestamp < track.lastTs) {
      this.timestampRegressions++;
      this.violation(`${id}: ${frame.type} at ${frame.timestamp} after ${track.lastTs}`);
    }
    track.lastTs = frame.timestamp;
    if (frame.type !== 'printer_status') return;
    const bambu = this.bambuIds.has(id);
    if (this.countWindow) {
      if (bambu) this.windowBambuFrames++;
      else this.windowPrusaFrames++;
    }
    const { status = '', progress, job_name: job } = frame.data;
    if (typeof progress === 'number') {
      // A running print only moves forward; a new print (or an end) may start again from 0.
      if (status === 'printing' && track.lastStatus === 'printing' && job === track.lastJob && progress < track.lastProgress) {
        this.progressRegressions++;
        this.violation(`${id}: progress ${track.lastProgress} -> ${progress} while printing ${String(job)}`);
      }
      track.lastProgress = progress;
    }
    track.lastStatus = status;
    track.lastJob = job;
    if (bambu) this.matchReport(id, track, frame.data.temperatures?.nozzle, now);
  }

  /** The frame of the next report(s) this printer sent: reports skipped on the way are lost. */
  private matchReport(id: string, track: PrinterTrack, nozzle: number | undefined, now: number): void {
    const sent = this.ledger.sent.get(id) ?? [];
    if (typeof nozzle !== 'number') return;
    const limit = Math.min(sent.length, track.cursor + BENCH_NOZZLE_STEPS);
    for (let j = track.cursor; j < limit; j++) {
      if (sent[j].nozzle !== nozzle) continue;
      for (let k = track.cursor; k < j; k++) {
        if (sent[k].inWindow) {
          this.lost++;
          this.violation(`${id}: report #${k} (nozzle ${sent[k].nozzle}) never arrived; next frame was #${j}`);
        }
      }
      track.cursor = j + 1;
      track.lastNozzle = nozzle;
      if (sent[j].inWindow) {
        this.matched++;
        this.lag.add(now - sent[j].at);
      }
      return;
    }
    // A frame without a new report: a connection change re-sends the last state; anything else is out of order.
    if (nozzle === track.lastNozzle) return;
    if (sent.slice(0, track.cursor).some((s) => s.inWindow)) {
      this.unexpected++;
      this.violation(`${id}: frame with nozzle ${nozzle} matches no report ahead of #${track.cursor}`);
    }
  }

  /** Window reports this client has not received yet. */
  pending(): number {
    let n = 0;
    for (const [id, sent] of this.ledger.sent) {
      const cursor = this.tracks.get(id)?.cursor ?? 0;
      for (let k = cursor; k < sent.length; k++) if (sent[k].inWindow) n++;
    }
    return n;
  }

  report(): ClientReport {
    const stillPending = this.pending();
    if (stillPending) this.violation(`${stillPending} window reports never arrived`);
    return {
      frames: this.frames,
      hash: this.hash.copy().digest('hex'),
      matched: this.matched,
      lost: this.lost + stillPending,
      unexpected: this.unexpected,
      timestampRegressions: this.timestampRegressions,
      progressRegressions: this.progressRegressions,
      violations: [...this.violations],
    };
  }

  async close(): Promise<void> {
    const socket = this.socket;
    if (!socket || socket.readyState === WebSocket.CLOSED) return;
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    if (socket.readyState === WebSocket.CONNECTING) socket.terminate();
    else socket.close();
    const cut = setTimeout(() => socket.terminate(), 2000);
    await closed;
    clearTimeout(cut);
  }
}

// ---------------------------------------------------------------------------
// The service as a child process
// ---------------------------------------------------------------------------

class ServiceProcess {
  child!: ChildProcess;
  base = '';
  private tail = '';
  readonly errors: string[] = [];
  private exited: Promise<number | null> = Promise.resolve(null);
  private inspectorUrl = '';
  private inspector: WebSocket | null = null;
  private inspectorId = 0;
  private readonly inspectorWaiters = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();

  static async start(argv: string[], dataDir: string): Promise<ServiceProcess> {
    const s = new ServiceProcess();
    await s.spawn(argv, dataDir);
    return s;
  }

  get pid(): number {
    return this.child.pid ?? 0;
  }

  private spawn(argv: string[], dataDir: string): Promise<void> {
    // --inspect (loopback, any port): the run asks the service for a full garbage collection before it
    // measures memory at the checkpoints, see gcCheckpoint().
    this.child = spawn(process.execPath, ['--inspect=127.0.0.1:0', ...argv, 'serve', '--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir], {
      env: {
        PATH: process.env.PATH,
        LOG_LEVEL: 'warn',
        // The fastest PrusaLink poll the settings allow (5 s); the default is 30 s.
        MONITORING_INTERVAL: '5',
        UPDATE_CHECK_URL: 'http://127.0.0.1:9/unreachable',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const child = this.child;
    this.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
    let line = '';
    const onOutput = (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      this.tail = (this.tail + text).slice(-8000);
      line += text;
      let nl: number;
      while ((nl = line.indexOf('\n')) >= 0) {
        const one = line.slice(0, nl);
        line = line.slice(nl + 1);
        // pino: level 50 error, 60 fatal.
        const m = one.match(/^\{"level":(\d+)/);
        if (m && Number(m[1]) >= 50 && this.errors.length < 20) this.errors.push(one.slice(0, 500));
      }
    };
    child.stdout!.on('data', onOutput);
    child.stderr!.on('data', onOutput);
    return new Promise<void>((resolve, reject) => {
      const onData = () => {
        const m = this.tail.match(/REST API\s+(http:\/\/\S+)\/api\/v1/);
        const inspector = this.tail.match(/Debugger listening on (ws:\/\/\S+)/);
        if (m && inspector) {
          this.base = m[1];
          this.inspectorUrl = inspector[1];
          child.stdout!.off('data', onData);
          child.stderr!.off('data', onData);
          child.off('exit', onExit);
          resolve();
        }
      };
      const onExit = (code: number | null) => reject(new Error(`service exited with ${code} before serving:\n${this.tail}`));
      child.stdout!.on('data', onData);
      child.stderr!.on('data', onData);
      child.once('exit', onExit);
    });
  }

  /** Resident set size in kB, from /proc (Linux). */
  rssKb(): number {
    const status = fs.readFileSync(`/proc/${this.pid}/status`, 'utf8');
    const m = status.match(/^VmRSS:\s+(\d+)\s+kB/m);
    return m ? Number(m[1]) : NaN;
  }

  output(): string {
    return this.tail;
  }

  /** Calls a method of the service's inspector (Chrome DevTools Protocol). */
  private async inspect(method: string): Promise<any> {
    if (!this.inspector) {
      const socket = new WebSocket(this.inspectorUrl);
      socket.on('message', (raw: Buffer) => {
        const msg = JSON.parse(raw.toString('utf8')) as { id?: number; result?: unknown; error?: { message: string } };
        const waiter = msg.id === undefined ? undefined : this.inspectorWaiters.get(msg.id);
        if (!waiter) return;
        this.inspectorWaiters.delete(msg.id!);
        if (msg.error) waiter.reject(new Error(`${method}: ${msg.error.message}`));
        else waiter.resolve(msg.result);
      });
      await new Promise<void>((resolve, reject) => {
        socket.once('open', () => resolve());
        socket.once('error', reject);
      });
      this.inspector = socket;
    }
    const id = ++this.inspectorId;
    const answer = new Promise((resolve, reject) => this.inspectorWaiters.set(id, { resolve, reject }));
    this.inspector.send(JSON.stringify({ id, method }));
    return answer;
  }

  /**
   * Memory the service holds on to: RSS and V8 heap after a full garbage collection. V8 lets
   * garbage pile up in the old generation between major collections (here the RSS climbs 40-70 MB
   * in a saw-tooth over ~1.5 minutes at 20 requests/s, then drops back), so RSS samples alone
   * compare two points on that saw-tooth; after a full collection only what is retained counts.
   */
  async gcCheckpoint(): Promise<MemoryCheckpoint> {
    await this.inspect('HeapProfiler.collectGarbage');
    await this.inspect('HeapProfiler.collectGarbage');
    // Let V8's memory reducer hand freed pages back before reading RSS.
    await sleep(300);
    const heap = (await this.inspect('Runtime.getHeapUsage')) as { usedSize: number; totalSize: number };
    return { rssKb: this.rssKb(), heapUsedKb: Math.round(heap.usedSize / 1024) };
  }

  private async closeInspector(): Promise<void> {
    const socket = this.inspector;
    this.inspector = null;
    for (const w of this.inspectorWaiters.values()) w.reject(new Error('inspector closed'));
    this.inspectorWaiters.clear();
    if (!socket || socket.readyState === WebSocket.CLOSED) return;
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.close();
    const cut = setTimeout(() => socket.terminate(), 2000);
    await closed;
    clearTimeout(cut);
  }

  async stop(): Promise<number | null> {
    // A process with a debugger attached waits for it to go before it exits.
    await this.closeInspector();
    if (this.child.exitCode !== null || this.child.signalCode !== null) return this.child.exitCode;
    this.child.kill('SIGTERM');
    const kill = setTimeout(() => this.child.kill('SIGKILL'), 15_000);
    const code = await this.exited;
    clearTimeout(kill);
    return code;
  }
}

// ---------------------------------------------------------------------------
// API load
// ---------------------------------------------------------------------------

class ApiLoad {
  private timer: NodeJS.Timeout | null = null;
  private readonly inFlight = new Set<Promise<void>>();
  private n = 0;
  private jobIds: string[] = [];
  latencies: number[] = [];
  private readonly kinds = new Map<string, number[]>();
  requests = 0;
  errors = 0;
  errorSamples: string[] = [];

  constructor(
    private readonly base: string,
    private readonly printerIds: string[],
  ) {}

  /** The request mix: list, detail, jobs, job detail, statistics, health, system info. */
  private nextPath(): string {
    const i = this.n++;
    const printer = this.printerIds[(i * 7) % this.printerIds.length];
    switch (i % 8) {
      case 0:
        return '/api/v1/printers';
      case 1:
        return `/api/v1/printers/${printer}`;
      case 2:
        return '/api/v1/jobs?limit=50';
      case 3:
        return this.jobIds.length ? `/api/v1/jobs/${this.jobIds[i % this.jobIds.length]}` : '/api/v1/jobs?status=running';
      case 4:
        return '/api/v1/statistics/overview';
      case 5:
        return `/api/v1/statistics/printers/${printer}`;
      case 6:
        return '/api/v1/health';
      default:
        return '/api/v1/system/info';
    }
  }

  private async one(urlPath: string): Promise<void> {
    const t0 = performance.now();
    this.requests++;
    try {
      const res = await fetch(this.base + urlPath);
      const text = await res.text();
      const ms = performance.now() - t0;
      this.latencies.push(ms);
      const kind = `GET ${urlPath.replace('/api/v1', '').replace(/\?.*$/, '').replace(/\/(printers|jobs)\/[^/]+/, '/$1/{id}')}`;
      let list = this.kinds.get(kind);
      if (!list) this.kinds.set(kind, (list = []));
      list.push(ms);
      if (res.status >= 400) {
        this.errors++;
        if (this.errorSamples.length < 10) this.errorSamples.push(`GET ${urlPath} -> ${res.status} ${text.slice(0, 300)}`);
      } else if (urlPath.startsWith('/api/v1/jobs?')) {
        const body = JSON.parse(text) as { jobs?: Array<{ id: string }> };
        if (body.jobs?.length) this.jobIds = body.jobs.map((j) => String(j.id)).slice(0, 50);
      }
    } catch (err) {
      this.errors++;
      if (this.errorSamples.length < 10) this.errorSamples.push(`GET ${urlPath} -> ${(err as Error).message}`);
    }
  }

  start(rps: number): void {
    this.timer = setInterval(() => {
      // Open loop, but a service that stops answering must not pile up thousands of sockets here.
      if (this.inFlight.size >= 100) {
        this.requests++;
        this.errors++;
        if (this.errorSamples.length < 10) this.errorSamples.push('100 requests in flight: the service stopped answering');
        return;
      }
      const p: Promise<void> = this.one(this.nextPath()).finally(() => this.inFlight.delete(p));
      this.inFlight.add(p);
    }, 1000 / rps);
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await Promise.all(this.inFlight);
  }

  stats(): ApiStats {
    const byKind: ApiStats['byKind'] = {};
    for (const [kind, list] of this.kinds) byKind[kind] = { n: list.length, p50: percentile(list, 50), p99: percentile(list, 99) };
    return { requests: this.requests, errors: this.errors, errorSamples: [...this.errorSamples], p50: percentile(this.latencies, 50), p99: percentile(this.latencies, 99), byKind };
  }

  reset(): void {
    this.latencies = [];
    this.requests = 0;
    this.errors = 0;
    this.errorSamples = [];
  }
}

// ---------------------------------------------------------------------------
// The run
// ---------------------------------------------------------------------------

async function json(base: string, method: string, urlPath: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(base + urlPath, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

async function waitFor(what: string | (() => string), probe: () => Promise<boolean> | boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${typeof what === 'string' ? what : what()}`);
    await sleep(200);
  }
}

export async function runSoak(options: SoakOptions): Promise<SoakResult> {
  const log = options.log ?? (() => undefined);
  const t0 = Date.now();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'printfarm-soak-'));
  const ledger = new Ledger();
  const lag = new LagHistogram();
  const bambuSims: BambuSimulator[] = [];
  const prusaSims: PrusaSimulator[] = [];
  const clients: CheckingClient[] = [];
  let service: ServiceProcess | null = null;
  let load: ApiLoad | null = null;
  let sampler: NodeJS.Timeout | null = null;
  let keeper: NodeJS.Timeout | null = null;
  try {
    service = await ServiceProcess.start(options.serviceArgv, dataDir);
    const base = service.base;
    log(`service pid ${service.pid} at ${base}`);

    // Printers: one shared certificate (generating one per printer is the slow part), no FTPS, no control API.
    const tls = await BambuSimulator.tlsCredentials('printfarm-soak');
    const models = ['X1C', 'P1S', 'A1'];
    await pool(
      Array.from({ length: options.bambu }, (_, i) => i),
      25,
      async (i) => {
        bambuSims.push(
          await BambuSimulator.start({
            id: `soak-bambu-${String(i + 1).padStart(3, '0')}`,
            name: `Soak ${models[i % models.length]} #${i + 1}`,
            model: models[i % models.length],
            speed: options.speed,
            reportIntervalMs: 1000,
            reportOffsetMs: Math.round((i / options.bambu) * 1000),
            tls,
            ftps: false,
            control: false,
            benchReports: true,
            onReport: (info) => ledger.onReport(info),
          }),
        );
      },
    );
    for (let i = 0; i < options.prusa; i++) {
      const model = i % 2 ? 'Core One' : 'MK4S';
      prusaSims.push(await PrusaSimulator.start({ id: `soak-prusa-${String(i + 1).padStart(3, '0')}`, name: `Soak ${model} #${i + 1}`, model, speed: options.speed }));
    }
    const bambuIds = new Set(bambuSims.map((s) => s.id));
    const printerIds = [...bambuSims.map((s) => s.id), ...prusaSims.map((s) => s.printerConfig().id)];
    log(`${bambuSims.length} Bambu + ${prusaSims.length} Prusa simulators up after ${((Date.now() - t0) / 1000).toFixed(1)} s`);

    // Every client is connected before the first printer exists: all of them must see every frame.
    for (let i = 0; i < options.clients; i++) {
      const client = new CheckingClient(ledger, bambuIds, lag);
      clients.push(client);
      await client.connect(base);
    }
    await sleep(2); // frames stamped in the millisecond of the last connection are not compared
    const armedAfter = new Date().toISOString();
    for (const c of clients) c.armedAfter = armedAfter;

    const baselineWanted = options.baselineS > 0;
    const configs = [...bambuSims.map((s) => s.printerConfig()), ...prusaSims.map((s) => s.printerConfig())];
    await pool(configs, 8, async (config) => {
      const res = await json(base, 'POST', '/api/v1/printers', { ...config, is_active: !baselineWanted });
      if (res.status !== 201) throw new Error(`POST /printers ${config.id}: ${res.status} ${JSON.stringify(res.body)}`);
    });

    let baseline: ApiStats | null = null;
    if (baselineWanted) {
      log(`idle baseline: ${options.rps} requests/s for ${options.baselineS} s`);
      const idle = new ApiLoad(base, printerIds);
      idle.start(options.rps);
      await sleep(options.baselineS * 1000);
      await idle.stop();
      baseline = idle.stats();
      await pool(printerIds, 8, async (id) => {
        const res = await json(base, 'PUT', `/api/v1/printers/${id}`, { is_active: true });
        if (res.status !== 200) throw new Error(`PUT /printers/${id}: ${res.status} ${JSON.stringify(res.body)}`);
      });
    }

    // Everybody prints; a finished print starts again a little later (after the service has seen the end).
    const bambuFile = bambuSims[0]?.storage.paths().find((p) => /\.3mf$/i.test(p));
    const prusaFile = prusaSims[0]?.storage.files().find((f) => /\.bgcode$/i.test(f.lfn ?? ''))?.lfn;
    const endedAt = new Map<string, number>();
    const keepPrinting = () => {
      const now = Date.now();
      for (const sim of bambuSims) {
        if (!bambuFile || ['preparing', 'printing', 'paused'].includes(sim.status)) continue;
        const ended = endedAt.get(sim.id) ?? (endedAt.set(sim.id, now), now);
        if (now - ended >= 12_000 || sim.status === 'idle') {
          sim.startPrint(bambuFile);
          endedAt.delete(sim.id);
        }
      }
      for (const sim of prusaSims) {
        sim.printer.advance();
        if (!prusaFile || sim.printer.busy) continue;
        const id = sim.printerConfig().id;
        const ended = endedAt.get(id) ?? (endedAt.set(id, now), now);
        if (now - ended >= 12_000 || !sim.printer.job) {
          const entry = sim.storage.find(prusaFile);
          if (entry) sim.printer.start(entry);
          endedAt.delete(id);
        }
      }
    };
    keepPrinting();
    keeper = setInterval(keepPrinting, 1000);

    const connectMs = 60_000 + printerIds.length * 100;
    let connected = 0;
    await waitFor(
      () => `${printerIds.length} printers connected (${connected} so far)`,
      async () => {
        const res = await json(base, 'GET', '/api/v1/printers');
        connected = (res.body?.printers ?? []).filter((p: { connection_status: string }) => p.connection_status === 'connected').length;
        return connected === printerIds.length;
      },
      connectMs,
    );
    const setupS = (Date.now() - t0) / 1000;
    log(`all ${printerIds.length} printers connected after ${setupS.toFixed(1)} s; warm-up ${options.warmupS} s, window ${options.durationS} s`);

    // Steady load: API requests and memory samples from here to the end of the window.
    load = new ApiLoad(base, printerIds);
    load.start(options.rps);
    const samples: SoakResult['rss']['samples'] = [];
    let phase = 'warmup';
    const loadStart = performance.now();
    sampler = setInterval(() => {
      try {
        samples.push({ t: (performance.now() - loadStart) / 1000, kb: service!.rssKb(), phase });
      } catch {
        // the service is gone: the run fails on its own
      }
    }, options.sampleMs);
    await sleep(options.warmupS * 1000);
    // The forced collections stop the service for a moment: no requests are timed across them.
    await load.stop();
    const warmRetained = await service.gcCheckpoint();
    load.start(options.rps);
    // The warm-up's errors count too: "no error responses" holds for the whole load.
    phase = 'window';
    ledger.windowOpen = true;
    for (const c of clients) c.countWindow = true;
    const windowStart = performance.now();
    const windowT0 = (windowStart - loadStart) / 1000;
    const loop = monitorEventLoopDelay({ resolution: 10 });
    loop.enable();
    await sleep(options.durationS * 1000);
    loop.disable();
    ledger.windowOpen = false;
    const windowS = (performance.now() - windowStart) / 1000;
    clearInterval(sampler);
    sampler = null;
    phase = 'drain';
    await load.stop();
    const api = load.stats();
    // The window's last reports are still on their way.
    await waitFor('window frames to arrive', () => clients.every((c) => c.pending() === 0), 10_000).catch(() => undefined);
    for (const c of clients) c.countWindow = false;
    // The same cut for every client: all frames stamped up to now, none after.
    await sleep(2);
    const closeAfter = new Date().toISOString();
    for (const c of clients) c.closeAfter = closeAfter;
    await waitFor('every client past the cut', () => clients.every((c) => c.passedClose), 10_000).catch(() => undefined);
    const endRetained = await service.gcCheckpoint();

    const window = samples.filter((s) => s.phase === 'window');
    const edge = options.memoryEdgeS;
    const warmKb = median(window.filter((s) => s.t - windowT0 < edge).map((s) => s.kb));
    const endKb = median(window.filter((s) => s.t > windowT0 + windowS - edge).map((s) => s.kb));
    const first = clients[0];
    return {
      printers: printerIds.length,
      bambu: bambuSims.length,
      prusa: prusaSims.length,
      clients: clients.length,
      windowS,
      windowReports: ledger.windowReports,
      api,
      baseline,
      clientReports: clients.map((c) => c.report()),
      windowFrames: { bambu: first?.windowBambuFrames ?? 0, prusa: first?.windowPrusaFrames ?? 0, total: (first?.windowBambuFrames ?? 0) + (first?.windowPrusaFrames ?? 0) },
      frameTypes: { ...(first?.types ?? {}) },
      lagP50: lag.percentile(50),
      lagP99: lag.percentile(99),
      lagMax: lag.max,
      loadLoopP99: loop.percentile(99) / 1e6,
      rss: { samples, warmKb, endKb, ratio: endKb / warmKb },
      retained: { warm: warmRetained, end: endRetained, rssRatio: endRetained.rssKb / warmRetained.rssKb, heapRatio: endRetained.heapUsedKb / warmRetained.heapUsedKb },
      serviceErrors: [...service.errors],
      setupS,
      totalS: (Date.now() - t0) / 1000,
      loadAverage: os.loadavg()[0],
    };
  } finally {
    if (sampler) clearInterval(sampler);
    if (keeper) clearInterval(keeper);
    await load?.stop();
    await Promise.all(clients.map((c) => c.close()));
    const code = await service?.stop();
    if (code !== undefined && code !== null && code !== 0) log(`service exited with ${code}:\n${service?.output()}`);
    await Promise.all([...bambuSims.map((s) => s.close()), ...prusaSims.map((s) => s.close())]);
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}
