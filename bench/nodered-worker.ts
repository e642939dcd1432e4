/**
 * The process under measurement in bench/nodered.ts: Node-RED 4.1 with this
 * pack (from dist/, as `npm start` loads it) and one flow, as the farm flow
 * has it: the config node running the service embedded, one printer node
 * watching all printers (every report), a function node that stamps each
 * msg, and an inactive debug node at the end. A listener on that debug node
 * takes the time each msg arrives and sends (printer id, nozzle, time) to the
 * parent in batches. It measures its own CPU when asked, so the simulators
 * and the parent are not counted.
 *
 * IPC: parent -> {cmd: 'start'} | {cmd: 'sample', id} | {cmd: 'close'};
 * worker -> {ev: 'ready', port} | {ev: 'msgs', msgs: [id, nozzle, epochMs][]} |
 * {ev: 'sample', ...} | {ev: 'closed'} | {ev: 'error', message}.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { serveBenchWorker } from './worker-ipc';

export type NodeRedCommand = { cmd: 'start' } | { cmd: 'sample'; id: number } | { cmd: 'close' };
export type NodeRedEvent =
  | { ev: 'ready'; port: number }
  | { ev: 'msgs'; msgs: [string, number, number][] }
  | { ev: 'sample'; id: number; cpuUs: number; wallMs: number; epochMs: number; rssMb: number; loopP99Ms: number }
  | { ev: 'closed' }
  | { ev: 'error'; message: string };

// dist-bench/bench/ -> the project root; the pack's nodes are the ones `npm run build` made in dist/.
const root = path.join(__dirname, '..', '..');
const send = (event: NodeRedEvent) => process.send?.(event);
/** One clock for both processes: milliseconds since the epoch, sub-millisecond. */
const epochNow = () => performance.timeOrigin + performance.now();

interface Running {
  port: number;
  close(): Promise<void>;
}

const FLOW = [
  { id: 'bench-tab', type: 'tab', label: 'bench' },
  { id: 'bench-srv', type: 'printfarm-server', name: 'bench', mode: 'embedded', url: '', port: 0, expose: false, host: '', dataDir: '', demo: false, logLevel: 'silent', pollInterval: 30 },
  { id: 'bench-all', type: 'printfarm-printer', z: 'bench-tab', name: 'all printers', server: 'bench-srv', printer: '', register: false, updates: 'every', throttle: 10, x: 120, y: 80, wires: [['bench-stamp']] },
  { id: 'bench-stamp', type: 'function', z: 'bench-tab', name: 'stamp', func: 'msg.stamped = Date.now();\nreturn msg;', outputs: 1, timeout: 0, noerr: 0, initialize: '', finalize: '', libs: [], x: 320, y: 80, wires: [['bench-sink']] },
  { id: 'bench-sink', type: 'debug', z: 'bench-tab', name: 'sink', active: false, tosidebar: true, console: false, tostatus: false, complete: 'false', targetType: 'full', x: 500, y: 80, wires: [] },
];

async function startNodeRed(): Promise<Running> {
  if (!fs.existsSync(path.join(root, 'dist', 'nodes', 'printfarm-server.js'))) throw new Error('the pack is not built: run `npm run build` first');
  const userDir = fs.mkdtempSync(path.join(os.tmpdir(), 'printfarm-bench-nodered-'));
  const dataDir = path.join(userDir, 'printfarm');
  fs.writeFileSync(path.join(userDir, 'flows.json'), JSON.stringify(FLOW.map((n) => (n.id === 'bench-srv' ? { ...n, dataDir } : n))));
  /* eslint-disable @typescript-eslint/no-require-imports */
  const RED = require('node-red');
  const { driverFactory } = require(path.join(root, 'dist', 'service', 'printers', 'drivers'));
  /* eslint-enable @typescript-eslint/no-require-imports */
  const server = http.createServer((req, res) => RED.httpAdmin(req, res, () => RED.httpNode(req, res, () => res.writeHead(404).end())));
  RED.init(server, {
    userDir,
    flowFile: 'flows.json',
    nodesDir: [root],
    uiPort: 0,
    uiHost: '127.0.0.1',
    httpAdminRoot: '/',
    httpNodeRoot: '/',
    credentialSecret: 'bench',
    telemetry: { enabled: false },
    editorTheme: { tours: false },
    logging: { console: { level: 'warn', metrics: false, audit: false } },
    // As in bench/fleet's service: quick reconnects, a watchdog that a busy second does not trip.
    printfarmServerOptions: {
      env: {},
      updateCheckUrl: 'http://127.0.0.1:9/unreachable',
      updateCheckTimeout: 1,
      driverFactory: driverFactory({ backoffBaseMs: 100, backoffMaxMs: 1000 }),
      fleet: { watchdogMs: 15_000, commandTimeoutMs: 3000, connectTimeoutMs: 15_000 },
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  await RED.start();
  const deadline = Date.now() + 30_000;
  let config: { address?: string } | null = null;
  while (!(config = RED.nodes.getNode('bench-srv') as { address?: string } | null)?.address) {
    if (Date.now() > deadline) throw new Error('the embedded service did not start');
    await new Promise((r) => setTimeout(r, 100));
  }
  // Every msg that reached the end of the flow, in batches (one IPC message per 100 ms, not per msg).
  let batch: [string, number, number][] = [];
  RED.nodes.getNode('bench-sink').on('input', (msg: { payload?: { id?: string; temperatures?: { nozzle?: number } } }) => {
    const at = epochNow();
    const id = msg.payload?.id;
    const nozzle = msg.payload?.temperatures?.nozzle;
    if (typeof id === 'string' && typeof nozzle === 'number') batch.push([id, nozzle, at]);
  });
  const flush = setInterval(() => {
    if (!batch.length) return;
    send({ ev: 'msgs', msgs: batch });
    batch = [];
  }, 100);
  return {
    port: Number(new URL(config.address!).port),
    close: async () => {
      clearInterval(flush);
      await RED.stop();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      fs.rmSync(userDir, { recursive: true, force: true });
    },
  };
}

serveBenchWorker<NodeRedCommand, Running>({
  start: (msg) => startNodeRed(),
  sampleExtra: () => ({ epochMs: epochNow() }),
});
