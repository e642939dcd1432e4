/**
 * Node tests: node-red-node-test-helper with the pack's nodes (loaded from
 * their TypeScript sources), the real en-US catalogs as RED._ (the helper's
 * own RED._ returns the key), flows with a tab so that Catch and Status nodes
 * work, and a collector for the messages a helper node receives.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { driverFactory } from '../../service/printers/drivers';
import { startFarm, type FarmOptions, type SimulatedFarm } from '../../service/simulators';
import { control, simState } from './farm';
import fileDownload = require('../../nodes/printfarm-file-download');
import gcodePreview = require('../../nodes/printfarm-gcode-preview');
import jobWatcher = require('../../nodes/printfarm-job-watcher');
import printer = require('../../nodes/printfarm-printer');
import printfarmServer = require('../../nodes/printfarm-server');
import queue = require('../../nodes/printfarm-queue');
import stats = require('../../nodes/printfarm-stats');
import events = require('../../nodes/printfarm-events');

/** The part of node-red-node-test-helper the tests use (its DefinitelyTyped package pulls the DOM types into the whole program). */
export interface TestNode {
  id: string;
  type: string;
  credentials: Record<string, unknown>;
  receive(msg: Record<string, unknown>): void;
  on(event: string, listener: (...args: any[]) => void): TestNode; // eslint-disable-line @typescript-eslint/no-explicit-any
  /** Node.prototype methods that the helper wraps in sinon spies (shared by every node: filter by thisValue). */
  status: Spy;
  error: Spy;
  warn: Spy;
  log: Spy;
  [key: string]: unknown;
}
interface Spy {
  (...args: unknown[]): void;
  getCalls(): { thisValue: unknown; args: unknown[] }[];
}
export interface NodeTestHelper {
  init(runtimePath: string, settings?: Record<string, unknown>): void;
  settings(settings: Record<string, unknown>): Record<string, unknown>;
  load(nodes: unknown, flow: FlowNode[], credentials?: Record<string, Record<string, unknown>>): Promise<void>;
  /** A deploy of the loaded nodes ('full', 'flows' or 'nodes'), as the editor's Deploy button does. */
  setFlows(flow: FlowNode[], type: 'full' | 'flows' | 'nodes', credentials?: Record<string, Record<string, unknown>>): Promise<void>;
  unload(): Promise<void>;
  startServer(): Promise<void>;
  stopServer(): Promise<void>;
  getNode(id: string): TestNode;
  /** supertest on the admin app. */
  request(): { get(url: string): PromiseLike<{ status: number; body: any }> }; // eslint-disable-line @typescript-eslint/no-explicit-any
}
export type FlowNode = { id: string; type: string; z?: string; wires?: string[][]; [key: string]: unknown };

// eslint-disable-next-line @typescript-eslint/no-require-imports
export const helper = require('node-red-node-test-helper') as NodeTestHelper;
helper.init(require.resolve('node-red'));

/**
 * The test helper's setFlows waits 300 ms for Node-RED's flows:started, and starts listening only once the
 * runtime's setFlows has resolved (the flows stop, then start on their own). On a loaded machine the start
 * of a farm's flow takes longer and the deploy failed with "timeout waiting event". This deploys the same way
 * (the runtime's setFlows, then its flows:started), listening from before the deploy and allowing as long as
 * the flows' own start may take.
 */
const FLOWS_START_LIMIT_MS = 10_000;
helper.setFlows = async function setFlows(flow, type, credentials) {
  const internals = helper as unknown as {
    _events: NodeJS.EventEmitter;
    _redNodes: { setFlows(flow: FlowNode[], credentials: Record<string, unknown>, type: string): Promise<unknown> };
  };
  let onStarted: (() => void) | undefined;
  let timer: NodeJS.Timeout | undefined;
  const started = new Promise<void>((resolve, reject) => {
    onStarted = resolve;
    timer = setTimeout(() => reject(new Error(`flows:started not seen within ${FLOWS_START_LIMIT_MS} ms of a '${type}' deploy`)), FLOWS_START_LIMIT_MS);
    internals._events.once('flows:started', onStarted);
  });
  // Awaited below; a limit passed while the runtime's setFlows still runs must not count as unhandled.
  started.catch(() => {});
  try {
    await internals._redNodes.setFlows(flow, credentials ?? {}, type);
    await started;
  } finally {
    clearTimeout(timer);
    internals._events.off('flows:started', onStarted!);
  }
};

