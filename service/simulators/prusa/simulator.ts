/**
 * A simulated PrusaLink printer (Buddy firmware: MK4S, Core One) on loopback.
 *
 * - The printer API on `httpPort`: HTTP Digest exactly as Buddy does it
 *   (user `maker`, realm "Printer API", a 16-hex nonce valid ~5 s, no qop,
 *   `stale=true` for an expired nonce) or `X-Api-Key`; the v1 endpoints of
 *   the PrusaLink OpenAPI description; downloads at refs.download.
 * - Starting prints the way PrusaLink does (prusa/file-routes.ts): PUT with
 *   `Print-After-Upload: ?1` or POST on an existing file; 409 when the
 *   printer is not ready at its screen or is printing.
 * - What a queue needs to know: the loaded filament (`printer.material` in
 *   /api/v1/status, as Buddy reports it), the nozzle diameter (/api/v1/info,
 *   /api/version) and the model (`text` "PrusaLink MK4S" in /api/version as
 *   Buddy writes it, and the default hostname "prusa-mk4s").
 * - A control API on `controlUrl` (JSON, prusa/control.ts) that drives the
 *   print and injects faults: /print /pause /resume /finish /fail /cancel
 *   /offline /online /stall /faults /materials, GET /state; plus /attention
 *   /busy /ready /not-ready /idle to reach every printer state.
 *
 * close() ends both servers, every socket and every timer.
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { randomBytes } from 'node:crypto';
import { seedFiles } from '../seed-files';
import { BuddyAuth } from './auth';
import { PrusaSimCamera } from './camera';
import { handleControl } from './control';
import { infoBody, jobBody, statusBody, storageBody, versionBody } from './bodies';
import { download, handleFiles } from './file-routes';
import { SimStorage, type FsEntry } from './files';
import { closeServer, decodeSegment, HOST, HttpError, listen, round1, segmentsOf, sendEmpty, sendError, sendJson, track } from './http-util';
import { SimPrinter } from './printer';
import { parseMaterials, startRefusal } from './starts';
import type { PrusaFaults, PrusaMaterial, PrusaPrinterConfig, PrusaSimulatorOptions, PrusaStartRecord } from './types';

// Kept importable from here, where they have always been.
export type { PrusaFaults, PrusaMaterial, PrusaPrinterConfig, PrusaSimulatorOptions, PrusaStartRecord };

export class PrusaSimulator {
  readonly password: string;
  readonly model: string;
  readonly name: string;
  readonly id: string;
  readonly storage = new SimStorage('usb');
  readonly printer: SimPrinter;
  readonly faults: PrusaFaults = { partial_reports: false, reject_commands: false, transfer_bytes_per_sec: 0, camera_stalled: false };
  /** /api/v1/cameras and /api/v1/cameras/snap (an empty list and 404 unless started with `camera: true`). */
  readonly camera: PrusaSimCamera;
  /** Counters: what the printer saw (tests assert on them). */
  readonly stats = { requests: 0, unauthorized: 0, stale_nonces: 0, digest_ok: 0, api_key_ok: 0 };
  readonly nozzleDiameter: number;
  /** Starts the printer accepted since the simulator started (uploads, POST, the screen). */
  printsStarted = 0;
  /** Starts refused with 409 (not ready, busy). */
  startsRefused = 0;
  lastStart: PrusaStartRecord | null = null;
  /** Default: white PLA in its one tool. */
  materials: PrusaMaterial[] = [{ slot: 0, type: 'PLA', color: '#FFFFFF' }];

  httpPort = 0;
  controlPort = 0;
  private api: http.Server | null = null;
  private control: http.Server | null = null;
  private readonly apiSockets = new Set<Socket>();
  private readonly controlSockets = new Set<Socket>();
  private readonly hung = new Set<http.ServerResponse>();
  /** Timers of throttled downloads, cleared by close(). */
  readonly timers = new Set<NodeJS.Timeout>();
  private readonly auth: BuddyAuth;
  private offline = false;
  private stalled = false;

  /** True while /stall holds the printer silent (a download in flight stays open and sends nothing). */
  get isStalled(): boolean {
    return this.stalled;
  }
  private closed = false;
  private statusCount = 0;
  private readonly options: PrusaSimulatorOptions;

  private constructor(options: PrusaSimulatorOptions) {
    this.options = options;
    this.password = options.password ?? randomBytes(6).toString('hex');
    this.model = options.model ?? 'Core One';
    this.name = options.name ?? `Prusa ${this.model} (simulated)`;
    this.id = options.id ?? '';
    this.nozzleDiameter = options.nozzleDiameter ?? 0.4;
    this.printer = new SimPrinter(options.speed ?? 1, options.printSeconds ?? 600);
    this.auth = new BuddyAuth({ ...options, password: this.password }, this.stats);
    const facts = () => ({ name: this.name, state: this.printer.state, progress: this.printer.progress() });
    this.camera = new PrusaSimCamera(options.camera ?? false, facts, () => this.faults.camera_stalled);
    // The seed G-code and BGCode are sliced for this very model.
    for (const f of options.files ?? seedFiles({ prusa: this.model })) this.storage.write(f.name.split('/'), f.data);
  }

  static async start(options: PrusaSimulatorOptions = {}): Promise<PrusaSimulator> {
    const sim = new PrusaSimulator(options);
    try {
      await sim.listenApi(options.port ?? 0);
      sim.control = http.createServer((req, res) => void handleControl(sim, req, res));
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
      ...(this.options.apiKeyOnly ? { auth_method: 'api_key' as const } : {}),
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
      camera: { enabled: this.camera.enabled, snaps: this.camera.stats.snaps },
      screen_ready: p.screenReady,
      prints_started: this.printsStarted,
      starts_refused: this.startsRefused,
      last_start: this.lastStart,
      materials: this.materials.map((m) => ({ ...m })),
      nozzle_diameter: this.nozzleDiameter,
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
    if (typeof patch.camera_stalled === 'boolean') this.faults.camera_stalled = patch.camera_stalled;
    if (!this.faults.camera_stalled) this.camera.release();
    return { ...this.faults };
  }

  // ------------------------------------------------------------ starting prints

  /** What /api/version and /api/v1/info tell about this printer. */
  private bodySource() {
    const o = this.options;
    return { name: this.name, model: this.model, nozzleDiameter: this.nozzleDiameter, httpPort: this.httpPort, serial: o.serial, mmu: o.mmu, camera: o.camera };
  }

  /** Why a start would get 409 now, or null when the printer would take it. */
  startRefusal(): string | null {
    return startRefusal(this.printer, this.faults);
  }

  /** Starts `entry` as a new job (new job id) and records the start. */
  startJob(entry: FsEntry, source: PrusaStartRecord['source']): void {
    const job = this.printer.start(entry);
    this.printsStarted++;
    this.lastStart = { source, file: this.storage.longPathOf(entry), plate: null, ams_mapping: null, job_id: job.id, at: new Date().toISOString() };
  }

  /** A POST /materials body: `{"materials":[{"slot":0,"type":"PLA","color":"#FFFFFF"}]}`, one tool (slot 0); [] unloads. */
  applyMaterials(body: Record<string, unknown>): { ok: true; materials: PrusaMaterial[] } | { ok: false; error: string } {
    const parsed = parseMaterials(body);
    if (!parsed.ok) return parsed;
    const out = parsed.materials;
    this.materials = out;
    return { ok: true, materials: out.map((m) => ({ ...m })) };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    this.releaseHung();
    this.camera.release();
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
      if (!this.auth.authorized(req, res)) {
        req.resume();
        return;
      }
      await this.route(req, res, url);
    } catch (err) {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      if (err instanceof HttpError) sendError(req, res, err.status, err.title, err.message);
      else sendError(req, res, 500, 'Internal Server Error', (err as Error)?.message ?? 'error');
    }
  }

  private async route(req: http.IncomingMessage, res: http.ServerResponse, url: URL): Promise<void> {
    const method = req.method ?? 'GET';
    const path = url.pathname;
    const p = this.printer;
    p.advance();

    if (method === 'GET' && path === '/api/version') return sendJson(res, 200, versionBody(this.bodySource()));
    if (this.options.noV1Api && path.startsWith('/api/v1/')) {
      req.resume();
      throw new HttpError(404, 'Not Found', `No such endpoint: ${method} ${path}`);
    }
    if (method === 'GET' && path === '/api/v1/info') return sendJson(res, 200, infoBody(this.bodySource()));
    if (method === 'GET' && path === '/api/v1/status') return sendJson(res, 200, statusBody(this, () => this.statusCount++));
    if (method === 'GET' && path === '/api/v1/storage') return sendJson(res, 200, storageBody(this.storage));
    if (method === 'GET' && path === '/api/v1/cameras') return this.camera.list(res);
    if (method === 'GET' && path === '/api/v1/cameras/snap') return this.camera.snap(res);
    if (method === 'GET' && path === '/api/v1/job') {
      const body = jobBody(this.printer, this.storage);
      if (!body) return sendEmpty(res, 204);
      return sendJson(res, 200, body);
    }
    const jobControl = /^\/api\/v1\/job\/([^/]+)(?:\/(pause|resume|continue))?$/.exec(path);
    if (jobControl) return this.jobControl(req, res, method, jobControl[1], jobControl[2]);

    const files = /^\/api\/v1\/files\/([^/]+)(\/.*)?$/.exec(path);
    if (files) return handleFiles(this, req, res, method, decodeSegment(files[1]), segmentsOf(files[2] ?? ''), (files[2] ?? '').endsWith('/'));

    if (/^\/thumb\/[sl]\//.test(path)) throw new HttpError(404, 'Not Found', "File doesn't contain preview");

    const fileUrl = new RegExp(`^/${this.storage.name}(/.*)$`).exec(path);
    if (fileUrl && (method === 'GET' || method === 'HEAD')) return download(this, req, res, segmentsOf(fileUrl[1]));

    req.resume();
    throw new HttpError(404, 'Not Found', `No such endpoint: ${method} ${path}`);
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
    sendEmpty(res, 204);
  }
}
