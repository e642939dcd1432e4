/**
 * A simulated Bambu Lab printer on 127.0.0.1 that speaks the real LAN
 * protocols over real sockets (PROTOCOLS.md §1-2):
 *
 * - MQTT over TLS (aedes behind node:tls, self-signed certificate with
 *   CN = serial), user `bblp` + access code. Reports on
 *   `device/{serial}/report` about once a second (faster with `speed`):
 *   `push_status` `msg:0` full snapshots after pushall, `msg:1` otherwise.
 *   Requests on `device/{serial}/request`: pushall, get_version, pause,
 *   resume, stop, project_file, gcode_file (answered with `result`).
 * - Implicit FTPS with vsftpd's manners, including 522 for a data connection
 *   that does not resume the control connection's TLS session.
 * - A control API (JSON over HTTP, `controlUrl`) to drive it like a person
 *   at the printer and to inject faults:
 *     POST /print {"file": "<name or path>"}   start a stored file
 *     POST /pause /resume /finish /fail /cancel
 *     POST /offline   drop every connection, refuse new ones
 *     POST /stall     keep sockets open, send and answer nothing
 *     POST /online    back to normal (ends offline and stall)
 *     POST /faults {"partial_reports": bool, "reject_commands": bool, "transfer_bytes_per_sec": N}
 *     GET  /state     {status, gcode_state, progress, file, files, link, faults, stats, ...}
 *
 * Time runs `speed` times faster than the wall clock: a 10-minute print at
 * speed 60 takes 10 s.
 *
 * For benchmarks with hundreds of printers (bench/fleet.ts): one shared TLS
 * key/cert (`tls`), no FTPS (`ftps: false`) and no control API
 * (`control: false`) make a simulator cheap to start; `reportOffsetMs`
 * spreads the reports over the second; `benchReports` makes every report
 * change the nozzle temperature and `onReport` tells when each one leaves.
 */
import { randomInt } from 'node:crypto';
import http from 'node:http';
import type net from 'node:net';
import { generate } from 'selfsigned';
import { SimStorage, type SimFile } from './bambu/files';
import { SimFtps } from './bambu/ftps';
import type { LinkMode } from './bambu/gate';
import { SimMqtt } from './bambu/mqtt';
import { SimPrinter, type CommandResult, type Json } from './bambu/printer';
import { CORE_KEYS, diffReport } from './bambu/reports';

export interface BambuSimulatorOptions {
  /** Printer serial (default: a random one with the model's real prefix, e.g. 01P00A… for a P1S). */
  serial?: string;
  /** LAN access code (default: 8 random digits). */
  accessCode?: string;
  /** Model as Bambu names it: P1S (default), P1P, X1C, X1E, A1, A1 mini, H2D… */
  model?: string;
  /** Time compression: 1 = real time, 60 = a minute per second. */
  speed?: number;
  /** Display name (default "Simulated <model>"). */
  name?: string;
  /** Printer id for printerConfig() (default derived from the serial). */
  id?: string;
  /** OTA firmware reported by get_version (default "01.08.02.00"). */
  firmware?: string;
  /** Report period in ms (default: 1000 / speed, kept between 100 and 1000). */
  reportIntervalMs?: number;
  /** LAN Developer Mode (default true). Off: control commands are refused as unsigned, like authorization firmware does. */
  developerMode?: boolean;
  /** An AMS with three loaded trays and one empty slot (default true). */
  ams?: boolean;
  /**
   * TLS key and certificate (PEM) for MQTT and FTPS instead of a fresh self-signed pair with
   * CN = serial. Many simulators can share one (see BambuSimulator.tlsCredentials()): generating
   * a pair per printer is the slow part of starting hundreds of them.
   */
  tls?: SimTlsCredentials;
  /** Run the implicit-FTPS server (default true). Off: ftpsPort is 0 and printerConfig() has no ftps_port. */
  ftps?: boolean;
  /** Run the HTTP control API (default true). Off: controlUrl is empty; the methods still work. */
  control?: boolean;
  /** Delay of the first periodic report in ms (default: one report interval); spreads many printers over the second. */
  reportOffsetMs?: number;
  /**
   * Benchmark mode (default false): every report carries a new nozzle temperature, a 1 °C
   * sawtooth 200, 201 … 299, 200 …, so that every report changes what the service shows.
   * The print itself runs as usual.
   */
  benchReports?: boolean;
  /** Called just before each push_status report is published (periodic and full). */
  onReport?: (report: SimReportInfo) => void;
}

