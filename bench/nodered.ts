/**
 * bench/nodered: what the node pack adds on top of the service. N simulated
 * Bambu Lab printers report once a second; measured in the same run:
 *
 * - Node-RED with this pack, the service embedded, one printer node watching
 *   all printers (as the farm flow does) feeding a function node that stamps
 *   each msg (bench/nodered-worker.ts): report -> msg latency and the CPU of
 *   the whole Node-RED process per report;
 * - the service alone with one /ws client (bench/fleet's "service" mode):
 *   report -> frame latency and the service process's CPU per report.
 *
 * Target: p99 within 2x of the service alone, CPU per report within 2x.
 * The report times and the msg times come from two processes: both are
 * performance.timeOrigin + performance.now() (the same system clock).
 *
 * Options: --sizes 200,1000  --window 15 (s)  --warmup 3 (s)  --interval 1000 (ms)
 */
import { fork, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { BENCH_NOZZLE_BASE, BENCH_NOZZLE_STEPS, BambuSimulator, type SimReportInfo } from '../service/simulators/bambu';
import { connectedViaApi, describe, Ledger, measure, percentile, registerPrinters, startSimulators, waitFor, type Measurement, type Options } from './fleet';
import type { NodeRedCommand, NodeRedEvent } from './nodered-worker';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const epochNow = () => performance.timeOrigin + performance.now();

function parseArgs(argv: string[]): Options {
  const options: Options = { sizes: [200, 1000], windowS: 15, warmupS: 3, intervalMs: 1000, report: 'delta' };
  for (let i = 0; i < argv.length; i += 2) {
    const value = argv[i + 1] ?? '';
    if (argv[i] === '--sizes') options.sizes = value.split(',').map(Number);
    else if (argv[i] === '--window') options.windowS = Number(value);
    else if (argv[i] === '--warmup') options.warmupS = Number(value);
    else if (argv[i] === '--interval') options.intervalMs = Number(value);
    else throw new Error(`unknown option ${argv[i]} (options: --sizes 200,1000 --window 15 --warmup 3 --interval 1000)`);
  }
  if (!options.sizes.length || options.sizes.some((n) => !Number.isInteger(n) || n <= 0)) throw new Error('--sizes needs e.g. 200,1000');
  if (![options.windowS, options.warmupS, options.intervalMs].every((n) => Number.isFinite(n) && n > 0)) throw new Error('--window, --warmup and --interval need positive numbers');
  return options;
}

/** fleet's ledger (for the service alone) that also tells the Node-RED one when each report left. */
class BothLedgers extends Ledger {
  constructor(private readonly nodeRed: MsgLedger) {
    super();
  }
  override onReport(info: SimReportInfo): void {
    super.onReport(info);
    this.nodeRed.onReport(info);
  }
}

/** Report -> msg latency: reports by (printer, nozzle) on the epoch clock, msgs as the worker saw them. */
class MsgLedger {
  private readonly sent = new Map<string, Float64Array>();
  private start = Infinity;
  private end = Infinity;
  reports = 0;
  msgs = 0;
  latencies: number[] = [];

  onReport(info: SimReportInfo): void {
    const now = epochNow();
    let slots = this.sent.get(info.id);
    if (!slots) this.sent.set(info.id, (slots = new Float64Array(BENCH_NOZZLE_STEPS)));
    const slot = info.nozzle - BENCH_NOZZLE_BASE;
    if (slot >= 0 && slot < BENCH_NOZZLE_STEPS) slots[slot] = now;
    if (now >= this.start && now < this.end) this.reports++;
  }

  onMsgs(msgs: [string, number, number][]): void {
    for (const [id, nozzle, at] of msgs) {
      if (at >= this.start && at < this.end) this.msgs++;
      const slots = this.sent.get(id);
      const slot = nozzle - BENCH_NOZZLE_BASE;
      const sentAt = slots && slot >= 0 && slot < BENCH_NOZZLE_STEPS ? slots[slot] : 0;
      if (!slots || !sentAt) continue;
      slots[slot] = 0;
      if (sentAt >= this.start && sentAt < this.end) this.latencies.push(at - sentAt);
    }
  }

  open(start: number, end: number): void {
    [this.start, this.end, this.reports, this.msgs, this.latencies] = [start, end, 0, 0, []];
  }
}

class NodeRedWorker {
  private readonly child: ChildProcess;
  private readonly waiting = new Map<string, (e: NodeRedEvent) => void>();
  private sampleId = 0;

  constructor(ledger: MsgLedger) {
    this.child = fork(path.join(__dirname, 'nodered-worker.js'), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    this.child.on('message', (raw) => {
      const e = raw as NodeRedEvent;
      if (e.ev === 'msgs') return ledger.onMsgs(e.msgs);
      const key = e.ev === 'sample' ? `sample:${e.id}` : e.ev === 'error' ? [...this.waiting.keys()][0] : e.ev;
      if (e.ev === 'error') process.stderr.write(`node-red worker: ${e.message}\n`);
      const resolve = key ? this.waiting.get(key) : undefined;
      if (key) this.waiting.delete(key);
      resolve?.(e);
    });
  }

  ask<E extends NodeRedEvent>(command: NodeRedCommand, key: string, ms = 120_000): Promise<E> {
    return new Promise<E>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`node-red worker: no answer to ${command.cmd}`)), ms);
      this.waiting.set(key, (e) => {
        clearTimeout(timer);
        if (e.ev === 'error') reject(new Error(e.message));
        else resolve(e as E);
      });
      this.child.send(command);
    });
  }

  sample() {
    const id = ++this.sampleId;
    return this.ask<Extract<NodeRedEvent, { ev: 'sample' }>>({ cmd: 'sample', id }, `sample:${id}`);
  }

  async close(): Promise<void> {
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    await this.ask({ cmd: 'close' }, 'closed', 30_000).catch(() => this.child.kill('SIGKILL'));
    await exited;
  }
}

