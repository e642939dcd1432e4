/**
 * bench/fleet's side of a bench worker: the forked process (Worker, serving
 * worker-ipc.ts's protocol), the /ws client that reads its frames into a
 * Ledger, and the REST calls that register and count printers. bench/camera.ts
 * and bench/nodered.ts use them too.
 */
import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { WebSocket } from 'ws';
import type { Ledger } from './fleet-ledger';
import type { PrinterConfigSource } from './fleet-sims';
import { pool } from './pool';
import type { RelayClient } from './fleet-relay';
import type { BenchPrinter, WorkerCommand, WorkerEvent } from './fleet-worker';

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A forked bench worker (`script` in dist-bench/bench, serving worker-ipc.ts's protocol); bench/camera.ts uses it too. */
export class Worker<C extends { cmd: string } = WorkerCommand> {
  private readonly child: ChildProcess;
  private readonly waiting = new Map<string, (e: WorkerEvent) => void>();
  private sampleId = 0;
  private exited = false;

  constructor(script = 'fleet-worker.js') {
    // BENCH_WORKER_ARGS: node flags for the measured processes only, to profile them
    // (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof" or "--trace-gc"; docs/measurements.md).
    const execArgv = process.env.BENCH_WORKER_ARGS ? process.env.BENCH_WORKER_ARGS.split(' ').filter(Boolean) : process.execArgv;
    this.child = fork(path.join(__dirname, script), [], { execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
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

  start(mode: 'service' | 'relay', printers: BenchPrinter[], relayClient?: RelayClient): Promise<Extract<WorkerEvent, { ev: 'ready' }>> {
    return this.ask({ cmd: 'start', mode, printers, relayClient }, 'ready');
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

/** The /ws clients the bench closed itself (any other close is the service dropping the client). */
const closedByBench = new WeakSet<WebSocket>();

export async function connectWs(port: number, ledger: Ledger): Promise<WebSocket> {
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

export async function closeWs(ws: WebSocket): Promise<void> {
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

export async function registerPrinters(base: string, sims: PrinterConfigSource[]): Promise<void> {
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