export interface SimTlsCredentials {
  key: string;
  cert: string;
}

/** What onReport tells about a push_status report about to go out. */
export interface SimReportInfo {
  id: string;
  serial: string;
  /** The report's sequence_id (as a number). */
  sequence: number;
  /** true for the `msg:0` full report after a pushall. */
  full: boolean;
  /** nozzle_temper as sent. */
  nozzle: number;
}

/** Nozzle temperatures of the benchmark sawtooth: BENCH_NOZZLE_BASE … BENCH_NOZZLE_BASE + BENCH_NOZZLE_STEPS - 1. */
export const BENCH_NOZZLE_BASE = 200;
export const BENCH_NOZZLE_STEPS = 100;

export interface BambuFaults {
  /** Every periodic report is a delta with only the changed keys. */
  partial_reports: boolean;
  /** Every control command is answered `result: "fail"`. */
  reject_commands: boolean;
  /** FTPS download throttle; 0 = unlimited. */
  transfer_bytes_per_sec: number;
}

export type BambuPrinterConfig = {
  id: string;
  name: string;
  type: 'bambu_lab';
  model: string;
  ip_address: string;
  serial_number: string;
  access_code: string;
  mqtt_port: number;
  /** Absent when the simulator runs without FTPS (`ftps: false`). */
  ftps_port?: number;
};

const SERIAL_PREFIX: Record<string, string> = {
  X1C: '00M',
  X1: '00W',
  X1E: '03W',
  P1P: '01S',
  P1S: '01P',
  'A1 MINI': '030',
  A1: '039',
  H2D: '094',
  H2S: '093',
  P2S: '22E',
};

function randomDigits(n: number): string {
  let out = '';
  for (let i = 0; i < n; i++) out += String(randomInt(10));
  return out;
}

type Status = 'idle' | 'preparing' | 'printing' | 'paused' | 'finished' | 'failed' | 'stopped';

export class BambuSimulator {
  readonly serial: string;
  readonly accessCode: string;
  readonly model: string;
  readonly name: string;
  readonly id: string;
  readonly speed: number;
  readonly firmware: string;
  readonly faults: BambuFaults = { partial_reports: false, reject_commands: false, transfer_bytes_per_sec: 0 };
  readonly storage = SimStorage.seeded();
  readonly stats = { pushall_requests: 0, get_version_requests: 0, commands: 0 };
  readonly printer: SimPrinter;

  private mqtt: SimMqtt | null = null;
  private ftps: SimFtps | null = null;
  private http: http.Server | null = null;
  private readonly httpSockets = new Set<net.Socket>();
  private timer: NodeJS.Timeout | null = null;
  private lastTick = Date.now();
  private lastSent: Json | null = null;
  private sequence = 0;
  private linkMode: LinkMode = 'online';
  private endedBy: 'cancel' | null = null;
  private readonly reportIntervalMs: number;
  private readonly developerMode: boolean;
  private readonly hasAms: boolean;
  private readonly options: BambuSimulatorOptions;
  private startTimer: NodeJS.Timeout | null = null;
  private benchStep = 0;
  private closed = false;

  private constructor(options: BambuSimulatorOptions) {
    this.options = options;
    this.model = options.model ?? 'P1S';
    this.speed = options.speed && options.speed > 0 ? options.speed : 1;
    const prefix = SERIAL_PREFIX[this.model.toUpperCase()] ?? '01P';
    this.serial = options.serial ?? `${prefix}00A${randomDigits(15 - prefix.length - 3)}`;
    this.accessCode = options.accessCode ?? randomDigits(8);
    this.name = options.name ?? `Simulated ${this.model}`;
    this.id = options.id ?? `sim-${this.serial.toLowerCase()}`;
    this.firmware = options.firmware ?? '01.08.02.00';
    this.developerMode = options.developerMode ?? true;
    this.hasAms = options.ams ?? true;
    this.reportIntervalMs = options.reportIntervalMs ?? Math.min(1000, Math.max(100, Math.round(1000 / this.speed)));
    this.printer = new SimPrinter(this.model, {
      ams: this.hasAms,
      // Bit 0x20000000 of `fun` = "MQTT signature required"; Developer Mode clears it.
      fun: this.developerMode ? '3EC18FFF9CFF' : '3EC1AFFF9CFF',
    });
  }

