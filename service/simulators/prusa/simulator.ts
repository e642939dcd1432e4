/**
 * A simulated PrusaLink printer (Buddy firmware: MK4S, Core One) on loopback.
 *
 * - The printer API on `httpPort`: HTTP Digest exactly as Buddy does it
 *   (user `maker`, realm "Printer API", a 16-hex nonce valid ~5 s, no qop,
 *   `stale=true` for an expired nonce) or `X-Api-Key`; the v1 endpoints of
 *   the PrusaLink OpenAPI description; downloads at refs.download.
 * - A control API on `controlUrl` (JSON) that drives the print and injects
 *   faults: /print /pause /resume /finish /fail /cancel /offline /online
 *   /stall /faults, GET /state; plus /attention /busy /ready /idle to reach
 *   every printer state.
 *
 * close() ends both servers, every socket and every timer.
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { createHash, randomBytes } from 'node:crypto';
import { seedFiles, type SeedFile } from '../seed-files';
import { SimStorage, type FsEntry } from './files';
import { SimPrinter } from './printer';

export interface PrusaSimulatorOptions {
  /** PrusaLink password (also the X-Api-Key); random when omitted. */
  password?: string;
  /** "Core One" (default) or "MK4S"... */
  model?: string;
  /** Printer time runs this many times faster than the wall clock (default 1). */
  speed?: number;
  /** Printer name shown in /api/v1/info and printerConfig(). */
  name?: string;
  /** Printer id for printerConfig() (default derived from the name and port). */
  id?: string;
  /** Older firmware: X-Api-Key only, no Digest challenge. */
  apiKeyOnly?: boolean;
  /** How long a Digest nonce stays valid (ms, default 5000 as on Buddy). */
  nonceTtlMs?: number;
  /** Offer qop="auth" (RFC 2617) as Prusa-Link on a Raspberry Pi does; Buddy does not. */
  qop?: boolean;
  /** Digest realm (Buddy: "Printer API"; Prusa-Link on a Pi: "Administrator"). */
  realm?: string;
  /** Printer seconds one print takes after heating (default 600). */
  printSeconds?: number;
  /** Files on the USB stick (default: seedFiles()). */
  files?: SeedFile[];
  /** Port of the printer API (default 0: any free port). */
  port?: number;
  /** Firmware from before the v1 API (only /api/version and the OctoPrint-style paths): /api/v1/* is 404. */
  noV1Api?: boolean;
  /** Whether the printer reports a camera / an MMU. */
  camera?: boolean;
  mmu?: boolean;
  serial?: string;
}

export interface PrusaFaults {
  /** Leave optional fields out of /api/v1/status (alternating halves, sometimes the whole job). */
  partial_reports: boolean;
  /** Job control and print starts answer 409. */
  reject_commands: boolean;
  /** Throttle downloads to this many bytes per second (0: unthrottled). */
  transfer_bytes_per_sec: number;
}

export type PrusaPrinterConfig = {
  id: string;
  name: string;
  type: 'prusa_core';
  model: string;
  ip_address: string;
  access_code: string;
  http_port: number;
};

const HOST = '127.0.0.1';
const USER = 'maker';
const MAX_UPLOAD = 256 * 1024 * 1024;

const md5 = (s: string) => createHash('md5').update(s, 'utf8').digest('hex');

function parseParams(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  const re = /([A-Za-z0-9_-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]*))/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(text))) out[m[1].toLowerCase()] = m[2] !== undefined ? m[2].replace(/\\(.)/g, '$1') : m[3];
  return out;
}

/** RFC 8941 boolean header ("?1" / "?0"). */
const sfBool = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v)?.trim() === '?1';

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    message: string,
  ) {
    super(message);
  }
}

export class PrusaSimulator {
  readonly password: string;
  readonly model: string;
  readonly name: string;
  readonly id: string;
  readonly storage = new SimStorage('usb');
  readonly printer: SimPrinter;
  readonly faults: PrusaFaults = { partial_reports: false, reject_commands: false, transfer_bytes_per_sec: 0 };
  /** Counters: what the printer saw (tests assert on them). */
  readonly stats = { requests: 0, unauthorized: 0, stale_nonces: 0, digest_ok: 0, api_key_ok: 0 };

