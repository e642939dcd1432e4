/**
 * Small HTTP pieces of the simulated PrusaLink printer: errors that become
 * Buddy-style answers, bounded bodies, RFC 8941 booleans, path segments, and
 * servers that close with every socket they opened.
 */
import type http from 'node:http';
import type { Socket } from 'node:net';
import type { FsEntry } from './files';

export const HOST = '127.0.0.1';

export function parseParams(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  const re = /([A-Za-z0-9_-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]*))/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(text))) out[m[1].toLowerCase()] = m[2] !== undefined ? m[2].replace(/\\(.)/g, '$1') : m[3];
  return out;
}

/** RFC 8941 boolean header ("?1" / "?0"). */
export const sfBool = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v)?.trim() === '?1';

export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    message: string,
  ) {
    super(message);
  }
}


export function round1(n: number): number {
  return Math.round(n * 10) / 10;
}

export function isAncestor(folder: FsEntry, entry: FsEntry): boolean {
  for (let e = entry.parent; e; e = e.parent) if (e === folder) return true;
  return false;
}

export function decodeSegment(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    throw new HttpError(400, 'Bad Request', 'Bad path encoding');
  }
}

export function segmentsOf(path: string): string[] {
  const segments = path.split('/').filter(Boolean).map(decodeSegment);
  if (segments.some((s) => s === '.' || s === '..')) throw new HttpError(400, 'Bad Request', 'Bad path');
  return segments;
}

export function readBody(req: http.IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > limit) {
        req.destroy();
        reject(new HttpError(413, 'Payload Too Large', 'Too large'));
      } else chunks.push(c);
    });
    req.once('end', () => resolve(Buffer.concat(chunks)));
    req.once('error', reject);
  });
}

/**
 * The body at most `rate()` bytes per second (the `transfer_bytes_per_sec` fault; 0: as fast as it comes):
 * reading pauses while the bytes so far are ahead of the rate, so TCP back-pressure slows the client down
 * as a slow printer would. A client that goes away mid-upload rejects it (nothing is stored). Pending waits
 * are kept in `timers`, which the simulator clears when it closes.
 */
export function readBodyPaced(req: http.IncomingMessage, limit: number, rate: () => number, timers: Set<NodeJS.Timeout>): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const started = Date.now();
    let size = 0;
    let ended = false;
    let settled = false;
    let timer: NodeJS.Timeout | null = null;
    const ahead = () => (rate() > 0 ? (size / rate()) * 1000 - (Date.now() - started) : 0);
    const fail = (err: Error) => {
      if (settled) return;
      settled = true;
      if (timer) clearTimeout(timer);
      reject(err);
    };
    /** Runs `then` once the bytes so far are no longer ahead of the rate. */
    const keepPace = (then: () => void) => {
      if (timer) timers.delete(timer);
      timer = null;
      if (settled) return;
      const wait = ahead();
      if (wait <= 0) return then();
      timer = setTimeout(() => keepPace(then), Math.min(wait, 1000));
      timers.add(timer);
    };
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > limit) {
        req.destroy();
        return fail(new HttpError(413, 'Payload Too Large', 'Too large'));
      }
      chunks.push(c);
      if (timer || ahead() <= 0) return;
      req.pause();
      keepPace(() => req.resume());
    });
    // The last bytes may arrive in one go: the upload still ends at the printer's pace.
    req.once('end', () => {
      ended = true;
      keepPace(() => {
        settled = true;
        resolve(Buffer.concat(chunks));
      });
    });
    req.once('close', () => {
      if (!ended) fail(new HttpError(400, 'Bad Request', 'upload interrupted'));
    });
    req.once('error', fail);
  });
}

export function track(server: http.Server, sockets: Set<Socket>): void {
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
}

export function listen(server: http.Server, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, HOST, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

export function closeServer(server: http.Server, sockets: Set<Socket>): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    for (const s of sockets) s.destroy();
    sockets.clear();
  });
}

export function sendJson(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(text)) });
  res.end(text);
}

export function sendEmpty(res: http.ServerResponse, status: number): void {
  res.writeHead(status);
  res.end();
}

export function sendError(req: http.IncomingMessage, res: http.ServerResponse, status: number, title: string, text: string): void {
  const wantsJson = /json/i.test(String(req.headers.accept ?? ''));
  const body = wantsJson ? JSON.stringify({ title, text }) : `${title}: ${text}`;
  res.writeHead(status, {
    'Content-Type': wantsJson ? 'application/json' : 'text/plain',
    'Content-Length': String(Buffer.byteLength(body)),
  });
  res.end(req.method === 'HEAD' ? undefined : body);
}