async function measureNodeRed(sims: BambuSimulator[], options: Options, ledger: MsgLedger): Promise<Measurement> {
  const n = sims.length;
  const worker = new NodeRedWorker(ledger);
  try {
    const { port } = await worker.ask<Extract<NodeRedEvent, { ev: 'ready' }>>({ cmd: 'start' }, 'ready');
    const base = `http://127.0.0.1:${port}`;
    await registerPrinters(base, sims);
    await waitFor(`${n} printers connected`, async () => (await connectedViaApi(base)) === n, 30_000 + n * 30);
    await sleep(options.warmupS * 1000);
    // The two clocks: how far the worker's epoch time is behind this one's (plus one IPC hop).
    const asked = epochNow();
    const clock = await worker.sample();
    process.stdout.write(`  clocks: worker ${f1(epochNow() - clock.epochMs)} ms behind (round trip ${f1(epochNow() - asked)} ms)\n`);
    const before = await worker.sample();
    const start = epochNow();
    ledger.open(start, start + options.windowS * 1000);
    await sleep(options.windowS * 1000);
    const after = await worker.sample();
    await sleep(1000); // msgs of the window's last reports are still on their way
    const sorted = Float64Array.from(ledger.latencies).sort();
    const m: Measurement = {
      mode: 'service',
      n,
      wallS: (after.wallMs - before.wallMs) / 1000,
      reports: ledger.reports,
      frames: ledger.msgs,
      matched: sorted.length,
      lost: Math.max(0, ledger.reports - sorted.length),
      cpuUs: after.cpuUs - before.cpuUs,
      loadCpuUs: NaN,
      p50: percentile(sorted, 50),
      p90: percentile(sorted, 90),
      p99: percentile(sorted, 99),
      max: sorted.length ? sorted[sorted.length - 1] : NaN,
      workerLoopP99Ms: after.loopP99Ms,
      loadLoopP99Ms: NaN,
      rssMb: after.rssMb,
      loadAvg: os.loadavg()[0],
    };
    ledger.open(Infinity, Infinity);
    return m;
  } finally {
    await worker.close();
  }
}

const f1 = (v: number) => (Number.isFinite(v) ? v.toFixed(1) : 'n/a');
const f2 = (v: number) => (Number.isFinite(v) ? v.toFixed(2) : 'n/a');
const perReport = (m: Measurement) => m.cpuUs / Math.max(1, m.reports);

export async function main(argv: string[]): Promise<void> {
  const options = parseArgs(argv);
  process.stdout.write(`bench/nodered: sizes ${options.sizes.join(', ')}; warm-up ${options.warmupS} s, window ${options.windowS} s; node ${process.version}, ${os.cpus().length} CPUs, load average ${f2(os.loadavg()[0])}\n`);
  const tls = await BambuSimulator.tlsCredentials('printfarm-bench');
  const rows: { nodeRed: Measurement; service: Measurement }[] = [];
  for (const n of options.sizes) {
    const msgs = new MsgLedger();
    const frames = new BothLedgers(msgs);
    const sims = await startSimulators(n, options, tls, frames);
    try {
      const service = await measure('service', sims, options, frames);
      process.stdout.write(`${describe(service)}\n`);
      const nodeRed = await measureNodeRed(sims, options, msgs);
      process.stdout.write(`  node-red N=${n}: ${nodeRed.reports} reports, ${nodeRed.frames} msgs, ${nodeRed.lost} without msg; CPU ${f1(perReport(nodeRed))} µs/report; p50 ${f1(nodeRed.p50)} / p99 ${f1(nodeRed.p99)} ms; event-loop p99 ${f1(nodeRed.workerLoopP99Ms)} ms; rss ${nodeRed.rssMb} MB\n`);
      rows.push({ nodeRed, service });
    } finally {
      await Promise.all(sims.map((s) => s.close()));
    }
  }
  const lines = [
    '| N | Node-RED p50 / p99 (ms) | service alone p50 / p99 (ms) | p99 ratio | Node-RED CPU/report (µs) | service CPU/report (µs) | CPU ratio | msgs without report lost | load average |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows.map(({ nodeRed: r, service: s }) => `| ${r.n} | ${f1(r.p50)} / ${f1(r.p99)} | ${f1(s.p50)} / ${f1(s.p99)} | ${f2(r.p99 / s.p99)} | ${f1(perReport(r))} | ${f1(perReport(s))} | ${f2(perReport(r) / perReport(s))} | ${r.lost} | ${f2(r.loadAvg)} |`),
  ];
  process.stdout.write(`\n${lines.join('\n')}\n`);
  const met = rows.every(({ nodeRed: r, service: s }) => r.p99 <= 2 * s.p99 && perReport(r) <= 2 * perReport(s));
  process.stdout.write(`\nTarget (p99 and CPU per report within 2x of the service alone): ${met ? 'met' : 'NOT met'}\n`);
  // A missed target fails the command, as every bench does (so a slide cannot hide in a log).
  if (!met) process.exitCode = 1;
}

if (require.main === module) {
  main(process.argv.slice(2)).catch((err) => {
    process.stderr.write(`${(err as Error).stack ?? err}\n`);
    process.exit(1);
  });
}
