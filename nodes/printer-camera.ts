/**
 * The printer node's camera topics:
 *
 * - `snapshot`: one JPEG from the printer's camera as `msg.payload` (a Buffer), e.g. to attach to a
 *   failure notification (`msg.filename` names it for e-mail nodes).
 * - `stream`: answers the HTTP request of an `http in` node (`msg.res`) with the camera's live MJPEG
 *   stream, relayed from the service for as long as the browser reads. This is how the farm dashboard
 *   shows live pictures while the browser only ever talks to Node-RED (the service may listen on
 *   127.0.0.1, and its API token stays on the server).
 */
import type { ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import type { PrintfarmClient } from '../service/client';

export const CAMERA_TOPICS = ['snapshot', 'stream'] as const;
export type CameraTopic = (typeof CAMERA_TOPICS)[number];

/** The camera topic a message asks for (msg.topic, msg.command or msg.payload), if any. */
export function cameraTopicOf(msg: { topic?: unknown; command?: unknown; payload?: unknown }): CameraTopic | null {
  for (const v of [msg.topic, msg.command, msg.payload]) {
    const s = typeof v === 'string' ? v.trim().toLowerCase() : '';
    if ((CAMERA_TOPICS as readonly string[]).includes(s)) return s as CameraTopic;
  }
  return null;
}

/** A file name for the picture: printer id and UTC time, safe on every file system and in mail headers. */
export function snapshotFilename(printerId: string, at = new Date()): string {
  const safe = printerId.replace(/[^A-Za-z0-9_.-]+/g, '_').slice(0, 64) || 'printer';
  return `${safe}-${at.toISOString().replace(/[:.]/g, '-')}.jpg`;
}

/** The raw response of an `http in` node's message (msg.res wraps it as `_res`), or null. */
export function httpResponseOf(msg: { res?: unknown }): ServerResponse | null {
  const raw = (msg.res as { _res?: unknown } | undefined)?._res as ServerResponse | undefined;
  return raw && typeof raw.writeHead === 'function' && typeof raw.on === 'function' ? raw : null;
}

/** Answers the browser with the service's error (status and the spec's error body). */
function answerError(res: ServerResponse, err: { status?: number; code?: string; message: string }): void {
  if (res.headersSent || res.destroyed) return void res.destroy();
  const status = err.status && err.status >= 400 ? err.status : 502;
  const body = JSON.stringify({ error: { code: err.code ?? 'CAMERA_ERROR', message: err.message } });
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  res.end(body);
}

/**
 * Relays the camera stream of `printerId` into `res` until either side ends, or `until` aborts (the
 * printer node closing on a deploy: a relay it left behind would run for as long as the browser
 * stays, on a service the new flows may no longer use). Backpressure is the socket's: a browser that
 * stops reading stops the relay's reads, and the service then skips its frames (it never queues them).
 * Resolves when the relay ended; errors are answered, not thrown.
 */
export async function relayCameraStream(client: PrintfarmClient, printerId: string, res: ServerResponse, until?: AbortSignal): Promise<void> {
  const abort = new AbortController();
  const stop = () => abort.abort();
  if (until?.aborted) return void res.destroy();
  res.once('close', stop);
  until?.addEventListener('abort', stop, { once: true });
  try {
    const upstream = await client.printers.cameraStream(printerId, abort.signal);
    if (res.destroyed || !upstream.body) {
      abort.abort();
      return;
    }
    res.writeHead(200, {
      'content-type': upstream.headers.get('content-type') ?? 'multipart/x-mixed-replace',
      'cache-control': 'no-store',
      // Proxies in front of Node-RED must pass frames on at once.
      'x-accel-buffering': 'no',
    });
    const body = Readable.fromWeb(upstream.body as unknown as WebReadableStream<Uint8Array>);
    await new Promise<void>((resolve) => {
      const end = () => {
        res.off('close', end);
        body.destroy();
        // Cut by the node closing: the browser's connection is cut too, which a camera view can tell from a
        // stream that ended (an <img> keeps the last frame of an ended one and fires no event for either).
        if (until?.aborted) res.destroy();
        else if (!res.writableEnded) res.end();
        resolve();
      };
      body.once('error', end).once('end', end);
      res.once('close', end);
      body.pipe(res, { end: false });
    });
  } catch (err) {
    if (!abort.signal.aborted) answerError(res, err as { status?: number; code?: string; message: string });
    // Stopped before the stream began: the browser must not wait for an answer that never comes.
    else if (!res.writableEnded) res.destroy();
  } finally {
    res.off('close', stop);
    until?.removeEventListener('abort', stop);
    abort.abort();
  }
}
