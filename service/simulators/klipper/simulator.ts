/**
 * A simulated Klipper printer behind Moonraker on loopback.
 *
 * - Moonraker's API on `httpPort`: HTTP routes (routes.ts) and the JSON-RPC
 *   2.0 WebSocket `/websocket` (rpc.ts) with object subscriptions whose
 *   changes are pushed as `notify_status_update` deltas (4 Hz at most) and
 *   the `notify_klippy_*` notifications when Klippy shuts down, restarts or
 *   goes away. With an API key: X-Api-Key, or `?token=` from
 *   /access/oneshot_token (single use, 5 s), else 401.
 * - Options for the forks in the field: no `display_status` object, no
 *   one-shot tokens (old Moonraker).
 * - A control API on `controlUrl` (control.ts), like the other simulators.
 * close() ends both servers, every socket and every timer.
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { randomBytes } from 'node:crypto';
import { pipeline } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { BENCH_NOZZLE_BASE, BENCH_NOZZLE_STEPS } from '../bambu/options';
import { klipperGcode } from '../seed-files';
import type { SeedFile } from '../seed-files';
import { closeServer, HOST, listen, track } from '../prusa/http-util';
import { handleKlipperControl } from './control';
import { SimGcodes } from './files';
import { KlipperMachine } from './machine';
import { ALL_OBJECTS, objectStatus, RUNOUT_SENSOR } from './objects';
import { SimHistory } from './history';
import { HttpFail, reply, route } from './routes';
import { handleRpc, RpcError, type SimClient } from './rpc';
import { Throttle } from './throttle';
import { startReportClock, type ReportClock } from '../report-clock';

export interface KlipperSimulatorOptions {
  /** Moonraker API key; none: every client is trusted. */
  apiKey?: string;
  /** The configured model, free text (default "Voron 2.4 350"): the seed G-code is sliced for it. */
  model?: string;
  name?: string;
  id?: string;
  speed?: number;
  /** Printer seconds one print takes after heating (default 600). */
  printSeconds?: number;
  port?: number;
  /** Leave the display_status object out (vendor forks without [display_status]). */
  noDisplayStatus?: boolean;
  /** An old Moonraker without /access/oneshot_token (the API key goes in the header). */
  noOneshotToken?: boolean;
  /** A Moonraker without its history component (no server.history.*, no notify_history_changed). */ noHistory?: boolean;
  /** A filament runout sensor (`filament_switch_sensor runout`, pausing the print when filament runs out). */
  runoutSensor?: boolean;
  /** Report a webcam in server.webcams.list (paths on the web frontend, as crowsnest's default). */
  camera?: boolean;
  /** A webcam served on the API port (GET /webcam/?action=snapshot, no API key), listed with full URLs. */
  cameraServed?: boolean;
  nozzleDiameter?: number;
  files?: SeedFile[];
  /** Benchmarks: no control API (default true: one). */
  control?: boolean;
  /**
   * Benchmarks: instead of the 4 Hz ticker, a delta every `intervalMs` (at `phaseMs` of each interval, see
   * report-clock.ts) that sets a new extruder temperature (BENCH_NOZZLE_BASE + a sawtooth step); `onReport`
   * says when each one leaves.
   */
  bench?: { intervalMs: number; phaseMs: number; onReport(info: { id: string; nozzle: number }): void };
  /** Moonraker's [spoolman] integration, with this active spool (default none: no Spoolman). */
  spool?: SimSpool | null;
}

/** The active Spoolman spool: its filament and what is left of it. */
export interface SimSpool {
  id: number;
  material: string;
  /** RRGGBB */
  color_hex: string;
  weight: number;
  remaining_weight: number;
}

export interface KlipperFaults {
  reject_commands: boolean;
  /** JSON-RPC requests get no answer (the socket and its pongs stay up): a hung Moonraker. */
  silent_rpc: boolean;
  /** Throttle uploads to this many bytes per second (0: unthrottled). */
  transfer_bytes_per_sec: number;
  /** Every JSON-RPC answer goes this late (taken at once; notifications are not held): a busy Moonraker or host. */
  rpc_delay_ms: number;
}