const LOCALES = path.join(__dirname, '..', '..', 'locales');
const catalogs = new Map<string, Record<string, unknown>>();
/** Keys the nodes asked for that no catalog has. */
export const missingKeys = new Set<string>();

function catalog(lang: string, set: string): Record<string, unknown> | undefined {
  const key = `${lang}/${set}`;
  if (!catalogs.has(key)) {
    const file = path.join(LOCALES, lang, `${set}.json`);
    catalogs.set(key, fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, 'utf8')) : {});
  }
  return catalogs.get(key);
}

/** RED._ as Node-RED does it for this pack (i18next with __name__ substitutions), reading locales/<lang>/<type>.json. */
export function translate(key: string, subs: Record<string, unknown> = {}, lang = 'en-US'): string {
  const parts = key.split('.');
  let value: unknown = catalog(lang, parts[0]);
  for (const p of parts) value = (value as Record<string, unknown> | undefined)?.[p];
  if (typeof value !== 'string') {
    missingKeys.add(key);
    return key;
  }
  return value.replace(/__(\w+)__/g, (_m, name: string) => (name in subs ? String(subs[name]) : `__${name}__`));
}

type NodeModule = (RED: { _: unknown }) => unknown;
const withCatalogs = (fn: NodeModule): NodeModule => (RED) => {
  RED._ = translate;
  return fn(RED);
};

/** Every node type of the pack. */
export const NODES = [printfarmServer, printer, jobWatcher, fileDownload, gcodePreview, stats, queue, events].map((fn) => withCatalogs(fn as unknown as NodeModule));

