/**
 * Runs in a worker thread (see mesh-thread.ts): loads, parses and renders one
 * STL/OBJ to PNG, posts the PNG (or the PreviewError's code and message) and
 * ends. Everything here may take seconds; none of it holds the event loop.
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

if (parentPort && workerData?.job) {
  const port = parentPort;
  void run(workerData.job as MeshJob).then((result) => port.postMessage(result));
}