export class KlipperSimulator {
  readonly machine: KlipperMachine;
  readonly files = new SimGcodes();
  readonly history = new SimHistory((action, job) => !this.options.noHistory && this.notifyAll('notify_history_changed', [{ action, job }]));
  readonly faults: KlipperFaults = { reject_commands: false, silent_rpc: false, transfer_bytes_per_sec: 0, rpc_delay_ms: 0 };
  readonly stats = { requests: 0, unauthorized: 0, uploads: 0, ws_connections: 0, rpc_calls: 0, subscribes: 0, webcam_snapshots: 0 };
  readonly model: string;
  readonly name: string;
  readonly id: string;
  readonly nozzleDiameter: number;
  readonly klipperVersion = 'v0.12.0-290-g1f8ba4f7';
  printsStarted = 0;
  /** The active spool (null: none set); undefined options.spool means no Spoolman component at all. */
  spool: SimSpool | null;
  lastStart: { source: 'upload' | 'api' | 'screen'; file: string; at: string } | null = null;
  httpPort = 0;
  controlPort = 0;
  private api: http.Server | null = null;
  private control: http.Server | null = null;
  private readonly wss: WebSocketServer;
  private readonly clients = new Set<SimClient>();
  private readonly apiSockets = new Set<Socket>();
  private readonly controlSockets = new Set<Socket>();
  private readonly tokens = new Map<string, number>();
  private readonly started = Date.now();
  private ticker: ReportClock | null = null;
  private offline = false;
  private closed = false;
  private nextClient = 1;

  private constructor(readonly options: KlipperSimulatorOptions) {
    this.model = options.model ?? 'Voron 2.4 350';
    this.name = options.name ?? `Klipper ${this.model} (simulated)`;
    this.id = options.id ?? '';
    this.nozzleDiameter = options.nozzleDiameter ?? 0.4;
    this.machine = new KlipperMachine(options.speed ?? 1, options.printSeconds ?? 600);
    this.spool = options.spool ?? null;
    this.wss = new WebSocketServer({ noServer: true, maxPayload: 1024 * 1024 });
    for (const f of options.files ?? [{ name: 'cube_0.2mm_PLA_12m.gcode', data: klipperGcode(this.model) }]) this.files.write(f.name, f.data);
  }

  static async start(options: KlipperSimulatorOptions = {}): Promise<KlipperSimulator> {
    const sim = new KlipperSimulator(options);
    try {
      await sim.listenApi(options.port ?? 0);
      if (options.control !== false) {
        sim.control = http.createServer((req, res) => void handleKlipperControl(sim, req, res));
        track(sim.control, sim.controlSockets);
        await listen(sim.control, 0);
        sim.controlPort = (sim.control.address() as AddressInfo).port;
      }
      sim.startTicker();
    } catch (err) {
      await sim.close();
      throw err;
    }
    return sim;
  }

  get controlUrl(): string {
    return `http://${HOST}:${this.controlPort}`;
  }

  get url(): string {
    return `http://${HOST}:${this.httpPort}`;
  }

  /** A body for POST /api/v1/printers that points the service at this simulator. */
  printerConfig() {
    const slug = this.model.toLowerCase().replace(/[^a-z0-9]+/g, '-');
    return {
      id: this.id || `klipper-${slug}-${this.httpPort}`,
      name: this.name,
      type: 'klipper' as const,
      model: this.model,
      ip_address: HOST,
      http_port: this.httpPort,
      ...(this.options.apiKey ? { access_code: this.options.apiKey } : {}),
    };
  }

  hasObject(name: string): boolean {
    if (name === RUNOUT_SENSOR) return this.options.runoutSensor === true;
    return ALL_OBJECTS.includes(name) && !(name === 'display_status' && this.options.noDisplayStatus);
  }

  objectNames(): string[] {
    return [...ALL_OBJECTS, RUNOUT_SENSOR].filter((n) => this.hasObject(n));
  }

  eventtime(): number {
    return Math.round((Date.now() - this.started) / 10) / 100 + 1000;
  }

  serverInfo() {
    const k = this.machine.klippy;
    return {
      klippy_connected: k !== 'disconnected',
      klippy_state: k,
      components: ['database', 'file_manager', 'klippy_apis', 'machine', 'data_store', ...(this.options.noHistory ? [] : ['history']), 'authorization', ...(this.options.camera || this.options.cameraServed ? ['webcam'] : []), ...(this.options.spool !== undefined ? ['spoolman'] : [])],
      failed_components: [],
      registered_directories: ['config', 'gcodes', 'logs'],
      warnings: [],
      websocket_count: this.clients.size,
      moonraker_version: 'v0.9.3-12-gd1a5c3e',
      api_version: [1, 5, 0],
      api_version_string: '1.5.0',
    };
  }

  issueToken(): string {
    const token = randomBytes(16).toString('base64url').toUpperCase().replace(/[^A-Z0-9]/g, 'A');
    if (this.tokens.size > 1000) this.tokens.clear();
    this.tokens.set(token, Date.now() + 5000);
    return token;
  }

