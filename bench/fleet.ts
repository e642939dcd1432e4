/**
 * bench/fleet: N simulated Bambu Lab printers report once a second through
 * the service to one /ws client. For each N it measures, over a steady
 * window after warm-up:
 *
 * - the service's CPU per report and its CPU share in cores (process.cpuUsage
 *   in the service's own process: bench/fleet-worker.ts), and
 * - report -> /ws frame latency p50/p99: every report carries a new nozzle
 *   temperature (simulator `benchReports`), the simulator records when each
 *   report leaves (`onReport`), and the /ws client matches each frame by
 *   (printer_id, temperatures.nozzle) to the report that caused it;
 *
 * against a baseline measured in the same run with the same simulators: a
 * bare MQTT relay (plain mqtt.js clients, one small frame per report to the
 * same /ws client, see fleet-worker.ts).
 *
 * Processes: this one runs the simulators and the /ws client (so the send and
 * receive times come from one clock); the service or the relay runs in a
 * forked child, so its CPU is measured alone. Loopback only.
 *
 * Options: --sizes 50,200,500,1000  --window 15 (s)  --warmup 3 (s)  --interval 1000 (ms)
 *          --klipper N: N simulated Klipper (Moonraker) printers instead, deltas at 2 Hz unless
 *          --interval says otherwise, against a bare WebSocket relay (bench/fleet-klipper.ts);
 *          target: service CPU per update at most 1.5x the relay's, p99 under 50 ms.
 *
 * The machine is shared: the load average is printed with every figure, and
 * the latency tail moves with whatever else runs on the cores.
 */
