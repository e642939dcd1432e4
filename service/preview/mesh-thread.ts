/**
 * Mesh thumbnails are rendered in worker threads (node:worker_threads): a
 * million-triangle STL costs seconds of rasterising that would otherwise hold
 * the event loop (API, /ws, printer links, the dispatcher). At most two
 * threads render at once (more renders wait their turn); a thread that
 * finished a render is kept for the next one (30 s at most), because ending a
 * thread costs its heap's teardown. Stopping a render is terminating its
 * thread: when the caller's signal aborts (the client left) or the time
 * budget is spent.
 *
 * From the compiled package the threads load mesh-worker.js; from the
 * TypeScript sources (tests, development) they transpile the .ts files they
 * load with the `typescript` package on the way in.
 */
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { PreviewError, type PreviewErrorCode } from './errors';
import type { MeshLimits } from './mesh';
import type { MeshJob, MeshJobResult } from './mesh-worker';

export interface MeshThreadOptions {
  size: number;
  meshLimits?: MeshLimits;
  maxCoverage?: number;
  /** Aborting terminates the render (ABORTED). */
  signal?: AbortSignal;
  /** Longest a render may take (default 60 s; TOO_LARGE after that). */
  timeoutMs?: number;
}

export const MESH_RENDER_TIMEOUT_MS = 60_000;
const MAX_PARALLEL = 2;
const IDLE_MS = 30_000;

const WORKER_BOOT = `
const { workerData } = require('node:worker_threads');
if (workerData.entry.endsWith('.ts')) {
  const fs = require('node:fs');
  const ts = require(workerData.typescript);
  const options = { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true };
  require.extensions['.ts'] = (module, filename) => {
    module._compile(ts.transpileModule(fs.readFileSync(filename, 'utf8'), { fileName: filename, compilerOptions: options }).outputText, filename);
  };
}
require(workerData.entry);
`;

const entry = path.join(__dirname, `mesh-worker${path.extname(__filename)}`);

interface RenderThread {
  worker: Worker;
  exited: boolean;
  idleTimer: NodeJS.Timeout | null;
  /** The job running, answered by id. */
  pending: { id: number; done: (msg: MeshJobResult | Error) => void } | null;
}

/** Renders running, counting a stopped one until its thread has exited. */
let running = 0;
let nextId = 0;
const idle: RenderThread[] = [];
const waiting: (() => void)[] = [];

/** Renders still running (a test sees a stopped one go once its thread has exited). */
export function activeMeshRenders(): number {
  return running;
}

/** The PNG of an STL/OBJ (a path or its bytes), rendered in a worker thread. */
export async function renderMeshOffThread(input: string | Buffer, type: 'stl' | 'obj', options: MeshThreadOptions): Promise<Buffer> {
  await turn(options.signal);
  const thread = idle.pop() ?? startThread();
  if (thread.idleTimer) clearTimeout(thread.idleTimer);
  thread.idleTimer = null;
  thread.worker.ref();
  const job: MeshJob = { input, type, size: options.size, meshLimits: options.meshLimits, maxCoverage: options.maxCoverage };
  const outcome = await runJob(thread, job, options);
  if (outcome instanceof Error) throw outcome;
  return outcome;
}

function release(): void {
  running--;
  waiting.shift()?.();
}

/** Takes a free slot, waiting for one; rejects ABORTED when the caller leaves first. */
function turn(signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(aborted());
  if (running < MAX_PARALLEL && waiting.length === 0) {
    running++;
    return Promise.resolve();
  }
  return new Promise((resolve, reject) => {
    const go = () => {
      signal?.removeEventListener('abort', leave);
      running++;
      resolve();
    };
    const leave = () => {
      const at = waiting.indexOf(go);
      if (at >= 0) waiting.splice(at, 1);
      reject(aborted());
    };
    waiting.push(go);
    signal?.addEventListener('abort', leave, { once: true });
  });
}

function startThread(): RenderThread {
  const worker = new Worker(WORKER_BOOT, { eval: true, workerData: { entry, typescript: entry.endsWith('.ts') ? require.resolve('typescript') : null } });
  const thread: RenderThread = { worker, exited: false, idleTimer: null, pending: null };
  worker.on('message', (msg: { id: number; result: MeshJobResult }) => {
    if (thread.pending?.id === msg.id) thread.pending.done(msg.result);
  });
  worker.on('error', (err) => thread.pending?.done(new PreviewError('MALFORMED', `mesh renderer failed: ${err.message}`)));
  worker.once('exit', (code) => {
    thread.exited = true;
    const at = idle.indexOf(thread);
    if (at >= 0) idle.splice(at, 1);
    if (thread.idleTimer) clearTimeout(thread.idleTimer);
    thread.pending?.done(new PreviewError('MALFORMED', `mesh renderer stopped (exit ${code})`));
  });
  return thread;
}

/** Runs one job on a thread; the slot is given back when the job ends (or, when it is stopped, when the thread has exited). */
function runJob(thread: RenderThread, job: MeshJob, options: MeshThreadOptions): Promise<Buffer | Error> {
  const { signal } = options;
  const timeoutMs = options.timeoutMs ?? MESH_RENDER_TIMEOUT_MS;
  const id = nextId++;
  return new Promise((resolve) => {
    let settled = false;
    const finish = (outcome: Buffer | Error, keepThread: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      thread.pending = null;
      if (keepThread) {
        thread.worker.unref();
        thread.idleTimer = setTimeout(() => void thread.worker.terminate().catch(() => undefined), IDLE_MS);
        thread.idleTimer.unref();
        idle.push(thread);
        release();
      } else {
        // Stopped mid-render: the thread goes, and its slot with it once it has exited.
        if (thread.exited) release();
        else thread.worker.once('exit', release);
        thread.worker.terminate().catch(() => undefined);
      }
      resolve(outcome);
    };
    const onAbort = () => finish(aborted(), false);
    const timer = setTimeout(() => finish(new PreviewError('TOO_LARGE', `rendering the mesh took longer than ${Math.round(timeoutMs / 1000)} s`), false), timeoutMs);
    timer.unref();
    thread.pending = {
      id,
      done: (msg) => {
        if (msg instanceof Error) return finish(msg, false);
        if ('png' in msg) finish(Buffer.from(msg.png.buffer, msg.png.byteOffset, msg.png.byteLength), true);
        else finish(new PreviewError(msg.error.code as PreviewErrorCode, msg.error.message), true);
      },
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    if (signal?.aborted) return onAbort();
    thread.worker.postMessage({ id, job });
  });
}

const aborted = () => new PreviewError('ABORTED', 'mesh render stopped: nobody waits for it any more');
