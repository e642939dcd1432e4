/**
 * Runs in a worker thread (see mesh-thread.ts): for each job it is sent,
 * loads, parses and renders one STL/OBJ to PNG and posts the PNG (or the
 * PreviewError's code and message). Everything here may take seconds; none
 * of it holds the service's event loop.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { PreviewError } from './errors';
import { loadMeshFile, parseMesh, type MeshLimits } from './mesh';
import { renderMeshPng } from './render';

export interface MeshJob {
  /** A file path, or the file's bytes (copied to the worker). */
  input: string | Uint8Array;
  type: 'stl' | 'obj';
  size: number;
  meshLimits?: MeshLimits;
  maxCoverage?: number;
}

export type MeshJobResult = { png: Uint8Array } | { error: { code: string; message: string } };

async function run(job: MeshJob): Promise<MeshJobResult> {
  try {
    const data = await loadMeshFile(typeof job.input === 'string' ? job.input : Buffer.from(job.input.buffer, job.input.byteOffset, job.input.byteLength));
    const mesh = parseMesh(data, job.type, job.meshLimits);
    const png = renderMeshPng(mesh, { width: job.size, height: job.size, maxCoverage: job.maxCoverage });
    return { png: new Uint8Array(png.buffer, png.byteOffset, png.byteLength) };
  } catch (err) {
    return { error: { code: err instanceof PreviewError ? err.code : 'ERROR', message: (err as Error).message } };
  }
}

// One job at a time per thread; the thread stays for the next one (a thread's start and end cost more than a small render).
if (parentPort && workerData?.entry) {
  const port = parentPort;
  port.on('message', (msg: { id: number; job: MeshJob }) => {
    void run(msg.job).then((result) => port.postMessage({ id: msg.id, result }));
  });
}