  /** Starts `file`; false when the printer is busy or Klippy is not ready. */
  startPrint(file: string, source: 'upload' | 'api' | 'screen'): boolean {
    if (!this.machine.start(file)) return false;
    this.printsStarted++;
    this.lastStart = { source, file, at: new Date().toISOString() };
    this.pushNow();
    return true;
  }

  private startTicker(): void {
    const bench = this.options.bench;
    if (!bench) {
      this.ticker = startReportClock(250, undefined, () => this.pushNow());
      return;
    }
    let step = 0;
    const report = () => {
      this.pushNow(() => {
        this.machine.nozzle = BENCH_NOZZLE_BASE + (step++ % BENCH_NOZZLE_STEPS);
        bench.onReport({ id: this.printerConfig().id, nozzle: this.machine.nozzle });
      });
    };
    this.ticker = startReportClock(bench.intervalMs, bench.phaseMs, report);
  }

  /** Sends every subscribed client the fields that changed (after `change`, a benchmark's new temperature). */
  pushNow(change?: () => void): void {
    if (this.closed) return;
    this.machine.advance();
    this.history.observe(this.machine);
    change?.();
    const read = (name: string) => (this.hasObject(name) ? objectStatus(this.machine, name, { nozzleDiameter: this.nozzleDiameter }) : undefined);
    for (const client of this.clients) {
      const delta = client.subscription?.delta(read);
      if (delta) this.send(client.ws, { jsonrpc: '2.0', method: 'notify_status_update', params: [delta, this.eventtime()] });
    }
  }

  /** A notification to every client (notify_klippy_shutdown...). */
  notifyAll(method: string, params?: unknown[]): void {
    for (const client of this.clients) this.send(client.ws, { jsonrpc: '2.0', method, ...(params ? { params } : {}) });
  }

  /** Hostile Moonraker: garbage frames, one huge frame, a flood of deltas, answers to ids nobody sent. */
  hostile(kind: string, count: number, bytes: number): boolean {
    const frames: (string | Buffer)[] = [];
    if (kind === 'garbage') for (let i = 0; i < count; i++) frames.push(i % 3 === 0 ? 'not json {' : i % 3 === 1 ? '[1,2,3]' : '{"jsonrpc":"2.0","id":"x"}');
    else if (kind === 'huge') frames.push(JSON.stringify({ jsonrpc: '2.0', method: 'notify_gcode_response', params: ['x'.repeat(bytes)] }));
    else if (kind === 'flood') for (let i = 0; i < count; i++) frames.push(JSON.stringify({ jsonrpc: '2.0', method: 'notify_status_update', params: [{ extruder: { temperature: 20 + (i % 50) } }, i] }));
    else if (kind === 'unknown_ids') for (let i = 0; i < count; i++) frames.push(JSON.stringify({ jsonrpc: '2.0', result: 'ok', id: 900_000 + i }));
    else return false;
    for (const client of this.clients) for (const f of frames) client.ws.send(f);
    return true;
  }

  async goOffline(): Promise<void> {
    if (this.offline) return;
    this.offline = true;
    for (const c of this.clients) c.ws.terminate();
    this.clients.clear();
    const server = this.api;
    this.api = null;
    if (server) await closeServer(server, this.apiSockets);
  }

  async goOnline(): Promise<void> {
    if (!this.offline) return;
    await this.listenApi(this.httpPort);
    this.offline = false;
  }

  setFaults(patch: Partial<KlipperFaults>): KlipperFaults {
    if (typeof patch.reject_commands === 'boolean') this.faults.reject_commands = patch.reject_commands;
    if (typeof patch.silent_rpc === 'boolean') this.faults.silent_rpc = patch.silent_rpc;
    if (typeof patch.transfer_bytes_per_sec === 'number' && patch.transfer_bytes_per_sec >= 0) this.faults.transfer_bytes_per_sec = Math.floor(patch.transfer_bytes_per_sec);
    if (typeof patch.rpc_delay_ms === 'number' && patch.rpc_delay_ms >= 0) this.faults.rpc_delay_ms = Math.min(60_000, Math.floor(patch.rpc_delay_ms));
    return { ...this.faults };
  }

  sendFile(res: http.ServerResponse, data: Buffer, headOnly: boolean): void {
    res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': String(data.length) });
    res.end(headOnly ? undefined : data);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.ticker?.stop();
    for (const c of this.clients) c.ws.terminate();
    this.clients.clear();
    this.wss.close();
    const servers: Array<[http.Server | null, Set<Socket>]> = [
      [this.api, this.apiSockets],
      [this.control, this.controlSockets],
    ];
    this.api = this.control = null;
    await Promise.all(servers.map(([s, sockets]) => (s ? closeServer(s, sockets) : Promise.resolve())));
  }

