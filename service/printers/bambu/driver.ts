/**
 * Bambu Lab driver (X1, P1, A1, H2 families in LAN mode): MQTT over TLS for
 * state and commands, implicit FTPS for files (PROTOCOLS.md §1-2).
 *
 * Link life cycle:
 * - one MQTT connection per printer (the X1 broker takes about 4 clients),
 *   user `bblp` + access code, subscribed to `device/{serial}/report`;
 * - on every (re)connect: `pushall` + `get_version`, and never otherwise
 *   (a P1P must not get pushall more than once per 5 minutes);
 * - partial reports are merged into one full report (state.ts);
 * - a watchdog marks the link `disconnected` ("no report for N s") when
 *   nothing arrived within `watchdog_ms` and reconnects, so the state is never
 *   "online with frozen data";
 * - reconnects use exponential backoff with full jitter (1 s .. 60 s); a
 *   refused access code is connection 'error' ("access code rejected") and
 *   is retried only slowly (about once per `authRetryMs`, default 60 s);
 * - close() ends the MQTT socket, the FTP connection and every timer.
 * The access code is never logged, emitted or put in an error.
 */
import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import net from 'node:net';
import type tls from 'node:tls';
import { connect as mqttConnect, type IClientOptions, type MqttClient } from 'mqtt';
import {
  backoffDelay,
  DriverError,
  type ConnectionChange,
  type ConnectionState,
  type DriverConfig,
  type PrinterDriver,
  type PrinterFile,
  type PrinterState,
  type QueuedStart,
  type QueuedStartHooks,
} from '../driver';
import { BambuFtp } from './ftp';
import { sendQueuedStart, usesFtpUrl } from './project-file';
import { ingestReport, isObject, modelFromSerial, parseVersionInfo, str, toPrinterState, type BambuTracked, type Json, type VersionInfo } from './state';

