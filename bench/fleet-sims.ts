/**
 * bench/fleet's simulated printers: what they send (--report), starting N of
 * them, and the simulator host process seen from bench/fleet.ts (RemoteSims,
 * serving bench/fleet-sims-worker.ts).
 */
import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { BambuSimulator, type SimReportInfo, type SimTlsCredentials } from '../service/simulators/bambu';
import { KlipperSimulator } from '../service/simulators/klipper';
import type { ReportSink } from './fleet-ledger';
import { klipperBenchPrinter } from './fleet-klipper';
import type { RelayClient } from './fleet-relay';
import type { BenchPrinter } from './fleet-worker';
import { pool } from './pool';

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
  /** --latencies: where each side's reports of the window go (bench/fleet.ts). */
  latencies?: string;
  /** --relay-client: the relay's MQTT client (bench/fleet-relay.ts; default the driver's). */
  relayClient?: RelayClient;
  /** --calibrate: the relay against a second relay instead of the service (bench/fleet.ts). */
  calibrate?: boolean;
}


const MODELS = ['X1C', 'P1S', 'A1'];

/** The model of the bench's printer number `i` (from 0; its id is bench-{i + 1}, four digits). */
export const benchModelOf = (i: number, report: ReportMode): string => (report === 'full' ? 'X1C' : MODELS[i % MODELS.length]);

/** Four AMS units with a spool in every tray: what a full X1C report describes. */
const FULL_AMS = Array.from({ length: 16 }, (_, slot) => ({ slot, type: ['PLA', 'PETG', 'ABS', 'PLA'][slot % 4], color: ['#FFFFFF', '#000000', '#FF6A13', '#00AE42'][slot % 4] }));

/**
 * The options of a bench printer that only reports: a new nozzle temperature each report (so that each
 * one is told apart), spread evenly over the interval, no FTPS, control API or camera, one shared
 * certificate (generating one per printer is the slow part). bench/soak-harness.ts uses them too.
 */
export function benchReporting(i: number, n: number, intervalMs: number, tls: SimTlsCredentials, sink: ReportSink) {
  return {
    reportIntervalMs: intervalMs,
    // Independent printers: spread evenly over the report interval, not all in the same millisecond.
    reportPhaseMs: Math.round((i / n) * intervalMs),
    tls,
    ftps: false,
    control: false,
    camera: false,
    benchReports: true,
    onReport: (info: SimReportInfo) => sink.onReport(info),
  };
}

export async function startSimulators(n: number, options: Options, tls: SimTlsCredentials, ledger: ReportSink): Promise<BambuSimulator[]> {
  const ids = Array.from({ length: n }, (_, i) => i);
  return pool(ids, 50, async (i) => {
    const model = benchModelOf(i, options.report);
    const full = options.report !== 'delta' && model === 'X1C';
    const sim = await BambuSimulator.start({
      id: `bench-${String(i + 1).padStart(4, '0')}`,
      name: `Bench ${model} #${i + 1}`,
      model,
      ...(full ? { amsUnits: 4, benchFullEvery: 1, realSizeReports: true } : {}),
      ...benchReporting(i, n, options.intervalMs, tls, ledger),
    });
    if (full) sim.applyMaterials({ materials: FULL_AMS });
    return sim;
  });
}

export type BenchSim = BambuSimulator | KlipperSimulator;

export const benchPrinterOf = (s: BenchSim): BenchPrinter =>
  s instanceof KlipperSimulator ? klipperBenchPrinter(s) : { id: s.id, serial: s.serial, access_code: s.accessCode, mqtt_port: s.mqttPort };

/** What registerPrinters posts: a simulator, or the configuration the simulator host sent for one. */
export interface PrinterConfigSource {
  printerConfig(): { id: string };
}

/** The simulators of one N as the measuring side needs them: how to reach each, and what to register. */
export interface SimFleet {
  printers: BenchPrinter[];
  sources: PrinterConfigSource[];
}

export const fleetOf = (sims: BenchSim[]): SimFleet => ({ printers: sims.map(benchPrinterOf), sources: sims });

type HostEvent =
  | { ev: 'ready'; printers: BenchPrinter[]; configs: Array<{ id: string }> }
  | { ev: 'reports'; ids: string[]; nozzles: number[]; at: number[] }
  | { ev: 'closed' }
  | { ev: 'error'; message: string };

/**
 * The simulator host collects its garbage on its own thread. It makes a lot: every report is made, serialised
 * and encrypted twice, about 10 MB between scavenges 40 to 90 ms apart at 1000 printers. With V8's
 * default, each scavenge ran on both cores of a 2-CPU machine for 4 to 10 ms, and its marking every few
 * seconds ran helper threads for 80 to 110 ms: the measured processes and their /ws readers lost the cores
 * together, and those stalls made most of the p99 of both sides (docs/measurements.md, session 18). On its
 * own thread a collection only delays the host's next reports, which are timed from when they leave.
 */
const SIM_HOST_NODE_FLAGS = ['--single-threaded-gc'];

/**
 * The simulator host (bench/fleet-sims-worker.ts) seen from here: it starts the simulators and hands every
 * report's send time to `sink`, converted from the machine's monotonic clock to this process's
 * performance.now().
 */
export class RemoteSims {
  private readonly child: ChildProcess;
  private readonly waiting = new Map<string, { resolve: (e: HostEvent) => void; reject: (err: Error) => void }>();
  /** This process's performance.now() minus the monotonic clock, both in ms. */
  private readonly offset = performance.now() - Number(process.hrtime.bigint()) / 1e6;

  private constructor(sink: ReportSink) {
    this.child = fork(path.join(__dirname, 'fleet-sims-worker.js'), [], { execArgv: [...process.execArgv, ...SIM_HOST_NODE_FLAGS], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    this.child.on('message', (raw) => {
      const e = raw as HostEvent;
      if (e.ev === 'reports') {
        for (let i = 0; i < e.ids.length; i++) sink.onReport({ id: e.ids[i], serial: '', sequence: 0, full: false, nozzle: e.nozzles[i] }, e.at[i] + this.offset);
        return;
      }
      // An error answers whatever was asked.
      const key = e.ev === 'error' ? ([...this.waiting.keys()][0] ?? '') : e.ev;
      const waiter = this.waiting.get(key);
      if (!waiter) return;
      this.waiting.delete(key);
      if (e.ev === 'error') waiter.reject(new Error(`simulator host: ${e.message}`));
      else waiter.resolve(e);
    });
    this.child.on('exit', () => {
      for (const w of this.waiting.values()) w.reject(new Error('simulator host exited'));
      this.waiting.clear();
    });
  }

  private ask(command: object, answer: string): Promise<HostEvent> {
    return new Promise((resolve, reject) => {
      this.waiting.set(answer, { resolve, reject });
      this.child.send(command);
    });
  }

  static async start(n: number, options: Options, sink: ReportSink): Promise<{ host: RemoteSims; fleet: SimFleet }> {
    const host = new RemoteSims(sink);
    try {
      const ready = (await host.ask({ cmd: 'start', n, options }, 'ready')) as Extract<HostEvent, { ev: 'ready' }>;
      return { host, fleet: { printers: ready.printers, sources: ready.configs.map((config) => ({ printerConfig: () => config })) } };
    } catch (err) {
      await host.close();
      throw err;
    }
  }

  async close(): Promise<void> {
    if (this.child.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    await Promise.race([this.ask({ cmd: 'close' }, 'closed').catch(() => undefined), new Promise((r) => setTimeout(r, 20_000))]);
    const kill = setTimeout(() => this.child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(kill);
  }
}
