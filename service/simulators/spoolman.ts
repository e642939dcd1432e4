/**
 * A Spoolman simulator (Donkie/Spoolman's `/api/v1` as far as Printfarm and
 * the demo use it): spools with their filament and vendor, `GET/POST
 * /spool`, `GET/PATCH/DELETE /spool/{id}`, `PUT /spool/{id}/use` with
 * `use_weight` or `use_length` (both or neither: 400; unknown spool: 404),
 * `GET /health`, and the change feed (a WebSocket on `/api/v1/spool`:
 * `{type: added|updated|deleted, resource: "spool", date, payload}`). It
 * records every use it took, and can go down (its port refuses connections)
 * and come back on the same port, for the outbox tests.
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { WebSocketServer } from 'ws';

export interface SimSpoolSeed {
  material: string;
  /** "RRGGBB" (Spoolman's color_hex has no "#"). */
  color_hex: string;
  vendor?: string;
  name?: string;
  initial_weight?: number;
  remaining_weight?: number;
  price?: number;
  location?: string;
}

interface SimSpool {
  id: number;
  registered: string;
  first_used: string | null;
  last_used: string | null;
  price: number | null;
  initial_weight: number;
  spool_weight: number;
  used_weight: number;
  location: string | null;
  archived: boolean;
  extra: Record<string, string>;
  filament: { id: number; name: string; material: string; color_hex: string; density: number; diameter: number; weight: number; price: number | null; vendor: { id: number; name: string } };
}

const MAX_BODY = 64 * 1024;
const DENSITY: Record<string, number> = { PLA: 1.24, PETG: 1.27, ABS: 1.04, ASA: 1.07, TPU: 1.21 };

export const DEFAULT_SPOOLMAN_SPOOLS: SimSpoolSeed[] = [
  { material: 'PLA', color_hex: 'FFFFFF', vendor: 'Bambu Lab', name: 'PLA Basic White', price: 20 },
  { material: 'PLA', color_hex: '000000', vendor: 'Prusament', name: 'PLA Galaxy Black', price: 30 },
  { material: 'PETG', color_hex: 'FF6A00', vendor: 'Prusament', name: 'PETG Orange', price: 30, remaining_weight: 180 },
];

export class SpoolmanSimulator {
  readonly uses: { spool_id: number; use_weight: number | null; use_length: number | null }[] = [];
  private readonly spools = new Map<number, SimSpool>();
  private readonly sockets = new Set<Socket>();
  private server: http.Server;
  private readonly feed = new WebSocketServer({ noServer: true });
  private nextId = 1;
  port = 0;
  /** Fault: the next use is applied, but its answer is lost (the connection is cut), like a timeout after the fact. */
  loseNextUseAnswer = false;

  private constructor(seeds: SimSpoolSeed[]) {
    for (const s of seeds) this.add(s);
    this.server = this.makeServer();
  }

