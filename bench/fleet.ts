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
 *   (printer_id, temperatures.nozzle) to the report that caused it; paired report by report with the
 *   relay's (bench/fleet-latencies.ts), they also say how many reports both sides got late alike (held up
 *   before either could read them) and each side's p99 without those;
 *
 * against a baseline measured side by side with it, over the same window and
 * the same reports: a bare MQTT relay (the driver's MQTT connection to the
 * same simulators, the service's printer_status frame per report to a /ws client of its own, see
 * fleet-relay.ts). The CPU ratio is also given per 2 s slice of the window.
 *
 * Processes: the simulators run in a process of their own (fleet-sims-worker.ts); the service and the
 * relay each in a forked child, so that each one's CPU is measured alone; this process keeps the ledger
 * and reads each side's /ws frames in a thread per side (fleet-receiver.ts), so that timing one side's
 * frames never waits for the other's. Send and receive times are taken on the machine's monotonic
 * clock. A simulator writes each report to the two sides in turn, each first every other report
 * (service/simulators/bambu/mqtt.ts). Loopback only.
 *
 * Options: --sizes 50,200,500,1000  --window 15 (s)  --warmup 3 (s)  --interval 1000 (ms)
 *          --klipper N: N simulated Klipper (Moonraker) printers instead, deltas at 2 Hz unless
 *          --interval says otherwise, against a bare WebSocket relay (bench/fleet-klipper.ts);
 *          target: service CPU per update at most 1.5x the relay's, p99 under 50 ms.
 *          --latencies PREFIX: writes each side's reports of the window to PREFIX-service.json and
 *          PREFIX-relay.json ({window_start_monotonic_ms, report, reports: [[sent ms after the window opened,
 *          latency ms, printer id], ...]}): which reports make the tail, and when (on the clock of
 *          process.hrtime, which --cpu-prof's timestamps use too). bench/fleet-latencies.ts reads them.
 *          --relay-client driver|mqtt.js: the relay's MQTT client (default: the driver's own,
 *          service/printers/bambu/mqtt-connection.ts; mqtt.js, which the driver used before 2026-11-26,
 *          for comparison with the figures measured then).
 *          --calibrate: the relay against a second, identical relay instead of the service (an A/A run):
 *          the ratios two equal sides reach by chance on this machine, the floor under which a service/relay
 *          ratio says nothing. Prints the ratios and exits 0; no targets.
 * Environment: BENCH_WORKER_ARGS: node flags for the measured processes only (--cpu-prof, --trace-gc).
 *
 * The machine is shared: the load average is printed with every figure, and
 * the latency tail moves with whatever else runs on the cores.
 */
import fs from 'node:fs';
import os from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { SimReportInfo } from '../service/simulators/bambu';
import { describeLatencies, type LatencyFile } from './fleet-latencies';
import { Ledger, percentile } from './fleet-ledger';
import { fleetOf, RemoteSims, startSimulators, type BenchSim, type Options, type ReportMode, type SimFleet } from './fleet-sims';
import { calibration, describe, describeSlices, f2, table, verdict } from './fleet-report';
import type { WorkerEvent } from './fleet-worker';
import { connectedViaApi, FrameReceiver, registerPrinters, sleep, waitFor, Worker } from './fleet-worker-client';

// Kept importable from here (bench/nodered.ts and bench/camera.ts use them).
export { connectedViaApi, describe, fleetOf, Ledger, percentile, registerPrinters, startSimulators, waitFor, Worker, type Options, type ReportMode };

export interface Measurement {
  /** relay-b: the second relay of a calibration run (--calibrate). */
  mode: 'service' | 'relay' | 'relay-b';
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
      case '--latencies':
        if (!value) throw new Error('--latencies needs a file prefix');
        options.latencies = value;
        i++;
        break;
      case '--relay-client':
        if (value !== 'driver' && value !== 'mqtt.js') throw new Error('--relay-client needs driver or mqtt.js');
        options.relayClient = value;
        i++;
        break;
      case '--calibrate':
        options.calibrate = true;
        break;
      case '--report':
        if (value !== 'delta' && value !== 'full' && value !== 'mixed') throw new Error('--report needs delta, full or mixed');
        options.report = value;
        i++;
        break;
      default:
        throw new Error(`unknown option ${argv[i]} (options: --sizes 50,200 --window 15 --warmup 3 --interval 1000 --report delta|full|mixed --klipper N --latencies PREFIX --relay-client driver|mqtt.js --calibrate)`);
    }
  }
  if (options.klipper && !intervalGiven) options.intervalMs = 500; // Moonraker pushes deltas at 2 Hz and more
  return options;
}


