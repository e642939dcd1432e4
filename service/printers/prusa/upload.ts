/**
 * Starting a queued print on PrusaLink (QUEUE.md): one
 * `PUT /api/v1/files/usb/<name>` with `Print-After-Upload: ?1` uploads the
 * file and starts it. A 409 means the printer is not at its home, print
 * preview or print-finished screen: it rejects with REJECTED (the dispatcher
 * tells the user in words and does not retry in a loop).
 */
import { stat } from 'node:fs/promises';
import type { QueuedStart, QueuedStartHooks } from '../driver';
import type { PrusaHttpClient } from './http';
import { encodePath } from './state';

export async function uploadAndPrint(http: PrusaHttpClient, start: QueuedStart, hooks: QueuedStartHooks, commandTimeoutMs: number): Promise<void> {
  const size = (await stat(start.localPath)).size;
  await hooks.beforeStart();
  // The deadline covers the whole transfer: the command timeout plus the file at 50 kB/s at least.
  await http.request('PUT', `/api/v1/files${encodePath(`/usb/${start.remoteName}`)}`, {
    bodyFile: { path: start.localPath, size },
    headers: { 'content-type': 'application/octet-stream', overwrite: '?1', 'print-after-upload': '?1' },
    timeoutMs: commandTimeoutMs + Math.ceil(size / 50),
  });
  hooks.onProgress?.(size, size);
}