  static async start(options: { spools?: SimSpoolSeed[]; port?: number } = {}): Promise<SpoolmanSimulator> {
    const sim = new SpoolmanSimulator(options.spools ?? DEFAULT_SPOOLMAN_SPOOLS);
    await sim.listen(options.port ?? 0);
    return sim;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** The spool as Spoolman shows it (remaining_weight derived from the used weight). */
  view(id: number): Record<string, unknown> | null {
    const s = this.spools.get(id);
    return s ? { ...s, remaining_weight: Math.max(0, s.initial_weight - s.used_weight), used_length: (s.used_weight / s.filament.density / (Math.PI * 0.0765625)) * 1000 } : null;
  }

  add(seed: SimSpoolSeed): number {
    const id = this.nextId++;
    const initial = seed.initial_weight ?? 1000;
    this.spools.set(id, {
      id,
      registered: new Date().toISOString(),
      first_used: null,
      last_used: null,
      price: seed.price ?? null,
      initial_weight: initial,
      spool_weight: 250,
      used_weight: initial - (seed.remaining_weight ?? initial),
      location: seed.location ?? null,
      archived: false,
      extra: {},
      filament: {
        id,
        name: seed.name ?? `${seed.material} ${seed.color_hex}`,
        material: seed.material,
        color_hex: seed.color_hex.toUpperCase(),
        density: DENSITY[seed.material.toUpperCase()] ?? 1.24,
        diameter: 1.75,
        weight: initial,
        price: seed.price ?? null,
        vendor: { id: 1, name: seed.vendor ?? 'Generic' },
      },
    });
    return id;
  }

  /** Stops answering: the port refuses connections until `up()`. */
  async down(): Promise<void> {
    for (const c of this.feed.clients) c.terminate();
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** Listens again on the same port. */
  async up(): Promise<void> {
    this.server = this.makeServer();
    await this.listen(this.port);
  }

  async close(): Promise<void> {
    if (this.server.listening) await this.down();
    await new Promise<void>((resolve) => this.feed.close(() => resolve()));
  }

  private listen(port: number): Promise<void> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, '127.0.0.1', () => {
        this.server.off('error', reject);
        this.port = (this.server.address() as AddressInfo).port;
        resolve();
      });
    });
  }

  private makeServer(): http.Server {
    const server = http.createServer((req, res) => {
      void this.handle(req, res).catch((err) => send(res, 500, { message: (err as Error).message }));
    });
    server.on('upgrade', (req, socket, head) => {
      if (new URL(req.url ?? '/', 'http://spoolman').pathname !== '/api/v1/spool') return socket.destroy();
      this.feed.handleUpgrade(req, socket, head, (ws) => this.feed.emit('connection', ws, req));
    });
    server.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    return server;
  }

  /** A change on the feed, to every connected client. */
  private announce(type: 'added' | 'updated' | 'deleted', id: number, payload?: unknown): void {
    const frame = JSON.stringify({ type, resource: 'spool', date: new Date().toISOString(), payload: payload ?? this.view(id) ?? { id } });
    for (const c of this.feed.clients) c.send(frame);
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://spoolman');
    const body = req.method === 'GET' || req.method === 'DELETE' ? {} : await readJson(req);
    if (body === null) return send(res, 400, { message: 'invalid JSON' });
    const path = url.pathname.replace(/\/+$/, '');
    if (req.method === 'GET' && (path === '/api/v1/health' || path === '/api/v1/info')) return send(res, 200, { status: 'healthy', version: '0.21.0-sim' });
    if (path === '/api/v1/spool') {
      if (req.method === 'GET') {
        const material = url.searchParams.get('filament.material');
        const archived = url.searchParams.get('allow_archived') === 'true';
        const list = [...this.spools.values()].filter((s) => (archived || !s.archived) && (!material || s.filament.material.toUpperCase() === material.toUpperCase()));
        return send(res, 200, list.map((s) => this.view(s.id)));
      }
      if (req.method === 'POST') {
        if (typeof body.material !== 'string' || typeof body.color_hex !== 'string') return send(res, 422, { message: 'give material and color_hex (simulator shortcut)' });
        const id = this.add(body as unknown as SimSpoolSeed);
        this.announce('added', id);
        return send(res, 200, this.view(id));
      }
    }
    const m = /^\/api\/v1\/spool\/(\d+)(\/use)?$/.exec(path);
    const spool = m ? this.spools.get(Number(m[1])) : undefined;
    if (m && !spool) return send(res, 404, { message: `No spool with ID ${m[1]} found.` });
    if (m && spool && m[2] && req.method === 'PUT') {
      const weight = typeof body.use_weight === 'number' ? body.use_weight : null;
      const length = typeof body.use_length === 'number' ? body.use_length : null;
      if ((weight === null) === (length === null)) return send(res, 400, { message: 'Exactly one of use_weight and use_length must be given.' });
      const grams = weight ?? (length! / 1000) * Math.PI * 0.0765625 * spool.filament.density;
      spool.used_weight += grams;
      spool.last_used = new Date().toISOString();
      spool.first_used ??= spool.last_used;
      this.uses.push({ spool_id: spool.id, use_weight: weight, use_length: length });
      this.announce('updated', spool.id);
      if (this.loseNextUseAnswer) {
        this.loseNextUseAnswer = false;
        req.socket.destroy();
        return;
      }
      return send(res, 200, this.view(spool.id));
    }
    if (m && spool && !m[2]) {
      if (req.method === 'GET') return send(res, 200, this.view(spool.id));
      if (req.method === 'DELETE') {
        this.spools.delete(spool.id);
        this.announce('deleted', spool.id, { id: spool.id });
        return send(res, 200, { message: 'deleted' });
      }
      if (req.method === 'PATCH') {
        if (typeof body.location === 'string' || body.location === null) spool.location = body.location as string | null;
        if (typeof body.archived === 'boolean') spool.archived = body.archived;
        if (typeof body.remaining_weight === 'number') spool.used_weight = spool.initial_weight - body.remaining_weight;
        this.announce('updated', spool.id);
        return send(res, 200, this.view(spool.id));
      }
    }
    return send(res, 404, { message: `no route ${req.method} ${path}` });
  }
}

function send(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

async function readJson(req: http.IncomingMessage): Promise<Record<string, unknown> | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req) {
    size += (c as Buffer).length;
    if (size > MAX_BODY) return null;
    chunks.push(c as Buffer);
  }
  if (size === 0) return {};
  try {
    const v = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? v : null;
  } catch {
    return null;
  }
}