/** The smallest Logger surface the driver uses (pino fits). */
export interface BambuDriverLogger {
  debug(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface BambuDriverOptions {
  /** First backoff step (ms); 1000 in production, smaller in tests. */
  backoffBaseMs?: number;
  /** Longest backoff step (ms), 60 000 by default. */
  backoffMaxMs?: number;
  /** About how long to wait before trying a refused access code again (ms, jittered to 50-100 %); default backoffMaxMs. */
  authRetryMs?: number;
  /** How long one connection attempt may take up to the report subscription (ms, default 10 000). */
  connectTimeoutMs?: number;
  /** MQTT keepalive (s, default 30). */
  keepaliveSeconds?: number;
  /** FTPS inactivity timeout (ms, default max(command_timeout_ms, 15 000)). */
  ftpTimeoutMs?: number;
  /** Random source for the jitter (tests pin it). */
  random?: () => number;
  logger?: BambuDriverLogger;
}

interface Waiter {
  resolve: () => void;
  reject: (err: unknown) => void;
}

interface PendingCommand {
  command: string;
  sequenceId: string;
  settle: (err?: DriverError) => void;
}


export class BambuDriver extends EventEmitter implements PrinterDriver {
  private currentState: PrinterState | null = null;
  private stateKey = '';
  private link: ConnectionState = 'disconnected';
  private linkMessage: string | null = null;
  private tracked: BambuTracked | null = null;
  private version: VersionInfo | null = null;
  private serial: string | null;
  private client: MqttClient | null = null;
  /** CONNACK and SUBACK received on `client`. */
  private linkUp = false;
  private attempt = 0;
  private reconnectTimer: NodeJS.Timeout | null = null;
  private connectTimer: NodeJS.Timeout | null = null;
  private watchdog: NodeJS.Timeout | null = null;
  private lastMessageAt = 0;
  private readonly waiters: Waiter[] = [];
  private readonly pending = new Set<PendingCommand>();
  private sequence: number;
  private closed = false;
  private readonly ftp: BambuFtp;
  private readonly backoffBaseMs: number;
  private readonly backoffMaxMs: number;
  private readonly authRetryMs: number;
  private readonly connectTimeoutMs: number;
  private readonly keepaliveSeconds: number;
  private readonly random: () => number;
  private readonly log: BambuDriverLogger | null;

  constructor(
    readonly config: DriverConfig,
    options: BambuDriverOptions = {},
  ) {
    super();
    this.serial = config.serial_number?.trim() || null;
    this.backoffBaseMs = options.backoffBaseMs ?? 1000;
    this.backoffMaxMs = options.backoffMaxMs ?? 60_000;
    this.authRetryMs = options.authRetryMs ?? this.backoffMaxMs;
    this.connectTimeoutMs = options.connectTimeoutMs ?? 10_000;
    this.keepaliveSeconds = options.keepaliveSeconds ?? 30;
    this.random = options.random ?? Math.random;
    this.log = options.logger ?? null;
    this.sequence = 20_000 + Math.floor(this.random() * 60_000);
    this.ftp = new BambuFtp({
      host: config.ip_address,
      port: config.ports.ftps ?? 990,
      accessCode: config.access_code,
      timeoutMs: options.ftpTimeoutMs ?? Math.max(config.command_timeout_ms, 15_000),
    });
  }

  get state(): PrinterState | null {
    return this.currentState;
  }

  get connection(): ConnectionState {
    return this.link;
  }

  private get mqttPort(): number {
    return this.config.ports.mqtt ?? 8883;
  }

  private get where(): string {
    return `${this.config.ip_address}:${this.mqttPort}`;
  }

  // -------------------------------------------------------------------------
  // Connection
  // -------------------------------------------------------------------------

  connect(): Promise<void> {
    if (this.closed) return Promise.reject(new DriverError('OFFLINE', 'driver closed'));
    if (this.link === 'connected') return Promise.resolve();
    const result = new Promise<void>((resolve, reject) => this.waiters.push({ resolve, reject }));
    if (!this.client) {
      // An explicit connect() does not wait out a pending backoff.
      this.clearReconnectTimer();
      this.attemptConnect();
    }
    return result;
  }

  private attemptConnect(): void {
    if (this.closed || this.client) return;
    const accessCode = this.config.access_code;
    if (!accessCode) {
      this.failWithoutClient(new DriverError('AUTH', 'no access code configured'));
      return;
    }
    const options: IClientOptions & tls.ConnectionOptions = {
      protocol: 'mqtts',
      host: this.config.ip_address,
      port: this.mqttPort,
      username: 'bblp',
      password: accessCode,
      clientId: `printfarm_${randomBytes(6).toString('hex')}`,
      protocolVersion: 4,
      clean: true,
      keepalive: this.keepaliveSeconds,
      // This driver reconnects on its own terms (backoff, jitter, slow retry after a refused code).
      reconnectPeriod: 0,
      connectTimeout: this.connectTimeoutMs + 5000,
      resubscribe: false,
      // The printer presents a certificate from Bambu's private "BBL CA" for CN = serial, not
      // the IP; the LAN access code is the authentication, as in Bambu Studio's LAN mode and
      // most third-party clients (PROTOCOLS.md §1). Pinning the CA would need Bambu's bundle.
      rejectUnauthorized: false,
      // Some firmware never answers a TLS 1.3 ClientHello (PROTOCOLS.md §1).
      maxVersion: 'TLSv1.2',
    };
    if (this.serial && net.isIP(this.serial) === 0) options.servername = this.serial;
    this.log?.debug({ printer: this.config.id, address: this.where }, 'bambu: connecting');
    const client = mqttConnect(options);
    this.client = client;
    this.linkUp = false;
    let lastError: DriverError | null = null;
    this.connectTimer = setTimeout(
      () => this.attemptFailed(client, new DriverError('TIMEOUT', `no MQTT answer from ${this.where} within ${Math.round(this.connectTimeoutMs / 1000)} s`)),
      this.connectTimeoutMs,
    );
    client.on('connect', () => this.onConnack(client));
    client.on('message', (topic: string, payload: Buffer) => this.onMessage(client, topic, payload));
    client.on('error', (err: Error & { code?: unknown }) => {
      if (client !== this.client) return;
      const code = err.code;
      if (code === 4 || code === 5 || code === 134 || code === 135) {
        this.attemptFailed(client, new DriverError('AUTH', `access code rejected (MQTT CONNACK ${code})`));
        return;
      }
      lastError =
        typeof code === 'string' && ['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNRESET', 'ENOTFOUND', 'EPIPE'].includes(code)
          ? new DriverError('OFFLINE', `printer unreachable at ${this.where} (${code})`)
          : typeof code === 'string' && code === 'ETIMEDOUT'
            ? new DriverError('TIMEOUT', `printer at ${this.where} did not answer (ETIMEDOUT)`)
            : new DriverError('OFFLINE', `MQTT connection to ${this.where} failed: ${err.message}`);
    });
    client.on('close', () => {
      if (client !== this.client) return;
      if (this.linkUp) this.linkLost(client, lastError?.message ?? 'connection lost');
      else this.attemptFailed(client, lastError ?? new DriverError('OFFLINE', `connection to ${this.where} closed before the printer accepted it`));
    });
  }

  private onConnack(client: MqttClient): void {
    if (client !== this.client) return;
    const topic = this.serial ? `device/${this.serial}/report` : 'device/+/report';
    client.subscribe(topic, { qos: 0 }, (err, granted) => {
      if (client !== this.client) return;
      if (err || !granted || granted.some((g) => g.qos === 128)) {
        this.attemptFailed(client, new DriverError('PROTOCOL', `the printer refused the subscription to ${topic}`));
        return;
      }
      this.clearConnectTimer();
      this.linkUp = true;
      this.lastMessageAt = Date.now();
      this.requestFullStatus(client);
      this.watchdog = setTimeout(() => this.onWatchdog(client), this.config.watchdog_ms);
      this.setLink('connected', null);
      this.log?.debug({ printer: this.config.id }, 'bambu: connected');
      for (const w of this.waiters.splice(0)) w.resolve();
    });
  }

  /** pushall + get_version: only here, i.e. once per (re)connect. */
  private requestFullStatus(client: MqttClient): void {
    if (!this.serial) return; // learnt from the first report; that one is then asked for below
    const topic = `device/${this.serial}/request`;
    client.publish(topic, JSON.stringify({ pushing: { sequence_id: String(++this.sequence), command: 'pushall', version: 1, push_target: 1 } }), { qos: 0 });
    client.publish(topic, JSON.stringify({ info: { sequence_id: String(++this.sequence), command: 'get_version' } }), { qos: 0 });
  }

  private onWatchdog(client: MqttClient): void {
    if (client !== this.client || !this.linkUp) return;
    const silent = Math.round((Date.now() - this.lastMessageAt) / 1000);
    this.log?.warn({ printer: this.config.id, silent_s: silent }, 'bambu: watchdog, reconnecting');
    this.linkLost(client, `no report for ${silent} s`);
  }

  /** A connection that was up went away (socket closed, watchdog). */
  private linkLost(client: MqttClient, message: string): void {
    if (client !== this.client) return;
    this.teardown();
    this.rejectPending(new DriverError('OFFLINE', `connection to the printer was lost (${message})`));
    this.setLink('disconnected', message);
    this.scheduleReconnect(backoffDelay(this.attempt++, this.random, this.backoffBaseMs, this.backoffMaxMs));
  }

  /** A connection attempt failed before the link was up. */
  private attemptFailed(client: MqttClient, err: DriverError): void {
    if (client !== this.client) return;
    this.teardown();
    this.failWithoutClient(err);
  }

  private failWithoutClient(err: DriverError): void {
    for (const w of this.waiters.splice(0)) w.reject(err);
    if (err.code === 'AUTH') {
      this.setLink('error', err.message);
      // A wrong code stays wrong until someone changes it: retry slowly, never in a tight loop.
      this.scheduleReconnect(backoffDelay(30, this.random, this.backoffBaseMs, Math.max(this.backoffBaseMs, this.authRetryMs)));
    } else {
      this.setLink('disconnected', err.message);
      this.scheduleReconnect(backoffDelay(this.attempt++, this.random, this.backoffBaseMs, this.backoffMaxMs));
    }
    this.log?.debug({ printer: this.config.id, code: err.code, reason: err.message }, 'bambu: connection attempt failed');
  }

  private scheduleReconnect(delayMs: number): void {
    if (this.closed) return;
    this.clearReconnectTimer();
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null;
      this.attemptConnect();
    }, delayMs);
  }