  httpPort = 0;
  controlPort = 0;
  private api: http.Server | null = null;
  private control: http.Server | null = null;
  private readonly apiSockets = new Set<Socket>();
  private readonly controlSockets = new Set<Socket>();
  private readonly hung = new Set<http.ServerResponse>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly nonces = new Map<string, number>();
  private offline = false;
  private stalled = false;
  private closed = false;
  private statusCount = 0;
  private readonly options: PrusaSimulatorOptions;

  private constructor(options: PrusaSimulatorOptions) {
    this.options = options;
    this.password = options.password ?? randomBytes(6).toString('hex');
    this.model = options.model ?? 'Core One';
    this.name = options.name ?? `Prusa ${this.model} (simulated)`;
    this.id = options.id ?? '';
    this.printer = new SimPrinter(options.speed ?? 1, options.printSeconds ?? 600);
    for (const f of options.files ?? seedFiles()) this.storage.write(f.name.split('/'), f.data);
  }

  static async start(options: PrusaSimulatorOptions = {}): Promise<PrusaSimulator> {
    const sim = new PrusaSimulator(options);
    try {
      await sim.listenApi(options.port ?? 0);
      sim.control = http.createServer((req, res) => void sim.handleControl(req, res));
      track(sim.control, sim.controlSockets);
      await listen(sim.control, 0);
      sim.controlPort = (sim.control.address() as AddressInfo).port;
    } catch (err) {
      await sim.close();
      throw err;
    }
    return sim;
  }

  get controlUrl(): string {
    return `http://${HOST}:${this.controlPort}`;
  }

  /** Base URL of the printer API. */
  get url(): string {
    return `http://${HOST}:${this.httpPort}`;
  }

  /** A body for POST /api/v1/printers that points the service at this simulator. */
  printerConfig(): PrusaPrinterConfig {
    const slug = this.model.toLowerCase().replace(/[^a-z0-9]+/g, '-');
    return {
      id: this.id || `prusa-${slug}-${this.httpPort}`,
      name: this.name,
      type: 'prusa_core',
      model: this.model,
      ip_address: HOST,
      access_code: this.password,
      http_port: this.httpPort,
    };
  }

  /** What /state answers on the control API. */
  snapshot() {
    this.printer.advance();
    const p = this.printer;
    const job = p.job;
    return {
      status: p.state,
      job_state: job?.state ?? null,
      job_id: job?.id ?? null,
      progress: p.progress(),
      time_remaining: job ? p.timeRemaining() : null,
      time_printing: job ? p.timePrinting() : null,
      file: job ? job.file.lfn : null,
      file_short: job ? job.file.sfn : null,
      file_path: job ? this.storage.pathOf(job.file) : null,
      message: p.message,
      temperatures: { nozzle: round1(p.nozzle), bed: round1(p.bed), nozzle_target: p.targetNozzle, bed_target: p.targetBed },
      files: this.storage.files().map((f) => this.storage.longPathOf(f)),
      file_list: this.storage.files().map((f) => ({
        name: this.storage.longPathOf(f),
        short_name: f.sfn,
        path: this.storage.pathOf(f),
        size: f.data?.length ?? 0,
        type: f.type,
      })),
      faults: { ...this.faults },
      offline: this.offline,
      stalled: this.stalled,
      http_port: this.httpPort,
      stats: { ...this.stats },
    };
  }

  // ------------------------------------------------------------ fault control

  /** Drops every connection and refuses new ones (the port stays reserved for goOnline). */
  async goOffline(): Promise<void> {
    if (this.offline) return;
    this.offline = true;
    this.releaseHung();
    const server = this.api;
    this.api = null;
    if (server) await closeServer(server, this.apiSockets);
  }

  /** Back on the network (and no longer stalled). */
  async goOnline(): Promise<void> {
    this.stalled = false;
    this.releaseHung();
    if (!this.offline) return;
    await this.listenApi(this.httpPort);
    this.offline = false;
  }

  /** Accepts connections but never answers, until goOnline(). */
  stall(): void {
    this.stalled = true;
  }