  static async start(options: BambuSimulatorOptions = {}): Promise<BambuSimulator> {
    const sim = new BambuSimulator(options);
    try {
      await sim.open();
    } catch (err) {
      await sim.close();
      throw err;
    }
    return sim;
  }

  /** A self-signed EC P-256 key and certificate (CN = commonName), e.g. to share across many simulators. */
  static async tlsCredentials(commonName = 'printfarm-simulator'): Promise<SimTlsCredentials> {
    const pems = await generate([{ name: 'commonName', value: commonName }], { keyType: 'ec', curve: 'P-256', algorithm: 'sha256' });
    return { key: pems.private, cert: pems.cert };
  }

  private async open(): Promise<void> {
    const { key, cert } = this.options.tls ?? (await BambuSimulator.tlsCredentials(this.serial));
    this.mqtt = await SimMqtt.start({ key, cert, serial: this.serial, accessCode: this.accessCode, onRequest: (m) => this.onRequest(m) });
    if (this.options.ftps ?? true) {
      this.ftps = new SimFtps({
        key,
        cert,
        user: 'bblp',
        password: this.accessCode,
        storage: this.storage,
        throttle: () => this.faults.transfer_bytes_per_sec,
      });
      await this.ftps.listen();
    }
    if (this.options.control ?? true) await this.listenControl();
    this.lastTick = Date.now();
    const startTicking = () => {
      this.startTimer = null;
      if (this.closed) return;
      this.timer = setInterval(() => this.tick(), this.reportIntervalMs);
    };
    if (this.options.reportOffsetMs === undefined) startTicking();
    else {
      // The first report after the offset, then one per interval.
      this.startTimer = setTimeout(() => {
        startTicking();
        this.tick();
      }, Math.max(0, this.options.reportOffsetMs));
    }
  }

  private async listenControl(): Promise<void> {
    this.http = http.createServer((req, res) => {
      this.onControl(req, res).catch(() => {
        if (!res.headersSent) this.json(res, 500, { error: 'internal error' });
      });
    });
    this.http.on('connection', (s: net.Socket) => {
      this.httpSockets.add(s);
      s.once('close', () => this.httpSockets.delete(s));
    });
    await new Promise<void>((resolve, reject) => {
      this.http!.once('error', reject);
      this.http!.listen(0, '127.0.0.1', () => resolve());
    });
  }

  get mqttPort(): number {
    return this.mqtt?.port ?? 0;
  }

  get ftpsPort(): number {
    return this.ftps?.port ?? 0;
  }

  get controlUrl(): string {
    if (!this.http) return '';
    const address = this.http.address() as net.AddressInfo | null;
    return `http://127.0.0.1:${address?.port ?? 0}`;
  }

  get link(): LinkMode {
    return this.linkMode;
  }

  /** Body for POST /api/v1/printers (ports as per-printer overrides). */
  printerConfig(): BambuPrinterConfig {
    return {
      id: this.id,
      name: this.name,
      type: 'bambu_lab',
      model: this.model,
      ip_address: '127.0.0.1',
      serial_number: this.serial,
      access_code: this.accessCode,
      mqtt_port: this.mqttPort,
      ...(this.ftps ? { ftps_port: this.ftpsPort } : {}),
    };
  }

  // -------------------------------------------------------------------------
  // The clock and the reports
  // -------------------------------------------------------------------------

  private tick(): void {
    const now = Date.now();
    const dtS = ((now - this.lastTick) / 1000) * this.speed;
    this.lastTick = now;
    this.printer.advance(dtS);
    void this.report(false);
  }

