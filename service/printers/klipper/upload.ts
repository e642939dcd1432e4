/**
 * Starting a queued print on Moonraker: one `POST /server/files/upload`
 * (multipart: root=gcodes, the file's SHA-256 as `checksum` so that a
 * damaged transfer is refused with 422 instead of printed, print=true). The
 * print itself is acknowledged by print_stats (state printing, that file).
 * Moonraker's own job_queue is left alone: an answer that says the file was
 * queued there instead of started is a refusal (the farm's queue decides
 * what prints where, not a second queue on the printer).
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { DriverError, type QueuedStart, type QueuedStartHooks } from '../driver';
import type { MoonrakerHttp } from './http';

interface UploadAnswer {
  item?: { path?: unknown };
  print_started?: unknown;
  print_queued?: unknown;
}

async function sha256Of(path: string): Promise<string> {
  const hash = createHash('sha256');
  await pipeline(createReadStream(path), hash);
  return hash.digest('hex');
}

export async function uploadAndPrint(http: MoonrakerHttp, start: QueuedStart, hooks: QueuedStartHooks, commandTimeoutMs: number): Promise<void> {
  const size = (await stat(start.localPath)).size;
  const checksum = await sha256Of(start.localPath);
  await hooks.beforeStart();
  const answer = await http.upload<UploadAnswer>(
    { fields: { root: 'gcodes', checksum, print: 'true' }, fileName: start.remoteName, localPath: start.localPath },
    // The longest silence: Moonraker answers after it has the whole file and checked it.
    Math.max(commandTimeoutMs, 30_000),
    hooks.onProgress,
  );
  hooks.onProgress?.(size, size);
  if (answer?.print_started === true) return;
  if (answer?.print_queued === true) throw new DriverError('REJECTED', "Moonraker put the file in its own job queue instead of starting it (the printer was busy); Printfarm does not use Moonraker's job queue");
  throw new DriverError('REJECTED', 'Moonraker stored the file but did not start the print (is Klipper ready?)');
}
