/**
 * bench/fleet's side of a bench worker: the forked process (Worker, serving
 * worker-ipc.ts's protocol), the /ws client that reads its frames into a
 * Ledger (in a thread of its own, fleet-receiver.ts), and the REST calls that
 * register and count printers. bench/camera.ts and bench/nodered.ts use them
 * too.
 */
import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { Worker as Thread } from 'node:worker_threads';
import type { Ledger } from './fleet-ledger';
import type { ReceiverData, ReceiverEvent } from './fleet-receiver';
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

/**
 * A measured process's /ws client, read in a thread of its own (fleet-receiver.ts): each frame is timed as it
 * arrives there and handed to `ledger` with that time.
 */
export class FrameReceiver {
  private readonly thread: Thread;
  /** This thread's performance.now() minus the monotonic clock, both in ms (the receiver times frames on the latter). */
  private readonly offset = performance.now() - Number(process.hrtime.bigint()) / 1e6;
  private readonly exited: Promise<void>;

  private constructor(port: number, ledger: Ledger, opened: (err?: Error) => void) {
    this.thread = new Thread(path.join(__dirname, 'fleet-receiver.js'), { workerData: { port } satisfies ReceiverData });
    this.exited = new Promise((resolve) => this.thread.once('exit', () => resolve()));
    this.thread.on('message', (e: ReceiverEvent) => {
      switch (e.ev) {
        case 'open':
          return opened();
        case 'frames':
          for (let i = 0; i < e.ids.length; i++) ledger.onFrame(e.ids[i], e.nozzles[i], e.at[i] + this.offset);
          return;
        case 'unmatched':
          ledger.unmatched += e.count;
          return;
        case 'dropped':
          // A client the service drops (it read too slowly: the machine is overloaded) loses every later frame: say so.
          process.stderr.write(`bench/fleet: the /ws client was disconnected (code ${e.code}); its later frames count as lost\n`);
          return;
        case 'error':
          return opened(new Error(`/ws client: ${e.message}`));
      }
    });
    this.thread.once('error', (err) => opened(err));
    this.thread.once('exit', () => opened(new Error('/ws client thread exited')));
  }

  static async connect(port: number, ledger: Ledger): Promise<FrameReceiver> {
    let receiver: FrameReceiver | null = null;
    try {
      await new Promise<void>((resolve, reject) => {
        receiver = new FrameReceiver(port, ledger, (err) => (err ? reject(err) : resolve()));
      });
      return receiver!;
    } catch (err) {
      await (receiver as FrameReceiver | null)?.close();
      throw err;
    }
  }

  /** Closes the client; its last frames reach the ledger first. */
  async close(): Promise<void> {
    this.thread.postMessage({ cmd: 'close' });
    const cut = setTimeout(() => void this.thread.terminate(), 5000);
    await this.exited;
    clearTimeout(cut);
  }
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

