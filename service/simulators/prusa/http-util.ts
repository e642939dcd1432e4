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