  private clearReconnectTimer(): void {
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    this.reconnectTimer = null;
  }

  private clearConnectTimer(): void {
    if (this.connectTimer) clearTimeout(this.connectTimer);
    this.connectTimer = null;
  }

  /** Ends the current MQTT client (its late events are ignored: `client !== this.client`). */
  private teardown(): Promise<void> {
    const client = this.client;
    this.client = null;
    this.linkUp = false;
    this.clearConnectTimer();
    if (this.watchdog) clearTimeout(this.watchdog);
    this.watchdog = null;
    if (!client) return Promise.resolve();
    return new Promise((resolve) => {
      try {
        client.end(true, {}, () => resolve());
      } catch {
        resolve();
      }
    });
  }

  private setLink(connection: ConnectionState, message: string | null): void {
    if (this.link === connection && this.linkMessage === message) return;
    this.link = connection;
    this.linkMessage = message;
    const change: ConnectionChange = { connection, message };
    this.emit('connection', change);
  }

  // -------------------------------------------------------------------------
  // Reports
  // -------------------------------------------------------------------------

  private onMessage(client: MqttClient, topic: string, payload: Buffer): void {
    if (client !== this.client) return;
    this.lastMessageAt = Date.now();
    this.watchdog?.refresh();
    if (!this.serial) {
      const m = topic.match(/^device\/([^/]+)\/report$/);
      if (m) {
        this.serial = m[1];
        this.requestFullStatus(client);
      }
    }
    let message: unknown;
    try {
      message = JSON.parse(payload.toString('utf8'));
    } catch {
      return;
    }
    if (!isObject(message)) return;
    // A message proves the link: the next failure starts the backoff from the bottom again.
    this.attempt = 0;
    if (isObject(message.print)) {
      if (message.print.command === 'push_status') {
        this.tracked = ingestReport(this.tracked, message.print);
        this.publishState();
      } else {
        this.settleCommand(message.print);
      }
    }
    if (isObject(message.info) && message.info.command === 'get_version') {
      this.version = parseVersionInfo(message.info);
      this.publishState();
    }
  }