  setFaults(patch: Partial<PrusaFaults>): PrusaFaults {
    if (typeof patch.partial_reports === 'boolean') this.faults.partial_reports = patch.partial_reports;
    if (typeof patch.reject_commands === 'boolean') this.faults.reject_commands = patch.reject_commands;
    if (typeof patch.transfer_bytes_per_sec === 'number' && patch.transfer_bytes_per_sec >= 0)
      this.faults.transfer_bytes_per_sec = Math.floor(patch.transfer_bytes_per_sec);
    return { ...this.faults };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    this.releaseHung();
    const servers: Array<[http.Server | null, Set<Socket>]> = [
      [this.api, this.apiSockets],
      [this.control, this.controlSockets],
    ];
    this.api = null;
    this.control = null;
    await Promise.all(servers.map(([s, sockets]) => (s ? closeServer(s, sockets) : Promise.resolve())));
  }

  // ------------------------------------------------------------ printer API

  private async listenApi(port: number): Promise<void> {
    const server = http.createServer((req, res) => void this.handleApi(req, res));
    server.keepAliveTimeout = 5000;
    track(server, this.apiSockets);
    await listen(server, port);
    this.api = server;
    this.httpPort = (server.address() as AddressInfo).port;
  }

  private releaseHung(): void {
    for (const res of this.hung) res.socket?.destroy();
    this.hung.clear();
  }

  private async handleApi(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    if (this.stalled) {
      // Accept, read, never answer.
      this.hung.add(res);
      res.once('close', () => this.hung.delete(res));
      req.resume();
      return;
    }
    this.stats.requests++;
    try {
      const url = new URL(req.url ?? '/', 'http://printer');
      if (!this.authorized(req, res)) {
        req.resume();
        return;
      }
      await this.route(req, res, url);
    } catch (err) {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      if (err instanceof HttpError) this.sendError(req, res, err.status, err.title, err.message);
      else this.sendError(req, res, 500, 'Internal Server Error', (err as Error)?.message ?? 'error');
    }
  }

  /** Checks Digest or X-Api-Key; answers 401 itself and returns false when the request may not pass. */
  private authorized(req: http.IncomingMessage, res: http.ServerResponse): boolean {
    const apiKey = req.headers['x-api-key'];
    if (typeof apiKey === 'string') {
      if (apiKey === this.password) {
        this.stats.api_key_ok++;
        return true;
      }
      return this.challenge(req, res, false);
    }
    const auth = req.headers.authorization;
    if (this.options.apiKeyOnly || !auth || !/^Digest\s/i.test(auth)) return this.challenge(req, res, false);
    const p = parseParams(auth.replace(/^Digest\s+/i, ''));
    const realm = this.realm;
    const issued = p.nonce ? this.nonces.get(p.nonce) : undefined;
    if (p.username !== USER || p.realm !== realm || p.uri !== req.url || issued === undefined || !p.response)
      return this.challenge(req, res, false);
    const ha1 = md5(`${USER}:${realm}:${this.password}`);
    const ha2 = md5(`${req.method}:${p.uri}`);
    let expected: string;
    if (this.options.qop) {
      if (p.qop !== 'auth' || !p.nc || !p.cnonce) return this.challenge(req, res, false);
      expected = md5(`${ha1}:${p.nonce}:${p.nc}:${p.cnonce}:auth:${ha2}`);
    } else {
      expected = md5(`${ha1}:${p.nonce}:${ha2}`); // Buddy: RFC 2069, no qop
    }
    if (p.response.toLowerCase() !== expected) return this.challenge(req, res, false);
    if (Date.now() - issued > this.nonceTtl) {
      this.stats.stale_nonces++;
      return this.challenge(req, res, true);
    }
    this.stats.digest_ok++;
    return true;
  }

  private get realm(): string {
    return this.options.realm ?? 'Printer API';
  }

  private get nonceTtl(): number {
    return this.options.nonceTtlMs ?? 5000;
  }

  private challenge(req: http.IncomingMessage, res: http.ServerResponse, stale: boolean): false {
    this.stats.unauthorized++;
    if (!this.options.apiKeyOnly) {
      const nonce = randomBytes(8).toString('hex');
      this.rememberNonce(nonce);
      const qop = this.options.qop ? ', qop="auth"' : '';
      res.setHeader('WWW-Authenticate', `Digest realm="${this.realm}", nonce="${nonce}"${qop}, stale=${stale ? 'true' : 'false'}`);
    }
    this.sendError(req, res, 401, 'Unauthorized', 'Invalid credentials');
    return false;
  }

