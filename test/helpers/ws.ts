/**
 * A WebSocket test client that collects frames and waits for the one a test expects. The frames that promise
 * a REST resource's shape (queue_update: an item as GET /queue/{item_id} shows it; spool_update: a spool as
 * GET /spools/{spool_id}, with `change`) are held to that operation's schema in the OpenAPI document;
 * close() throws when one differed.
 */
import WebSocket from 'ws';
import { differenceFromOpenApi } from './openapi-conformance';

/** Frame type -> the operation whose 200 answer its data is, and the keys the frame adds to it. */
const FRAMES_AS_RESOURCES: Record<string, { path: (data: Record<string, unknown>) => string; adds: string[] }> = {
  queue_update: { path: (d) => `/api/v1/queue/${encodeURIComponent(String(d.id))}`, adds: [] },
  spool_update: { path: (d) => `/api/v1/spools/${encodeURIComponent(String(d.id))}`, adds: ['change'] },
};

function checkFrame(base: string, frame: Frame): Promise<string | null> {
  const resource = FRAMES_AS_RESOURCES[frame.type];
  if (!resource || !frame.data || typeof frame.data !== 'object') return Promise.resolve(null);
  const data = Object.fromEntries(Object.entries(frame.data).filter(([k]) => !resource.adds.includes(k)));
  const path = resource.path(frame.data);
  return differenceFromOpenApi(base, { method: 'GET', urlPath: path, status: 200, contentType: 'application/json', body: data }).then((what) => what && `${frame.type} frame (as GET ${path}): ${what}`);
}

export interface Frame {
  type: string;
  timestamp: string;
  data: Record<string, unknown>;
}

export interface WsClient {
  socket: WebSocket;
  frames: Frame[];
  send(msg: unknown): void;
  /** Resolves with the first frame (already received or coming) that matches, or rejects after `ms`. */
  next(match: (f: Frame) => boolean, ms?: number): Promise<Frame>;
  close(): Promise<void>;
}

export async function connectWs(base: string, path = '/ws'): Promise<WsClient> {
  const socket = new WebSocket(base.replace(/^http/, 'ws') + path);
  const frames: Frame[] = [];
  const checks: Promise<string | null>[] = [];
  const waiters: { match: (f: Frame) => boolean; resolve: (f: Frame) => void }[] = [];
  socket.on('message', (raw) => {
    const frame = JSON.parse(raw.toString()) as Frame;
    frames.push(frame);
    checks.push(checkFrame(base, frame).catch((err: Error) => `could not check a ${frame.type} frame: ${err.message}`));
    for (const w of [...waiters]) {
      if (w.match(frame)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(frame);
      }
    }
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  return {
    socket,
    frames,
    send: (msg) => socket.send(typeof msg === 'string' ? msg : JSON.stringify(msg)),
    next(match, ms = 5000) {
      const seen = frames.find(match);
      if (seen) return Promise.resolve(seen);
      return new Promise<Frame>((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.splice(waiters.indexOf(waiter), 1);
          reject(new Error(`no matching frame within ${ms} ms; got ${JSON.stringify(frames.map((f) => f.type))}`));
        }, ms);
        const waiter = {
          match,
          resolve: (f: Frame) => {
            clearTimeout(timer);
            resolve(f);
          },
        };
        waiters.push(waiter);
      });
    },
    async close() {
      await new Promise<void>((resolve) => {
        if (socket.readyState === WebSocket.CLOSED) return resolve();
        socket.once('close', () => resolve());
        socket.close();
      });
      const differed = (await Promise.all(checks)).filter((what): what is string => what !== null);
      if (differed.length) throw new Error(`/ws frames differ from the OpenAPI document: ${differed.slice(0, 3).join(' | ')}`);
    },
  };
}
