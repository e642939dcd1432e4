/** A WebSocket test client that collects frames and waits for the one a test expects. */
import WebSocket from 'ws';

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
  const waiters: { match: (f: Frame) => boolean; resolve: (f: Frame) => void }[] = [];
  socket.on('message', (raw) => {
    const frame = JSON.parse(raw.toString()) as Frame;
    frames.push(frame);
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
    close: () =>
      new Promise<void>((resolve) => {
        if (socket.readyState === WebSocket.CLOSED) return resolve();
        socket.once('close', () => resolve());
        socket.close();
      }),
  };
}