  private publishState(): void {
    // Until a report has said what the printer is doing (the pushall answer), a merged delta would read as idle
    // and end the job the printer is still printing.
    if (!this.tracked || typeof this.tracked.print.gcode_state !== 'string') return;
    const state = toPrinterState(this.tracked, { version: this.version, serial: this.serial });
    const key = JSON.stringify(state);
    if (key === this.stateKey) return;
    this.stateKey = key;
    this.currentState = state;
    this.emit('state', state);
  }

  // -------------------------------------------------------------------------
  // Commands
  // -------------------------------------------------------------------------

  private settleCommand(reply: Json): void {
    const command = str(reply.command);
    const result = str(reply.result)?.toLowerCase();
    if (!command || !result) return;
    const sequenceId = str(reply.sequence_id);
    for (const p of this.pending) {
      if (p.command !== command || (sequenceId !== null && sequenceId !== p.sequenceId)) continue;
      if (result === 'success') p.settle();
      else {
        const reason = str(reply.reason) || str(reply.err_code) || 'the printer refused the command';
        p.settle(new DriverError('REJECTED', reason, { command, reason }));
      }
      return;
    }
  }

  private rejectPending(err: DriverError): void {
    for (const p of [...this.pending]) p.settle(err);
  }

  private command(command: string, fields: Json = {}): Promise<void> {
    const client = this.client;
    if (this.closed || !client || !this.linkUp || this.link !== 'connected') {
      return Promise.reject(new DriverError('OFFLINE', `printer is not connected (${this.linkMessage ?? this.link})`));
    }
    if (!this.serial) return Promise.reject(new DriverError('PROTOCOL', 'printer serial number unknown'));
    const sequenceId = String(++this.sequence);
    const body = { print: { sequence_id: sequenceId, command, param: '', ...fields } };
    const timeoutMs = this.config.command_timeout_ms;
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => pending.settle(new DriverError('TIMEOUT', `the printer did not answer "${command}" within ${(timeoutMs / 1000).toFixed(1)} s`)), timeoutMs);
      const pending: PendingCommand = {
        command,
        sequenceId,
        settle: (err) => {
          if (!this.pending.delete(pending)) return;
          clearTimeout(timer);
          if (err) reject(err);
          else resolve();
        },
      };
      this.pending.add(pending);
      // QoS 1 for control commands (OpenBambuAPI).
      client.publish(`device/${this.serial}/request`, JSON.stringify(body), { qos: 1 }, (err) => {
        if (err) pending.settle(new DriverError('OFFLINE', `could not send "${command}": ${err.message}`));
      });
    });
  }

  pause(): Promise<void> {
    return this.command('pause');
  }

  resume(): Promise<void> {
    return this.command('resume');
  }

  stop(): Promise<void> {
    return this.command('stop');
  }

  /**
   * Starts a file stored on the printer: `project_file` for .3mf (plate 1,
   * the AMS when the printer has one, slot mapping [0]), `gcode_file` for
   * .gcode. Anything else is refused here (the printer would refuse it too).
   */
  startPrint(path: string): Promise<void> {
    const absolute = path.startsWith('/') ? path : `/${path}`;
    const name = absolute.slice(absolute.lastIndexOf('/') + 1);
    if (/\.3mf$/i.test(name)) {
      const model = this.currentState?.model ?? this.version?.model ?? modelFromSerial(this.serial);
      const relative = absolute.slice(1);
      return this.command('project_file', {
        param: 'Metadata/plate_1.gcode',
        url: usesFtpUrl(model) ? `ftp:///${relative}` : `file:///sdcard/${relative}`,
        subtask_name: name.replace(/(\.gcode)?\.3mf$/i, ''),
        md5: '',
        file: '',
        project_id: '0',
        profile_id: '0',
        task_id: '0',
        subtask_id: '0',
        timelapse: false,
        bed_type: 'auto',
        bed_leveling: true,
        flow_cali: true,
        vibration_cali: true,
        layer_inspect: true,
        use_ams: this.currentState?.capabilities?.has_ams ?? false,
        ams_mapping: [0],
      });
    }
    if (/\.gcode$/i.test(name)) return this.command('gcode_file', { param: absolute });
    return Promise.reject(new DriverError('REJECTED', `a Bambu printer prints .3mf and .gcode files, not "${name}"`, { path }));
  }

  /** A queued print (project-file.ts): FTPS upload to the card root, then `project_file` with QoS 1. */
  sendAndStart(start: QueuedStart, hooks: QueuedStartHooks): Promise<void> {
    if (this.closed) return Promise.reject(new DriverError('OFFLINE', 'driver closed'));
    const model = () => this.currentState?.model ?? this.version?.model ?? modelFromSerial(this.serial);
    return sendQueuedStart({ ftp: this.ftp, model, command: (fields) => this.command('project_file', fields) }, start, hooks);
  }

  removeQueuedFile(remoteName: string): Promise<void> {
    return this.ftp.remove(`/${remoteName}`);
  }

  // -------------------------------------------------------------------------
  // Files
  // -------------------------------------------------------------------------

  listFiles(): Promise<PrinterFile[]> {
    if (this.closed) return Promise.reject(new DriverError('OFFLINE', 'driver closed'));
    return this.ftp.listFiles();
  }

  download(path: string, destination: string, onProgress?: (bytes: number, total: number) => void, signal?: AbortSignal): Promise<void> {
    if (this.closed) return Promise.reject(new DriverError('OFFLINE', 'driver closed'));
    return this.ftp.download(path.startsWith('/') ? path : `/${path}`, destination, onProgress, signal);
  }

  // -------------------------------------------------------------------------

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.clearReconnectTimer();
    const ended = this.teardown();
    const closedError = new DriverError('OFFLINE', 'driver closed');
    this.rejectPending(closedError);
    for (const w of this.waiters.splice(0)) w.reject(closedError);
    this.ftp.close();
    this.link = 'disconnected';
    this.linkMessage = 'closed';
    await ended;
  }
}
