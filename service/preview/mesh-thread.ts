/**
 * Mesh thumbnails are rendered in worker threads (node:worker_threads): a
 * million-triangle STL costs seconds of rasterising that would otherwise hold
 * the event loop (API, /ws, printer links, the dispatcher). Each render gets
 * a worker of its own that ends with it, so stopping one is terminating it:
 * when the caller's signal aborts (the client left) or the time budget is
 * spent. At most two run at once (the rest wait their turn).
 *
 * From the compiled package the worker loads mesh-worker.js; from the
 * TypeScript sources (tests, development) it transpiles the .ts files it
 * loads with the `typescript` package on the way in.
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
let running = 0;
const waiting: (() => void)[] = [];

/** Render threads alive (a test sees a terminated one go). */
export function activeMeshRenders(): number {
  return running;
}

/** The PNG of an STL/OBJ (a path or its bytes), rendered in a worker thread. */
export async function renderMeshOffThread(input: string | Buffer, type: 'stl' | 'obj', options: MeshThreadOptions): Promise<Buffer> {
  await turn(options.signal);
  // The slot is the thread: it is given back when the thread has exited, not when the answer is known.
  const release = () => {
    running--;
    waiting.shift()?.();
  };
  return renderInWorker({ input, type, size: options.size, meshLimits: options.meshLimits, maxCoverage: options.maxCoverage }, options, release);
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

function renderInWorker(job: MeshJob, options: MeshThreadOptions, release: () => void): Promise<Buffer> {
  const { signal } = options;
  const timeoutMs = options.timeoutMs ?? MESH_RENDER_TIMEOUT_MS;
  return new Promise<Buffer>((resolve, reject) => {
    let worker: Worker;
    try {
      worker = new Worker(WORKER_BOOT, {
        eval: true,
        workerData: { entry, typescript: entry.endsWith('.ts') ? require.resolve('typescript') : null, job },
      });
    } catch (err) {
      release();
      return reject(new PreviewError('MALFORMED', `mesh renderer could not start: ${(err as Error).message}`));
    }
    let settled = false;
    const finish = (err: Error | null, png?: Buffer) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      // Terminating an ended worker is harmless; a running one stops mid-triangle.
      worker.terminate().catch(() => undefined);
      if (err) reject(err);
      else resolve(png!);
    };
    const onAbort = () => finish(aborted());
    const timer = setTimeout(() => finish(new PreviewError('TOO_LARGE', `rendering the mesh took longer than ${Math.round(timeoutMs / 1000)} s`)), timeoutMs);
    timer.unref();
    signal?.addEventListener('abort', onAbort, { once: true });
    worker.on('message', (msg: MeshJobResult) => {
      if ('png' in msg) finish(null, Buffer.from(msg.png.buffer, msg.png.byteOffset, msg.png.byteLength));
      else finish(new PreviewError(msg.error.code as PreviewErrorCode, msg.error.message));
    });
    worker.on('error', (err) => finish(new PreviewError('MALFORMED', `mesh renderer failed: ${err.message}`)));
    worker.once('exit', (code) => {
      release();
      finish(new PreviewError('MALFORMED', `mesh renderer stopped (exit ${code})`));
    });
    if (signal?.aborted) onAbort();
  });
}

const aborted = () => new PreviewError('ABORTED', 'mesh render stopped: nobody waits for it any more');