  private get reportTopic(): string {
    return `device/${this.serial}/report`;
  }

  /** Publishes a push_status: full (`msg:0`) or periodic (`msg:1`). Silent unless online. */
  private async report(full: boolean): Promise<void> {
    if (this.closed || this.linkMode !== 'online' || !this.mqtt) return;
    const snapshot = this.printer.snapshot();
    if (this.options.benchReports) snapshot.nozzle_temper = BENCH_NOZZLE_BASE + (this.benchStep++ % BENCH_NOZZLE_STEPS);
    const body = full ? snapshot : diffReport(this.lastSent, snapshot, this.faults.partial_reports ? [] : CORE_KEYS);
    this.lastSent = snapshot;
    this.printer.reported();
    const sequence = ++this.sequence;
    this.options.onReport?.({ id: this.id, serial: this.serial, sequence, full, nozzle: snapshot.nozzle_temper as number });
    await this.mqtt.publish(this.reportTopic, { print: { ...body, command: 'push_status', msg: full ? 0 : 1, sequence_id: String(sequence) } });
  }

  private versionInfo(sequenceId: unknown): Json {
    const module: Json[] = [
      { name: 'ota', product_name: `Bambu Lab ${this.model}`, sw_ver: this.firmware, hw_ver: 'OTA', sn: this.serial, new_ver: '', visible: true, flag: 0 },
      { name: 'mc', sw_ver: '00.00.29.27', hw_ver: 'MC07', sn: `${this.serial.slice(0, 3)}MC${this.serial.slice(-8)}`, loader_ver: '00.00.00.25', visible: true, flag: 0 },
      { name: 'th', sw_ver: '00.00.07.67', hw_ver: 'TH07', sn: `${this.serial.slice(0, 3)}TH${this.serial.slice(-8)}`, loader_ver: '00.00.00.25', visible: true, flag: 0 },
    ];
    if (this.hasAms) {
      module.push({ name: 'ams/0', sw_ver: '00.00.06.49', hw_ver: 'AMS08', sn: `006A${this.serial.slice(-8)}`, loader_ver: '00.00.00.00', visible: true, flag: 0 });
    }
    return { info: { command: 'get_version', sequence_id: String(sequenceId ?? '0'), module, result: 'success', reason: '' } };
  }

  // -------------------------------------------------------------------------
  // MQTT requests
  // -------------------------------------------------------------------------

  private onRequest(message: Json): void {
    if (this.closed || this.linkMode !== 'online') return;
    for (const [type, body] of Object.entries(message)) {
      if (typeof body !== 'object' || body === null) continue;
      const request = body as Json;
      const command = String(request.command ?? '');
      if (type === 'pushing' && (command === 'pushall' || command === 'start')) {
        this.stats.pushall_requests++;
        void this.report(true);
      } else if (type === 'info' && command === 'get_version') {
        this.stats.get_version_requests++;
        void this.mqtt?.publish(this.reportTopic, this.versionInfo(request.sequence_id));
      } else if (type === 'print' && command !== 'push_status') {
        this.onPrintCommand(request, command);
      } else if (type === 'system') {
        void this.mqtt?.publish(this.reportTopic, { system: { command, sequence_id: String(request.sequence_id ?? '0'), result: 'success', reason: '' } });
      }
    }
  }

  private onPrintCommand(request: Json, command: string): void {
    this.stats.commands++;
    const before = this.printer.gcodeState;
    let result: CommandResult;
    if (this.faults.reject_commands) {
      result = { ok: false, reason: 'command rejected by the printer (simulated fault)' };
    } else if (!this.developerMode && ['pause', 'resume', 'stop', 'project_file', 'gcode_file', 'gcode_line', 'print_speed'].includes(command)) {
      result = { ok: false, reason: 'mqtt message verify failed' };
    } else {
      result = this.runPrintCommand(request, command);
    }
    void this.mqtt?.publish(this.reportTopic, {
      print: {
        command,
        sequence_id: String(request.sequence_id ?? '0'),
        param: request.param ?? '',
        result: result.ok ? 'success' : 'fail',
        reason: result.ok ? 'success' : result.reason,
      },
    });
    if (result.ok && before !== this.printer.gcodeState) void this.report(false);
  }