import { fork, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { WebSocket } from 'ws';
import { BambuSimulator, type SimTlsCredentials } from '../service/simulators/bambu';
import { Ledger, percentile } from './fleet-ledger';
import { pool } from './pool';
import { KlipperSimulator } from '../service/simulators/klipper';
import { klipperBenchPrinter, startKlipperSimulators } from './fleet-klipper';
import { describe, f2, table, verdict } from './fleet-report';
import type { BenchPrinter, WorkerCommand, WorkerEvent } from './fleet-worker';

// Kept importable from here (bench/nodered.ts uses them).
export { describe, Ledger, percentile };

/**
 * What the simulated printers send:
 * - delta: every report only what changed (as P1 and A1 printers do), about 300 bytes;
 * - full: every report a full push_status of a real X1C with four loaded AMS units (as X1 printers do), 6-10 KB;
 * - mixed (default): a farm of both, the X1C third full reports, the P1S and A1 deltas.
 */
export type ReportMode = 'delta' | 'full' | 'mixed';

export interface Options {
  sizes: number[];
  windowS: number;
  warmupS: number;
  intervalMs: number;
  /** Klipper printers instead of Bambu Lab ones (--klipper N). */
  klipper?: boolean;
  report: ReportMode;
}


export interface Measurement {
  mode: 'service' | 'relay';
  n: number;
  wallS: number;
  reports: number;
  frames: number;
  matched: number;
  lost: number;
  cpuUs: number;
  loadCpuUs: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  workerLoopP99Ms: number;
  loadLoopP99Ms: number;
  rssMb: number;
  /** The machine's 1-minute load average at the end of the window (other processes share the cores). */
  loadAvg: number;
}

const MODELS = ['X1C', 'P1S', 'A1'];

function parseArgs(argv: string[]): Options {
  const options: Options = { sizes: [50, 200, 500, 1000], windowS: 15, warmupS: 3, intervalMs: 1000, report: 'mixed' };
  let intervalGiven = false;
  for (let i = 0; i < argv.length; i++) {
    const value = argv[i + 1];
    const number = (name: string) => {
      const n = Number(value);
      if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} needs a positive number`);
      i++;
      return n;
    };
    switch (argv[i]) {
      case '--sizes':
        options.sizes = (value ?? '').split(',').map((s) => Number(s.trim()));
        if (!options.sizes.length || options.sizes.some((n) => !Number.isInteger(n) || n <= 0)) throw new Error('--sizes needs e.g. 50,200,500,1000');
        i++;
        break;
      case '--window':
        options.windowS = number('--window');
        break;
      case '--warmup':
        options.warmupS = number('--warmup');
        break;
      case '--interval':
        options.intervalMs = number('--interval');
        intervalGiven = true;
        break;
      case '--klipper':
        options.sizes = [number('--klipper')];
        options.klipper = true;
        break;
      case '--report':
        if (value !== 'delta' && value !== 'full' && value !== 'mixed') throw new Error('--report needs delta, full or mixed');
        options.report = value;
        i++;
        break;
      default:
        throw new Error(`unknown option ${argv[i]} (options: --sizes 50,200 --window 15 --warmup 3 --interval 1000 --report delta|full|mixed --klipper N)`);
    }
  }
  if (options.klipper && !intervalGiven) options.intervalMs = 500; // Moonraker pushes deltas at 2 Hz and more
  return options;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));


// ---------------------------------------------------------------------------
// The worker process (service or relay)
// ---------------------------------------------------------------------------

/** A forked bench worker (`script` in dist-bench/bench, serving worker-ipc.ts's protocol); bench/camera.ts uses it too. */
export class Worker<C extends { cmd: string } = WorkerCommand> {
  private readonly child: ChildProcess;
  private readonly waiting = new Map<string, (e: WorkerEvent) => void>();
  private sampleId = 0;
  private exited = false;

  constructor(script = 'fleet-worker.js') {
    this.child = fork(path.join(__dirname, script), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    this.child.on('message', (raw) => {
      const e = raw as WorkerEvent;
      if (e.ev === 'error') {
        process.stderr.write(`worker error: ${e.message}\n`);
        for (const resolve of this.waiting.values()) resolve(e);
        this.waiting.clear();
        return;
      }
      const key = e.ev === 'sample' ? `sample:${e.id}` : e.ev;
      const resolve = this.waiting.get(key);
      this.waiting.delete(key);
      resolve?.(e);
    });
    this.child.on('exit', () => {
      this.exited = true;
      for (const resolve of this.waiting.values()) resolve({ ev: 'error', message: 'worker exited' });
      this.waiting.clear();
    });
  }

  ask<E extends WorkerEvent>(command: C | WorkerCommand, key: string): Promise<E> {
    if (this.exited) return Promise.reject(new Error('worker exited'));
    return new Promise<E>((resolve, reject) => {
      this.waiting.set(key, (e) => (e.ev === 'error' ? reject(new Error(e.message)) : resolve(e as E)));
      this.child.send(command);
    });
  }

  start(mode: 'service' | 'relay', printers: BenchPrinter[]): Promise<Extract<WorkerEvent, { ev: 'ready' }>> {
    return this.ask({ cmd: 'start', mode, printers }, 'ready');
  }

  sample(): Promise<Extract<WorkerEvent, { ev: 'sample' }>> {
    const id = ++this.sampleId;
    return this.ask({ cmd: 'sample', id }, `sample:${id}`);
  }

  async close(): Promise<void> {
    if (this.exited) return;
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    await Promise.race([this.ask({ cmd: 'close' }, 'closed').catch(() => undefined), sleep(20_000)]);
    const kill = setTimeout(() => this.child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(kill);
  }
}

// ---------------------------------------------------------------------------
// One N
// ---------------------------------------------------------------------------

/** Four AMS units with a spool in every tray: what a full X1C report describes. */
const FULL_AMS = Array.from({ length: 16 }, (_, slot) => ({ slot, type: ['PLA', 'PETG', 'ABS', 'PLA'][slot % 4], color: ['#FFFFFF', '#000000', '#FF6A13', '#00AE42'][slot % 4] }));

export async function startSimulators(n: number, options: Options, tls: SimTlsCredentials, ledger: Ledger): Promise<BambuSimulator[]> {
  const ids = Array.from({ length: n }, (_, i) => i);
  return pool(ids, 50, async (i) => {
    const model = options.report === 'full' ? 'X1C' : MODELS[i % MODELS.length];
    const full = options.report !== 'delta' && model === 'X1C';
    const sim = await BambuSimulator.start({
      id: `bench-${String(i + 1).padStart(4, '0')}`,
      name: `Bench ${model} #${i + 1}`,
      model,
      ...(full ? { amsUnits: 4, benchFullEvery: 1, realSizeReports: true } : {}),
      reportIntervalMs: options.intervalMs,
      // Independent printers: spread evenly over the report interval, not all in the same millisecond.
      reportOffsetMs: Math.round((i / n) * options.intervalMs),
      tls,
      ftps: false,
      control: false,
      camera: false,
      benchReports: true,
      onReport: (info) => ledger.onReport(info),
    });
    if (full) sim.applyMaterials({ materials: FULL_AMS });
    return sim;
  });
}

/** The /ws clients the bench closed itself (any other close is the service dropping the client). */
const closedByBench = new WeakSet<WebSocket>();