// ---------------------------------------------------------------------------
// One N
// ---------------------------------------------------------------------------

/** One process under measurement: its worker, its /ws client and the ledger its frames go to. */
interface Side {
  mode: Measurement['mode'];
  worker: Worker;
  receiver: FrameReceiver | null;
  ledger: Ledger;
}

async function openSide(mode: Measurement['mode'], sims: SimFleet, ledger: Ledger, options: Options): Promise<Side> {
  const side: Side = { mode, worker: new Worker(), receiver: null, ledger };
  try {
    const n = sims.printers.length;
    const { port } = await side.worker.start(mode === 'service' ? 'service' : 'relay', sims.printers, options.relayClient);
    const base = `http://127.0.0.1:${port}`;
    side.receiver = await FrameReceiver.connect(port, ledger);
    const connectMs = 30_000 + n * 30;
    if (mode === 'service') {
      await registerPrinters(base, sims.sources);
      await waitFor(`${n} printers connected`, async () => (await connectedViaApi(base)) === n, connectMs);
    } else {
      await waitFor(`${n} relay clients subscribed`, async () => (await side.worker.sample()).connected === n, connectMs);
    }
    return side;
  } catch (err) {
    await closeSide(side);
    throw err;
  }
}

async function closeSide(side: Side): Promise<void> {
  if (side.receiver) await side.receiver.close();
  await side.worker.close();
}

type Sample = Extract<WorkerEvent, { ev: 'sample' }>;

/**
 * Measures the sides over the same window: their CPU from each worker's own samples, their latency from each
 * ledger. Every `sliceS` seconds the CPU of each side is sampled again, so the ratio can be given per slice.
 */