  // ------------------------------------------------------------ the API server

  private authorized(req: http.IncomingMessage, url: URL): boolean {
    const key = this.options.apiKey;
    if (!key || (this.options.cameraServed && url.pathname === '/webcam/')) return true; // a webcam is not Moonraker's
    if (req.headers['x-api-key'] === key) return true;
    const token = url.searchParams.get('token');
    const until = token ? this.tokens.get(token) : undefined;
    if (token && until !== undefined) {
      this.tokens.delete(token);
      if (until > Date.now()) return true;
    }
    this.stats.unauthorized++;
    return false;
  }

  private async listenApi(port: number): Promise<void> {
    const server = http.createServer((req, res) => void this.handleHttp(req, res));
    server.on('upgrade', (req, socket, head) => this.upgrade(req, socket as Socket, head));
    track(server, this.apiSockets);
    await listen(server, port);
    this.api = server;
    this.httpPort = (server.address() as AddressInfo).port;
  }

  private async handleHttp(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    this.stats.requests++;
    try {
      const url = new URL(req.url ?? '/', 'http://moonraker');
      if (!this.authorized(req, url)) {
        req.resume();
        return reply(res, 401, { error: { code: 401, message: 'Unauthorized' } });
      }
      const throttled = this.faults.transfer_bytes_per_sec > 0 && req.method === 'POST' ? new Throttle(this.faults.transfer_bytes_per_sec) : null;
      // pipeline, not pipe: an upload cut off (the client gone) ends the throttle and its timer with it.
      if (throttled) pipeline(req, throttled, () => {});
      await route(this, throttled ? (Object.assign(throttled, { headers: req.headers, method: req.method }) as unknown as http.IncomingMessage) : req, res, url);
    } catch (err) {
      if (res.headersSent) return void res.destroy();
      const status = err instanceof HttpFail ? err.status : 500;
      reply(res, status, { error: { code: status, message: (err as Error)?.message ?? 'error' } });
    }
  }

  private upgrade(req: http.IncomingMessage, socket: Socket, head: Buffer): void {
    // An upgraded socket has no error listener of Node's: a client's reset must not end the simulator's process.
    socket.on('error', () => undefined);
    const url = new URL(req.url ?? '/', 'http://moonraker');
    if (url.pathname !== '/websocket' || this.offline) return void socket.destroy();
    if (!this.authorized(req, url)) {
      socket.end('HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
      return;
    }
    this.wss.handleUpgrade(req, socket, head, (ws) => this.accept(ws));
  }

  private accept(ws: WebSocket): void {
    const client: SimClient = { ws, subscription: null, id: this.nextClient++ };
    this.clients.add(client);
    this.stats.ws_connections++;
    ws.on('error', () => undefined);
    ws.on('close', () => this.clients.delete(client));
    ws.on('message', (data) => {
      let msg: { method?: unknown; params?: unknown; id?: unknown };
      try {
        msg = JSON.parse(data.toString());
      } catch {
        return this.send(ws, { jsonrpc: '2.0', error: { code: -32700, message: 'Parse error' }, id: null });
      }
      if (typeof msg?.method !== 'string') return this.send(ws, { jsonrpc: '2.0', error: { code: -32600, message: 'Invalid Request' }, id: msg?.id ?? null });
      this.stats.rpc_calls++;
      if (this.faults.silent_rpc) return;
      const params = msg.params && typeof msg.params === 'object' && !Array.isArray(msg.params) ? (msg.params as Record<string, unknown>) : {};
      try {
        const result = handleRpc(this, client, msg.method, params);
        this.answer(ws, { jsonrpc: '2.0', result, id: msg.id });
      } catch (err) {
        const e = err instanceof RpcError ? err : new RpcError(500, (err as Error)?.message ?? 'error');
        this.answer(ws, { jsonrpc: '2.0', error: { code: e.code, message: e.message }, id: msg.id });
      }
    });
  }

  private send(ws: WebSocket, body: unknown): void {
    if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(body));
  }

  /** An answer, late when rpc_delay_ms says so (unref'd: a closed simulator does not wait for it). */
  private answer(ws: WebSocket, body: unknown): void {
    const delay = this.faults.rpc_delay_ms;
    if (delay > 0) setTimeout(() => this.send(ws, body), delay).unref();
    else this.send(ws, body);
  }
}