  private runPrintCommand(request: Json, command: string): CommandResult {
    switch (command) {
      case 'pause':
        return this.printer.pause();
      case 'resume':
        return this.printer.resume();
      case 'stop':
        return this.cancel();
      case 'project_file':
      case 'gcode_file': {
        const name = String((command === 'project_file' ? request.url || request.file || request.param : request.param) ?? '');
        const file = this.storage.find(name);
        if (!file) return { ok: false, reason: `file not found: ${name}` };
        const is3mf = /\.3mf$/i.test(file.path);
        if (command === 'project_file' ? !is3mf : !/\.gcode$/i.test(file.path)) return { ok: false, reason: `${command} cannot print ${file.path}` };
        return this.begin(file, typeof request.subtask_name === 'string' ? request.subtask_name : undefined);
      }
      case 'print_speed':
        this.printer.setSpeedLevel(Number(request.param));
        return { ok: true };
      case 'gcode_line':
        return { ok: true };
      default:
        return { ok: false, reason: `unsupported command ${command}` };
    }
  }

  private begin(file: SimFile, subtaskName?: string): CommandResult {
    const result = this.printer.start(file, subtaskName);
    if (result.ok) this.endedBy = null;
    return result;
  }

  private cancel(): CommandResult {
    const result = this.printer.stop();
    if (result.ok) this.endedBy = 'cancel';
    return result;
  }

  // -------------------------------------------------------------------------
  // Programmatic control (the HTTP API calls these)
  // -------------------------------------------------------------------------

  /** Starts a stored file as if chosen on the printer's screen. */
  startPrint(name: string): CommandResult {
    const file = this.storage.find(name);
    if (!file) return { ok: false, reason: `file not found: ${name}` };
    return this.afterChange(this.begin(file));
  }

  pause(): CommandResult {
    return this.afterChange(this.printer.pause());
  }

  resume(): CommandResult {
    return this.afterChange(this.printer.resume());
  }

  finish(): CommandResult {
    return this.afterChange(this.printer.finish());
  }

  fail(): CommandResult {
    return this.afterChange(this.printer.fail());
  }

  cancelPrint(): CommandResult {
    return this.afterChange(this.cancel());
  }

  private afterChange(result: CommandResult): CommandResult {
    if (result.ok) void this.report(false);
    return result;
  }

  /** online / offline (refuse and drop everything) / stalled (silence). */
  async setLink(mode: LinkMode): Promise<void> {
    if (this.closed) return;
    const previous = this.linkMode;
    this.linkMode = mode;
    if (previous !== 'online' && mode === 'online') this.lastTick = Date.now();
    await Promise.all([this.mqtt?.setMode(mode), this.ftps?.setMode(mode)]);
  }

  setFaults(patch: Partial<BambuFaults>): BambuFaults {
    Object.assign(this.faults, patch);
    return { ...this.faults };
  }

  get status(): Status {
    switch (this.printer.gcodeState) {
      case 'PREPARE':
        return 'preparing';
      case 'RUNNING':
        return 'printing';
      case 'PAUSE':
        return 'paused';
      case 'FINISH':
        return 'finished';
      case 'FAILED':
        return this.endedBy === 'cancel' ? 'stopped' : 'failed';
      default:
        return 'idle';
    }
  }