async function window(sides: Side[], options: Options, n: number): Promise<{ results: Measurement[]; slices: Sample[][]; each: LatencyFile[] }> {
  const loop = monitorEventLoopDelay({ resolution: 10 });
  const slices: Sample[][] = [await Promise.all(sides.map((s) => s.worker.sample()))];
  const loadBefore = process.cpuUsage();
  const start = performance.now();
  for (const side of sides) side.ledger.open(start, start + options.windowS * 1000);
  loop.enable();
  const sliceMs = Math.min(SLICE_S * 1000, options.windowS * 1000);
  while (performance.now() - start < options.windowS * 1000 - 1) {
    await sleep(Math.min(sliceMs, start + options.windowS * 1000 - performance.now()));
    slices.push(await Promise.all(sides.map((s) => s.worker.sample())));
  }
  const loadAfter = process.cpuUsage(loadBefore);
  loop.disable();
  // Frames of the window's last reports are still on their way: a report without a frame after this is lost.
  await sleep(1000);
  const each: LatencyFile[] = [];
  const results = sides.map((side, i): Measurement => {
    const before = slices[0][i];
    const after = slices[slices.length - 1][i];
    const ledger = side.ledger;
    const sorted = Float64Array.from(ledger.latencies).sort();
    if (options.latencies) writeLatencies(`${options.latencies}-${side.mode}.json`, ledger, options.report);
    each.push({ report: options.report, reports: ledger.each ?? [] });
    const reports = ledger.reportsInWindow;
    const frames = ledger.framesInWindow;
    ledger.open(Infinity, Infinity);
    return {
      mode: side.mode,
      n,
      // The worker's own clock between its two CPU samples.
      wallS: (after.wallMs - before.wallMs) / 1000,
      reports,
      frames,
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
  });
  return { results, slices, each };
}

function writeLatencies(file: string, ledger: Ledger, report: ReportMode): void {
  // performance.now() -> the machine's monotonic clock, in ms.
  const windowStart = Number(process.hrtime.bigint()) / 1e6 - (performance.now() - ledger.windowStart);
  fs.writeFileSync(file, JSON.stringify({ window_start_monotonic_ms: windowStart, report, reports: ledger.each ?? [] }));
}

/** Length of the slices the CPU ratio is also given for (the spread says how steady the machine was). */
const SLICE_S = 2;
/** A report later than this on both sides was held up before either had it (bench/fleet-latencies.ts). */
const SHARED_LATE_MS = 1.5;

/** One process alone (bench/nodered.ts measures the service this way). */
export async function measure(mode: 'service' | 'relay', sims: BenchSim[], options: Options, ledger: Ledger): Promise<Measurement> {
  const side = await openSide(mode, fleetOf(sims), ledger, options);
  try {
    await sleep(options.warmupS * 1000);
    return (await window([side], options, sims.length)).results[0];
  } finally {
    await closeSide(side);
  }
}

/**
 * The relay and the service side by side: both connected to the same simulators at the same time, each with its
 * own /ws client, measured over the same window. Both take every report, so a drift of the machine (other work,
 * the host's clock speed) moves both figures alike instead of the one measured later; each counts only its own
 * process's CPU.
 */
export async function measurePair(
  sims: SimFleet,
  options: Options,
  ledgers: { relay: Ledger; service: Ledger },
): Promise<{ relay: Measurement; service: Measurement; sliceRatios: number[]; shared: string }> {
  const relay = await openSide('relay', sims, ledgers.relay, options);
  let service: Side | null = null;
  try {
    // A calibration measures the relay against a second relay: the spread of two equal sides.
    service = await openSide(options.calibrate ? 'relay-b' : 'service', sims, ledgers.service, options);
    await sleep(options.warmupS * 1000);
    const { results, slices, each } = await window([relay, service], options, sims.printers.length);
    const sliceRatios: number[] = [];
    for (let i = 1; i < slices.length; i++) {
      const [r0, s0] = slices[i - 1];
      const [r1, s1] = slices[i];
      sliceRatios.push((s1.cpuUs - s0.cpuUs) / Math.max(1, r1.cpuUs - r0.cpuUs));
    }
    // What the p99s are made of: the reports both sides got late alike, and each side's tail without them.
    const shared = describeLatencies(each[1], each[0], SHARED_LATE_MS, [service.mode, 'relay']);
    return { relay: results[0], service: results[1], sliceRatios, shared };
  } finally {
    if (service) await closeSide(service);
    await closeSide(relay);
  }
}

export async function main(argv: string[]): Promise<void> {
  const options = parseArgs(argv);
  process.stdout.write(
    `bench/fleet: sizes ${options.sizes.join(', ')}; ${options.report} reports; one report per ${options.intervalMs} ms per printer; warm-up ${options.warmupS} s, window ${options.windowS} s; ` +
      `node ${process.version}, ${os.cpus().length} CPUs, load average ${f2(os.loadavg()[0])}\n`,
  );
  const rows: Array<{ service: Measurement; relay: Measurement }> = [];
  for (const n of options.sizes) {
    const ledgers = { relay: new Ledger(), service: new Ledger() };
    // Every report's latency is kept: the run says how much of its p99 both sides shared.
    ledgers.relay.each = [];
    ledgers.service.each = [];
    const both = { onReport: (info: SimReportInfo, at?: number) => (ledgers.relay.onReport(info, at), ledgers.service.onReport(info, at)) };
    const t0 = Date.now();
    const { host, fleet } = await RemoteSims.start(n, options, both);
    process.stdout.write(`N=${n}: ${n} simulators started in ${((Date.now() - t0) / 1000).toFixed(1)} s (in a process of their own)\n`);
    try {
      const { relay, service, sliceRatios, shared } = await measurePair(fleet, options, ledgers);
      process.stdout.write(`${describe(relay)}\n${describe(service)}\n${describeSlices(sliceRatios, SLICE_S, service.mode)}\n`);
      process.stdout.write(`  latency report by report (bench/fleet-latencies.ts):\n${shared.replace(/^/gm, '    ')}\n`);
      rows.push({ service, relay });
    } finally {
      await host.close();
    }
  }
  if (options.calibrate) {
    calibration(rows);
    return;
  }
  const missed = verdict(rows, { p99AtMostRelay: !options.klipper });
  process.stdout.write(`\n${table(rows)}\n`);
  if (missed) process.exitCode = 1;
}

if (require.main === module) {
  main(process.argv.slice(2)).catch((err) => {
    process.stderr.write(`${(err as Error).stack ?? err}\n`);
    process.exit(1);
  });
}