async function connectWs(port: number, ledger: Ledger): Promise<WebSocket> {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/ws`);
  ws.on('message', (data: Buffer) => ledger.onFrame(data.toString('utf8')));
  // A client the service drops (it read too slowly: the machine is overloaded) loses every later frame: say so.
  ws.on('close', (code: number) => {
    if (!closedByBench.has(ws)) process.stderr.write(`bench/fleet: the /ws client was disconnected (code ${code}); its later frames count as lost\n`);
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  return ws;
}

async function closeWs(ws: WebSocket): Promise<void> {
  closedByBench.add(ws);
  if (ws.readyState === WebSocket.CLOSED) return;
  const closed = new Promise<void>((resolve) => ws.once('close', () => resolve()));
  ws.close();
  const cut = setTimeout(() => ws.terminate(), 2000);
  await closed;
  clearTimeout(cut);
}

export async function waitFor(what: string, probe: () => Promise<boolean>, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(250);
  }
}

type BenchSim = BambuSimulator | KlipperSimulator;

const benchPrinterOf = (s: BenchSim): BenchPrinter =>
  s instanceof KlipperSimulator ? klipperBenchPrinter(s) : { id: s.id, serial: s.serial, access_code: s.accessCode, mqtt_port: s.mqttPort };

export async function registerPrinters(base: string, sims: BenchSim[]): Promise<void> {
  await pool(sims, 16, async (sim) => {
    const res = await fetch(`${base}/api/v1/printers`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(sim.printerConfig()) });
    if (res.status !== 201) throw new Error(`POST /printers ${sim.printerConfig().id}: ${res.status} ${await res.text()}`);
  });
}

export async function connectedViaApi(base: string): Promise<number> {
  const res = await fetch(`${base}/api/v1/printers`);
  const body = (await res.json()) as { printers: Array<{ connection_status: string }> };
  return body.printers.filter((p) => p.connection_status === 'connected').length;
}

export async function measure(mode: 'service' | 'relay', sims: BenchSim[], options: Options, ledger: Ledger): Promise<Measurement> {
  const n = sims.length;
  const worker = new Worker();
  let ws: WebSocket | null = null;
  try {
    const printers: BenchPrinter[] = sims.map(benchPrinterOf);
    const { port } = await worker.start(mode, printers);
    const base = `http://127.0.0.1:${port}`;
    ws = await connectWs(port, ledger);
    const connectMs = 30_000 + n * 30;
    if (mode === 'service') {
      await registerPrinters(base, sims);
      await waitFor(`${n} printers connected`, async () => (await connectedViaApi(base)) === n, connectMs);
    } else {
      await waitFor(`${n} relay clients subscribed`, async () => (await worker.sample()).connected === n, connectMs);
    }
    await sleep(options.warmupS * 1000);

    const loop = monitorEventLoopDelay({ resolution: 10 });
    const before = await worker.sample();
    const loadBefore = process.cpuUsage();
    const start = performance.now();
    ledger.open(start, start + options.windowS * 1000);
    loop.enable();
    await sleep(options.windowS * 1000);
    const after = await worker.sample();
    const loadAfter = process.cpuUsage(loadBefore);
    loop.disable();
    // Frames of the window's last reports are still on their way: a report without a frame after this is lost.
    await sleep(1000);

    const sorted = Float64Array.from(ledger.latencies).sort();
    const reports = ledger.reportsInWindow;
    const result: Measurement = {
      mode,
      n,
      // The worker's own clock between its two CPU samples.
      wallS: (after.wallMs - before.wallMs) / 1000,
      reports,
      frames: ledger.framesInWindow,
      matched: sorted.length,
      lost: Math.max(0, reports - sorted.length),
      cpuUs: after.cpuUs - before.cpuUs,
      loadCpuUs: loadAfter.user + loadAfter.system,
      p50: percentile(sorted, 50),
      p90: percentile(sorted, 90),
      p99: percentile(sorted, 99),
      max: sorted.length ? sorted[sorted.length - 1] : NaN,
      workerLoopP99Ms: after.loopP99Ms,
      loadLoopP99Ms: loop.percentile(99) / 1e6,
      rssMb: after.rssMb,
      loadAvg: os.loadavg()[0],
    };
    ledger.open(Infinity, Infinity);
    return result;
  } finally {
    if (ws) await closeWs(ws);
    await worker.close();
  }
}

export async function main(argv: string[]): Promise<void> {
  const options = parseArgs(argv);
  process.stdout.write(
    `bench/fleet: sizes ${options.sizes.join(', ')}; ${options.report} reports; one report per ${options.intervalMs} ms per printer; warm-up ${options.warmupS} s, window ${options.windowS} s; ` +
      `node ${process.version}, ${os.cpus().length} CPUs, load average ${f2(os.loadavg()[0])}\n`,
  );
  const tls = await BambuSimulator.tlsCredentials('printfarm-bench');
  const rows: Array<{ service: Measurement; relay: Measurement }> = [];
  for (const n of options.sizes) {
    const ledger = new Ledger();
    const t0 = Date.now();
    const sims: BenchSim[] = options.klipper ? await startKlipperSimulators(n, options.intervalMs, ledger) : await startSimulators(n, options, tls, ledger);
    process.stdout.write(`N=${n}: ${n} simulators started in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
    try {
      const relay = await measure('relay', sims, options, ledger);
      process.stdout.write(`${describe(relay)}\n`);
      const service = await measure('service', sims, options, ledger);
      process.stdout.write(`${describe(service)}\n`);
      rows.push({ service, relay });
    } finally {
      await Promise.all(sims.map((s) => s.close()));
    }
  }
  const missed = verdict(rows);
  process.stdout.write(`\n${table(rows)}\n`);
  if (missed) process.exitCode = 1;
}

if (require.main === module) {
  main(process.argv.slice(2)).catch((err) => {
    process.stderr.write(`${(err as Error).stack ?? err}\n`);
    process.exit(1);
  });
}