  /** What GET /state returns. */
  stateView(): Json {
    const snapshot = this.printer.snapshot();
    return {
      serial: this.serial,
      model: this.model,
      firmware: this.firmware,
      status: this.status,
      gcode_state: this.printer.gcodeState,
      progress: this.printer.progress,
      file: this.printer.currentFile,
      job_name: snapshot.subtask_name || null,
      layer: snapshot.layer_num,
      total_layers: snapshot.total_layer_num,
      remaining_minutes: snapshot.mc_remaining_time,
      temperatures: {
        nozzle: snapshot.nozzle_temper,
        nozzle_target: snapshot.nozzle_target_temper,
        bed: snapshot.bed_temper,
        bed_target: snapshot.bed_target_temper,
        chamber: snapshot.chamber_temper,
      },
      print_error: snapshot.print_error,
      hms: snapshot.hms,
      files: this.storage.paths(),
      link: this.linkMode,
      faults: { ...this.faults },
      speed: this.speed,
      mqtt_port: this.mqttPort,
      ftps_port: this.ftpsPort,
      stats: {
        ...this.stats,
        mqtt_clients: this.mqtt?.connectedClients ?? 0,
        mqtt_connections: this.mqtt?.stats.connections ?? 0,
        mqtt_auth_failures: this.mqtt?.stats.auth_failures ?? 0,
        ftp_sessions: this.ftps?.stats.sessions ?? 0,
        ftp_open_sessions: this.ftps?.sessions.size ?? 0,
        ftp_max_concurrent_sessions: this.ftps?.stats.max_concurrent_sessions ?? 0,
        ftp_logins: this.ftps?.stats.logins ?? 0,
        ftp_login_failures: this.ftps?.stats.login_failures ?? 0,
        ftp_refused_data_connections: this.ftps?.stats.refused_data_connections ?? 0,
        ftp_transfers: this.ftps?.stats.transfers ?? 0,
      },
    };
  }

  // -------------------------------------------------------------------------
  // Control API
  // -------------------------------------------------------------------------

  private json(res: http.ServerResponse, status: number, body: unknown): void {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  }

  private readBody(req: http.IncomingMessage): Promise<Json> {
    return new Promise((resolve, reject) => {
      let size = 0;
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => {
        size += c.length;
        if (size > 64 * 1024) {
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

  private async onControl(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0].replace(/\/+$/, '') || '/';
    const method = req.method ?? 'GET';
    if (method === 'GET' && path === '/state') return this.json(res, 200, this.stateView());
    if (method !== 'POST') return this.json(res, 404, { error: `no route ${method} ${path}` });
    let body: Json;
    try {
      body = await this.readBody(req);
    } catch (err) {
      return this.json(res, 400, { error: (err as Error).message });
    }
    const answer = (result: CommandResult) =>
      result.ok ? this.json(res, 200, this.stateView()) : this.json(res, /not found/.test(result.reason) ? 404 : 409, { error: result.reason });
    switch (path) {
      case '/print':
        if (typeof body.file !== 'string' || !body.file) return this.json(res, 400, { error: 'give {"file": "<name on the printer>"}' });
        return answer(this.startPrint(body.file));
      case '/pause':
        return answer(this.pause());
      case '/resume':
        return answer(this.resume());
      case '/finish':
        return answer(this.finish());
      case '/fail':
        return answer(this.fail());
      case '/cancel':
      case '/stop':
        return answer(this.cancelPrint());
      case '/offline':
      case '/online':
      case '/stall':
        await this.setLink(path === '/stall' ? 'stalled' : (path.slice(1) as LinkMode));
        return this.json(res, 200, this.stateView());
      case '/faults': {
        const patch: Partial<BambuFaults> = {};
        for (const key of ['partial_reports', 'reject_commands'] as const) {
          if (key in body) {
            if (typeof body[key] !== 'boolean') return this.json(res, 400, { error: `${key} must be a boolean` });
            patch[key] = body[key] as boolean;
          }
        }
        if ('transfer_bytes_per_sec' in body) {
          const n = body.transfer_bytes_per_sec;
          if (typeof n !== 'number' || !Number.isFinite(n) || n < 0) return this.json(res, 400, { error: 'transfer_bytes_per_sec must be a number >= 0' });
          patch.transfer_bytes_per_sec = Math.floor(n);
        }
        return this.json(res, 200, { faults: this.setFaults(patch) });
      }
      default:
        return this.json(res, 404, { error: `no route ${method} ${path}` });
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    if (this.startTimer) clearTimeout(this.startTimer);
    this.startTimer = null;
    const httpServer = this.http;
    const httpClosed = httpServer?.listening ? new Promise<void>((resolve) => httpServer.close(() => resolve())) : Promise.resolve();
    for (const s of this.httpSockets) s.destroy();
    await Promise.all([httpClosed, this.mqtt?.close(), this.ftps?.close()]);
  }
}
