/**
 * The simulated Bambu printer's control API: JSON over HTTP on 127.0.0.1,
 * to drive the printer like a person at it and to inject faults (also in the
 * simulator section of docs/printers.md):
 *     POST /print {"file": "<name or path>"}   start a stored file (the screen)
 *     POST /pause /resume /finish /fail /cancel
 *     POST /offline   drop every connection, refuse new ones
 *     POST /stall     keep sockets open, send and answer nothing
 *     POST /online    back to normal (ends offline and stall)
 *     POST /faults {"partial_reports": bool, "reject_commands": bool, "transfer_bytes_per_sec": N,
 *                   "camera_stalled": bool, "pushall_delay_ms": N}   (the camera keeps its connections and sends
 *                   no frame; the pushall answer goes N ms late while the deltas do not)
 *     POST /camera {"enabled": false}   the camera leaves the network (refused) until enabled again
 *     POST /materials {"materials": [{"slot": 0, "type": "PLA", "color": "#FFFFFF"}]}
 *                     replaces what is loaded (slot = global tray, 254 = external spool)
 *     GET  /state     {status, gcode_state, progress, file, files, link, faults, stats,
 *                      prints_started, starts_while_busy, last_start, materials, nozzle_diameter, ...}
 * Bodies are bounded (64 KiB); every socket is closed with the server.
 */
import http from 'node:http';
import type net from 'node:net';
import type { LinkMode } from './gate';
import type { BambuFaults } from './options';
import type { CommandResult, Json } from './printer';

/** What the control API needs of the simulator. */
export interface BambuControlTarget {
  stateView(): Json;
  startPrint(name: string): CommandResult;
  pause(): CommandResult;
  resume(): CommandResult;
  finish(): CommandResult;
  fail(): CommandResult;
  cancelPrint(): CommandResult;
  setLink(mode: LinkMode): Promise<void>;
  /** Applies a /faults body; returns the faults now in force or the reason the body is refused. */
  applyFaults(body: Json): { ok: true; faults: Json } | { ok: false; error: string };
  /** Applies a /materials body; returns the materials now loaded or the reason the body is refused. */
  applyMaterials(body: Json): { ok: true; materials: unknown } | { ok: false; error: string };
  /** The printer's camera (port-6000 or RTSPS), when the simulator runs one. */
  readonly camera: { setEnabled(enabled: boolean): Promise<void> } | null;
}

const MAX_BODY = 64 * 1024;

/** A POST /faults body: booleans and a byte rate >= 0; unknown keys are ignored. */
export function parseFaults(body: Json): { ok: true; patch: Partial<BambuFaults> } | { ok: false; error: string } {
  const patch: Partial<BambuFaults> = {};
  for (const key of ['partial_reports', 'reject_commands', 'camera_stalled'] as const) {
    if (!(key in body)) continue;
    if (typeof body[key] !== 'boolean') return { ok: false, error: `${key} must be a boolean` };
    patch[key] = body[key] as boolean;
  }
  if ('transfer_bytes_per_sec' in body) {
    const n = body.transfer_bytes_per_sec;
    if (typeof n !== 'number' || !Number.isFinite(n) || n < 0) return { ok: false, error: 'transfer_bytes_per_sec must be a number >= 0' };
    patch.transfer_bytes_per_sec = Math.floor(n);
  }
  if ('pushall_delay_ms' in body) {
    const n = body.pushall_delay_ms;
    if (typeof n !== 'number' || !Number.isFinite(n) || n < 0) return { ok: false, error: 'pushall_delay_ms must be a number >= 0' };
    patch.pushall_delay_ms = Math.min(60_000, Math.floor(n));
  }
  return { ok: true, patch };
}

function json(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function readBody(req: http.IncomingMessage): Promise<Json> {
  return new Promise((resolve, reject) => {
    let size = 0;
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) {
        reject(new Error('body too large'));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8').trim();
      if (!text) return resolve({});
      try {
        const parsed: unknown = JSON.parse(text);
        if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) resolve(parsed as Json);
        else reject(new Error('body must be a JSON object'));
      } catch {
        reject(new Error('body is not JSON'));
      }
    });
    req.on('error', reject);
  });
}

async function route(target: BambuControlTarget, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const path = (req.url ?? '/').split('?')[0].replace(/\/+$/, '') || '/';
  const method = req.method ?? 'GET';
  if (method === 'GET' && path === '/state') return json(res, 200, target.stateView());
  if (method !== 'POST') return json(res, 404, { error: `no route ${method} ${path}` });
  let body: Json;
  try {
    body = await readBody(req);
  } catch (err) {
    return json(res, 400, { error: (err as Error).message });
  }
  const answer = (result: CommandResult) =>
    result.ok ? json(res, 200, target.stateView()) : json(res, /not found/.test(result.reason) ? 404 : 409, { error: result.reason });
  switch (path) {
    case '/print':
      if (typeof body.file !== 'string' || !body.file) return json(res, 400, { error: 'give {"file": "<name on the printer>"}' });
      return answer(target.startPrint(body.file));
    case '/pause':
      return answer(target.pause());
    case '/resume':
      return answer(target.resume());
    case '/finish':
      return answer(target.finish());
    case '/fail':
      return answer(target.fail());
    case '/cancel':
    case '/stop':
      return answer(target.cancelPrint());
    case '/offline':
    case '/online':
    case '/stall':
      await target.setLink(path === '/stall' ? 'stalled' : (path.slice(1) as LinkMode));
      return json(res, 200, target.stateView());
    case '/faults': {
      const result = target.applyFaults(body);
      return result.ok ? json(res, 200, { faults: result.faults }) : json(res, 400, { error: result.error });
    }
    case '/camera':
      if (typeof body.enabled !== 'boolean') return json(res, 400, { error: 'give {"enabled": true|false}' });
      if (!target.camera) return json(res, 409, { error: 'this simulator runs no camera' });
      await target.camera.setEnabled(body.enabled);
      return json(res, 200, target.stateView());
    case '/materials': {
      const result = target.applyMaterials(body);
      return result.ok ? json(res, 200, { materials: result.materials }) : json(res, 400, { error: result.error });
    }
    default:
      return json(res, 404, { error: `no route ${method} ${path}` });
  }
}

/** The control API's HTTP server, listening on 127.0.0.1 (any free port). */
export class BambuControlServer {
  private readonly server: http.Server;
  private readonly sockets = new Set<net.Socket>();

  constructor(target: BambuControlTarget) {
    this.server = http.createServer((req, res) => {
      route(target, req, res).catch(() => {
        if (!res.headersSent) json(res, 500, { error: 'internal error' });
      });
    });
    this.server.on('connection', (s: net.Socket) => {
      this.sockets.add(s);
      s.once('close', () => this.sockets.delete(s));
    });
  }

  listen(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(0, '127.0.0.1', () => resolve());
    });
  }

  get url(): string {
    const address = this.server.address() as net.AddressInfo | null;
    return `http://127.0.0.1:${address?.port ?? 0}`;
  }

  async close(): Promise<void> {
    const closed = this.server.listening ? new Promise<void>((resolve) => this.server.close(() => resolve())) : Promise.resolve();
    for (const s of this.sockets) s.destroy();
    await closed;
  }
}