const madeDirs: string[] = [];
/** A fresh temp dir, removed after the test file. */
export function tempDir(prefix = 'printfarm-nodes-'): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  madeDirs.push(dir);
  return dir;
}
afterAll(() => {
  for (const dir of madeDirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

/** A tab, the config node (embedded on 127.0.0.1:0 in a fresh temp dir unless overridden) and the given nodes on the tab. */
export function flow(nodes: FlowNode[], server: Record<string, unknown> = {}): FlowNode[] {
  return [
    { id: 'tab', type: 'tab', label: 'farm' },
    { id: 'srv', type: 'printfarm-server', name: 'farm', mode: 'embedded', url: '', port: 0, host: '127.0.0.1', dataDir: tempDir(), demo: false, logLevel: 'silent', pollInterval: 30, ...server },
    ...nodes.map((n) => ({ z: 'tab', ...n })),
  ];
}

export interface Collector {
  messages: Record<string, any>[]; // eslint-disable-line @typescript-eslint/no-explicit-any
  /** The first message (received or coming) that matches, or a rejection after `ms`. */
  next(match?: (m: Record<string, any>) => boolean, ms?: number): Promise<Record<string, any>>; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/** Collects what a helper node receives (assertions stay outside Node-RED's listeners, which swallow them). */
export function collect(node: TestNode): Collector {
  const messages: Record<string, unknown>[] = [];
  const waiters: { match: (m: Record<string, unknown>) => boolean; resolve: (m: Record<string, unknown>) => void }[] = [];
  node.on('input', (msg: Record<string, unknown>) => {
    messages.push(msg);
    for (const w of [...waiters]) {
      if (w.match(msg)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(msg);
      }
    }
  });
  return {
    messages,
    next(match = () => true, ms = 10_000) {
      const seen = messages.find(match);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const waiter = {
          match,
          resolve: (m: Record<string, unknown>) => {
            clearTimeout(timer);
            resolve(m);
          },
        };
        const timer = setTimeout(() => {
          waiters.splice(waiters.indexOf(waiter), 1);
          reject(new Error(`no matching message within ${ms} ms; got ${JSON.stringify(messages.map((m) => [m.topic, m.event, (m.payload as { status?: unknown } | undefined)?.status].filter((v) => v !== undefined)))}`));
        }, ms);
        waiters.push(waiter);
      });
    },
  };
}

/**
 * The first printer_status message (of `collector`) with the printer's link up: the printer registered and
 * connected. Not status 'online': a simulator keeps what the last test left, and after a run the reset
 * cancelled (FAILED, the cancel's print_error cleared) a service with a fresh data dir shows that printer
 * `error`. 'online' is then only the moment between the link's connect and its first report, which a node's
 * monitor (reading the printer list after the node registered the printer, or on a frame of a printer it does
 * not know yet) may never see. Whatever the status, a link that is up says `connected`.
 */
export function linkUp(collector: Collector, ms = 20_000): Promise<Record<string, any>> { // eslint-disable-line @typescript-eslint/no-explicit-any
  return collector.next((m) => m.event === 'printer_status' && m.payload?.connection_status === 'connected', ms);
}

export type Status = { fill?: string; shape?: string; text?: string };

/** Every status the node has shown, oldest first. */
export function statusesOf(node: TestNode): Status[] {
  return node.status
    .getCalls()
    .filter((c) => c.thisValue === node)
    .map((c) => c.args[0] as Status);
}

/** The node's latest status object. */
export function statusOf(node: TestNode): Status {
  const all = statusesOf(node);
  return all[all.length - 1] ?? {};
}

/** What the node passed to this.error / this.warn. */
export function callsOf(node: TestNode, method: 'error' | 'warn' | 'log'): unknown[][] {
  return node[method]
    .getCalls()
    .filter((c) => c.thisValue === node)
    .map((c) => c.args);
}

/** The embedded service's options in node tests: no update check, quick reconnects, a quick fleet. */
export const SERVICE_OPTIONS = {
  env: {},
  updateCheckUrl: 'http://127.0.0.1:9/unreachable',
  updateCheckTimeout: 1,
  driverFactory: driverFactory({ backoffBaseMs: 100, backoffMaxMs: 1000 }),
  fleet: { watchdogMs: 1500, commandTimeoutMs: 3000, pollMs: 200, connectTimeoutMs: 4000 },
  discovery: { ssdpPort: 0 },
};

/**
 * The set-up of a describe block whose nodes talk to simulated printers: the
 * simulators for the whole block (closed after it, which then checks that no
 * node asked for a missing catalog key), a Node-RED test server whose
 * embedded service gets `serviceOptions` around each test, and after each
 * test the flow unloaded and `reset` run to put the simulators back. The farm
 * it returns reads the running simulators (so call it in the describe body).
 */
export function nodeTestFarm(options: FarmOptions, serviceOptions: Record<string, unknown>, reset: (farm: SimulatedFarm) => Promise<void>): SimulatedFarm {
  let started: SimulatedFarm | undefined;
  const running = () => {
    if (!started) throw new Error('the simulators are not running (use the farm inside tests and hooks)');
    return started;
  };
  beforeAll(async () => {
    started = await startFarm(options);
  });
  afterAll(async () => {
    await running().close();
    expect([...missingKeys]).toEqual([]);
  });
  beforeEach(async () => {
    helper.settings({ printfarmServerOptions: serviceOptions });
    await helper.startServer();
  });
  afterEach(async () => {
    await helper.unload();
    await helper.stopServer();
    await reset(running());
  });
  return {
    get printers() {
      return running().printers;
    },
    close: () => running().close(),
  };
}

/** Cancels what the simulator prints (or pauses, prepares), if anything. */
export async function cancelPrint(controlUrl: string): Promise<void> {
  if (/print|paus|prepar|running/i.test((await simState(controlUrl)).status)) await control(controlUrl, 'cancel');
}

/** A printer node 'p1' that registers simulator `index` (its access code goes in as a credential: `printerCredentials`). */
export function printerNode(farm: SimulatedFarm, index: number, extra: Record<string, unknown> = {}): FlowNode {
  const p = farm.printers[index].printer as Record<string, unknown>;
  return {
    id: 'p1',
    type: 'printfarm-printer',
    name: '',
    server: 'srv',
    printer: p.id,
    register: true,
    printerName: p.name,
    printerType: p.type,
    model: p.model ?? '',
    ipAddress: p.ip_address,
    serialNumber: p.serial_number ?? '',
    mqttPort: p.mqtt_port ?? '',
    ftpsPort: p.ftps_port ?? '',
    httpPort: p.http_port ?? '',
    wires: [['out']],
    ...extra,
  };
}

/** The credentials of printer node `id` that registers simulator `index`. */
export const printerCredentials = (farm: SimulatedFarm, index: number, id = 'p1') => ({ [id]: { accessCode: farm.printers[index].printer.access_code as string } });

/**
 * A flow whose printer node 'reg' registers simulator 0 (so the service knows
 * it; no model) and sends its state to the helper 'online', then `nodes`.
 * Deploy it with `printerCredentials(farm, 0, 'reg')`.
 */
export function withRegisteredPrinter(farm: SimulatedFarm, nodes: FlowNode[]): FlowNode[] {
  return flow([printerNode(farm, 0, { id: 'reg', model: '', httpPort: '', wires: [['online']] }), { id: 'online', type: 'helper' }, ...nodes], { dataDir: tempDir() });
}

export { control, simState, until } from './farm';