  private rememberNonce(nonce: string): void {
    const now = Date.now();
    this.nonces.set(nonce, now);
    if (this.nonces.size > 512) {
      for (const [n, t] of this.nonces) {
        if (now - t > this.nonceTtl * 20 || this.nonces.size > 512) this.nonces.delete(n);
        else break;
      }
    }
  }

  private async route(req: http.IncomingMessage, res: http.ServerResponse, url: URL): Promise<void> {
    const method = req.method ?? 'GET';
    const path = url.pathname;
    const p = this.printer;
    p.advance();

    if (method === 'GET' && path === '/api/version') return this.json(res, 200, this.versionBody());
    if (this.options.noV1Api && path.startsWith('/api/v1/')) {
      req.resume();
      throw new HttpError(404, 'Not Found', `No such endpoint: ${method} ${path}`);
    }
    if (method === 'GET' && path === '/api/v1/info') return this.json(res, 200, this.infoBody());
    if (method === 'GET' && path === '/api/v1/status') return this.json(res, 200, this.statusBody());
    if (method === 'GET' && path === '/api/v1/storage') return this.json(res, 200, this.storageBody());
    if (method === 'GET' && path === '/api/v1/job') {
      const body = this.jobBody();
      if (!body) return this.empty(res, 204);
      return this.json(res, 200, body);
    }
    const jobControl = /^\/api\/v1\/job\/([^/]+)(?:\/(pause|resume|continue))?$/.exec(path);
    if (jobControl) return this.jobControl(req, res, method, jobControl[1], jobControl[2]);

    const files = /^\/api\/v1\/files\/([^/]+)(\/.*)?$/.exec(path);
    if (files) return this.files(req, res, method, decodeSegment(files[1]), segmentsOf(files[2] ?? ''), (files[2] ?? '').endsWith('/'));

    if (/^\/thumb\/[sl]\//.test(path)) throw new HttpError(404, 'Not Found', "File doesn't contain preview");

    const download = new RegExp(`^/${this.storage.name}(/.*)$`).exec(path);
    if (download && (method === 'GET' || method === 'HEAD')) return this.download(req, res, segmentsOf(download[1]));

    req.resume();
    throw new HttpError(404, 'Not Found', `No such endpoint: ${method} ${path}`);
  }

  private versionBody() {
    return {
      api: '2.0.0',
      server: '2.1.2',
      version: '2.1.2',
      text: 'PrusaLink',
      hostname: this.hostname,
      firmware: '6.2.4+8808',
      sdk: '2.1.2',
      nozzle_diameter: 0.4,
      capabilities: { 'upload-by-put': true },
    };
  }

  private get hostname(): string {
    return `prusa-${this.model.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`;
  }

  private infoBody() {
    return {
      name: this.name,
      location: 'Print farm',
      farm_mode: false,
      nozzle_diameter: 0.4,
      min_extrusion_temp: 170,
      serial: this.options.serial ?? `SIM${String(this.httpPort).padStart(5, '0')}X004XC34242`,
      hostname: this.hostname,
      port: '',
      mmu: this.options.mmu ?? false,
      sd_ready: false,
      active_camera: this.options.camera ?? false,
    };
  }

  private statusBody() {
    const p = this.printer;
    const job = p.job;
    const printer: Record<string, unknown> = {
      state: p.state,
      temp_nozzle: round1(p.nozzle),
      target_nozzle: p.targetNozzle,
      temp_bed: round1(p.bed),
      target_bed: p.targetBed,
      axis_z: p.axisZ(),
      flow: 100,
      speed: 100,
      fan_hotend: p.targetNozzle > 0 || p.nozzle > 50 ? 7000 : 0,
      fan_print: job?.state === 'PRINTING' && job.heated ? 5200 : 0,
    };
    if (job?.state !== 'PRINTING') Object.assign(printer, { axis_x: 241, axis_y: 170 });
    if (p.message && (p.state === 'ERROR' || p.state === 'ATTENTION')) printer.status_printer = { ok: false, message: p.message };
    const body: Record<string, unknown> = { printer };
    if (job) body.job = { id: job.id, progress: p.progress(), time_remaining: p.timeRemaining(), time_printing: p.timePrinting() };
    body.storage = { path: `/${this.storage.name}/`, name: this.storage.name, read_only: false };
    if (!this.faults.partial_reports) return body;

    // Partial reports: every answer leaves out a different half of the optional fields.
    const odd = this.statusCount++ % 2 === 1;
    const partial: Record<string, unknown> = { printer: { state: p.state } };
    const pr = partial.printer as Record<string, unknown>;
    if (odd) {
      for (const k of ['temp_nozzle', 'target_nozzle', 'temp_bed', 'target_bed']) pr[k] = printer[k];
    } else {
      for (const k of ['axis_z', 'flow', 'speed']) pr[k] = printer[k];
      if (job) partial.job = body.job;
    }
    return partial;
  }

  private jobBody() {
    const p = this.printer;
    const job = p.job;
    if (!job) return null;
    const f = job.file;
    return {
      id: job.id,
      state: job.state,
      progress: p.progress(),
      time_remaining: p.timeRemaining(),
      time_printing: p.timePrinting(),
      inaccurate_estimates: !job.heated,
      file: {
        name: f.sfn,
        display_name: f.lfn,
        path: f.parent ? this.storage.pathOf(f.parent) : `/${this.storage.name}`,
        display_path: f.parent ? `/${this.storage.name}${this.storage.longPathOf(f.parent) ? '/' + this.storage.longPathOf(f.parent) : ''}` : undefined,
        size: f.data?.length ?? 0,
        m_timestamp: f.mtime,
        refs: this.refs(f),
      },
    };
  }

  private storageBody() {
    const used = this.storage.usedBytes();
    return {
      storage_list: [
        {
          name: this.storage.name,
          type: 'USB',
          path: `/${this.storage.name}`,
          print_files: used,
          system_files: 0,
          free_space: this.storage.totalSpace - used,
          total_space: this.storage.totalSpace,
          available: true,
          read_only: false,
        },
      ],
    };
  }

  private refs(f: FsEntry) {
    const path = this.storage.pathOf(f);
    return { icon: `/thumb/s${path}`, thumbnail: `/thumb/l${path}`, download: path };
  }

  private entryBody(f: FsEntry, withChildren: boolean): Record<string, unknown> {
    if (f.type === 'FOLDER') {
      const body: Record<string, unknown> = { name: f.sfn, display_name: f.lfn, ro: false, type: 'FOLDER', m_timestamp: f.mtime };
      if (withChildren) body.children = (f.children ?? []).map((c) => this.entryBody(c, false));
      return body;
    }
    return { name: f.sfn, display_name: f.lfn, ro: false, type: f.type, m_timestamp: f.mtime, size: f.data?.length ?? 0, refs: this.refs(f) };
  }

  private async jobControl(req: http.IncomingMessage, res: http.ServerResponse, method: string, id: string, action?: string) {
    req.resume();
    const p = this.printer;
    const wanted = action ? 'PUT' : 'DELETE';
    if (method !== wanted) throw new HttpError(405, 'Method Not Allowed', `${method} is not allowed here`);
    if (!p.job || String(p.job.id) !== id) throw new HttpError(404, 'Not Found', `No job with id ${id}`);
    if (this.faults.reject_commands) throw new HttpError(409, 'Conflict', 'The printer refuses commands right now');
    const ok = action === 'pause' ? p.pause() : action === 'resume' || action === 'continue' ? p.resume() : p.stop();
    if (!ok) throw new HttpError(409, 'Conflict', `Cannot ${action ?? 'stop'} a job in state ${p.job.state}`);
    this.empty(res, 204);
  }

  private async files(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    method: string,
    storageName: string,
    segments: string[],
    trailingSlash: boolean,
  ): Promise<void> {
    if (storageName !== this.storage.name) {
      req.resume();
      throw new HttpError(404, 'Not Found', `No storage ${storageName}`);
    }
    const entry = this.storage.resolve(segments);
    const p = this.printer;
    const printing = (e: FsEntry) => p.busy && p.job !== null && (p.job.file === e || isAncestor(e, p.job.file));

    if (method === 'PUT') {
      if (segments.length === 0) throw new HttpError(409, 'Conflict', 'Cannot write the storage root');
      if (trailingSlash) {
        req.resume();
        if (entry) throw new HttpError(409, 'Conflict', 'Already exists');
        if (!this.storage.mkdirs(segments)) throw new HttpError(409, 'Conflict', 'A file is in the way');
        return this.empty(res, 201);
      }
      if (entry && !sfBool(req.headers.overwrite)) {
        req.resume();
        throw new HttpError(409, 'Conflict', 'File already exists');
      }
      if (entry && printing(entry)) {
        req.resume();
        throw new HttpError(409, 'Conflict', 'File is being printed');
      }
      const data = await readBody(req, MAX_UPLOAD);
      const written = this.storage.write(segments, data);
      if (!written) throw new HttpError(409, 'Conflict', 'A file or folder is in the way');
      if (sfBool(req.headers['print-after-upload']) && !p.busy && written.type === 'PRINT_FILE') p.start(written);
      return this.empty(res, 201);
    }

    req.resume();
    if (!entry) throw new HttpError(404, 'Not Found', 'File not found');

    switch (method) {
      case 'GET':
        return this.json(res, 200, this.entryBody(entry, true));
      case 'HEAD':
        res.writeHead(200, { 'Read-Only': 'false', 'Currently-Printing': printing(entry) ? 'true' : 'false' });
        res.end();
        return;
      case 'POST':
        if (this.faults.reject_commands) throw new HttpError(409, 'Conflict', 'The printer refuses commands right now');
        if (entry.type !== 'PRINT_FILE') throw new HttpError(409, 'Conflict', 'Not a printable file');
        if (p.busy || p.overlay === 'ATTENTION') throw new HttpError(409, 'Conflict', 'The printer is busy');
        p.start(entry);
        return this.empty(res, 204);
      case 'DELETE':
        if (entry === this.storage.root) throw new HttpError(409, 'Conflict', 'Cannot delete the storage root');
        if (printing(entry)) throw new HttpError(409, 'Conflict', 'File is being printed');
        if (entry.type === 'FOLDER' && (entry.children?.length ?? 0) > 0 && !sfBool(req.headers.force))
          throw new HttpError(409, 'Conflict', 'Folder is not empty');
        this.storage.remove(entry);
        return this.empty(res, 204);
      default:
        throw new HttpError(405, 'Method Not Allowed', `${method} is not allowed here`);
    }
  }

  private download(req: http.IncomingMessage, res: http.ServerResponse, segments: string[]): void {
    req.resume();
    const entry = this.storage.resolve(segments);
    if (!entry || entry.type === 'FOLDER' || !entry.data) throw new HttpError(404, 'Not Found', 'File not found');
    const data = entry.data;
    res.writeHead(200, {
      'Content-Type': 'application/octet-stream',
      'Content-Length': String(data.length),
      'Content-Disposition': `attachment; filename="${entry.sfn}"`,
    });
    if (req.method === 'HEAD') return void res.end();
    const rate = this.faults.transfer_bytes_per_sec;
    if (!rate) return void res.end(data);

    // Throttled: a slice every 50 ms.
    const slice = Math.max(1, Math.floor(rate / 20));
    let offset = 0;
    let timer: NodeJS.Timeout | null = null;
    const stop = () => {
      if (timer) {
        clearTimeout(timer);
        this.timers.delete(timer);
      }
      timer = null;
    };
    const step = () => {
      if (timer) this.timers.delete(timer);
      timer = null;
      if (res.destroyed) return;
      // /stall mid-transfer: the connection stays open and silent (a printer that hangs during a download).
      if (this.stalled) {
        timer = setTimeout(step, 50);
        this.timers.add(timer);
        return;
      }
      const chunk = data.subarray(offset, offset + slice);
      offset += chunk.length;
      if (offset >= data.length) return void res.end(chunk);
      res.write(chunk);
      timer = setTimeout(step, 50);
      this.timers.add(timer);
    };
    res.once('close', stop);
    step();
  }

  private json(res: http.ServerResponse, status: number, body: unknown): void {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(text)) });
    res.end(text);
  }

  private empty(res: http.ServerResponse, status: number): void {
    res.writeHead(status);
    res.end();
  }

  private sendError(req: http.IncomingMessage, res: http.ServerResponse, status: number, title: string, text: string): void {
    const wantsJson = /json/i.test(String(req.headers.accept ?? ''));
    const body = wantsJson ? JSON.stringify({ title, text }) : `${title}: ${text}`;
    res.writeHead(status, {
      'Content-Type': wantsJson ? 'application/json' : 'text/plain',
      'Content-Length': String(Buffer.byteLength(body)),
    });
    res.end(req.method === 'HEAD' ? undefined : body);
  }

  // ------------------------------------------------------------ control API

  private async handleControl(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const reply = (status: number, body: unknown) => {
      const text = JSON.stringify(body);
      res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(text)) });
      res.end(text);
    };
    try {
      const path = new URL(req.url ?? '/', 'http://control').pathname.replace(/\/+$/, '') || '/';
      const method = req.method ?? 'GET';
      if (method === 'GET' && (path === '/state' || path === '/')) return reply(200, this.snapshot());
      if (method !== 'POST') return reply(405, { error: 'use POST (GET only for /state)' });
      const raw = await readBody(req, 64 * 1024);
      let body: Record<string, unknown> = {};
      if (raw.length) {
        try {
          const parsed: unknown = JSON.parse(raw.toString('utf8'));
          if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) body = parsed as Record<string, unknown>;
          else return reply(400, { error: 'body must be a JSON object' });
        } catch {
          return reply(400, { error: 'body is not JSON' });
        }
      }
      const p = this.printer;
      const conflict = (what: string) => reply(409, { error: `cannot ${what} in state ${p.state}`, state: this.snapshot() });
      const ok = () => reply(200, { ok: true, state: this.snapshot() });
      switch (path) {
        case '/print': {
          const name = typeof body.file === 'string' ? body.file : '';
          const entry = name ? this.storage.find(name) : null;
          if (!entry || entry.type === 'FOLDER') return reply(404, { error: `no file "${name}" on the printer`, files: this.snapshot().files });
          p.advance();
          if (p.busy) return conflict('start a print');
          p.start(entry);
          return ok();
        }
        case '/pause':
          return p.pause() ? ok() : conflict('pause');
        case '/resume':
          return p.resume() ? ok() : conflict('resume');
        case '/finish':
          return p.finish() ? ok() : conflict('finish');
        case '/fail':
          return p.fail(typeof body.message === 'string' ? body.message : 'Thermal runaway') ? ok() : conflict('fail');
        case '/cancel':
          return p.stop() ? ok() : conflict('cancel');
        case '/attention':
          p.attention(typeof body.message === 'string' ? body.message : 'Filament runout');
          return ok();
        case '/busy':
          return p.setOverlay('BUSY') ? ok() : conflict('go busy');
        case '/ready':
          return p.setOverlay('READY') ? ok() : conflict('go ready');
        case '/idle':
          return p.idle() ? ok() : conflict('go idle');
        case '/offline':
          await this.goOffline();
          return ok();
        case '/online':
          await this.goOnline();
          return ok();
        case '/stall':
          this.stall();
          return ok();
        case '/faults':
          this.setFaults(body as Partial<PrusaFaults>);
          return ok();
        default:
          return reply(404, { error: `unknown control ${path}` });
      }
    } catch (err) {
      if (!res.headersSent) reply(500, { error: (err as Error)?.message ?? String(err) });
    }
  }
}

// ------------------------------------------------------------ helpers

function round1(n: number): number {
  return Math.round(n * 10) / 10;
}

function isAncestor(folder: FsEntry, entry: FsEntry): boolean {
  for (let e = entry.parent; e; e = e.parent) if (e === folder) return true;
  return false;
}

function decodeSegment(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    throw new HttpError(400, 'Bad Request', 'Bad path encoding');
  }
}

function segmentsOf(path: string): string[] {
  const segments = path.split('/').filter(Boolean).map(decodeSegment);
  if (segments.some((s) => s === '.' || s === '..')) throw new HttpError(400, 'Bad Request', 'Bad path');
  return segments;
}

function readBody(req: http.IncomingMessage, limit: number): Promise<Buffer> {
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

function track(server: http.Server, sockets: Set<Socket>): void {
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
}

function listen(server: http.Server, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, HOST, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

function closeServer(server: http.Server, sockets: Set<Socket>): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    for (const s of sockets) s.destroy();
    sockets.clear();
  });
}


