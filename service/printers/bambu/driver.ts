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
 * - close() ends the MQTT socket, the FTP connection and every timer;
 * - a printer that sends more than limits.ts allows, or data the driver fails
 *   on, is dropped to 'error' with the reason and retried only slowly.
 * The access code is never logged, emitted or put in an error.
 */
import { EventEmitter } from 'node:events';
import { connect as mqttConnect, type MqttClient } from 'mqtt';
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
import { guardWith, reasonOf } from '../guard';
import { PendingCommands, projectFileFields } from './commands';
import { BambuFtp } from './ftp';
import { sendQueuedStart } from './project-file';
import { MAX_PACKET_BYTES, MqttPacketGuard } from './limits';
import { mqttErrorOf, mqttOptions, type BambuDriverLogger, type BambuDriverOptions } from './link';
import { BambuReports } from './reports';
import { modelFromSerial, type Json } from './state';

export type { BambuDriverLogger, BambuDriverOptions } from './link';

interface Waiter {
  resolve: () => void;
  reject: (err: unknown) => void;
}

export class BambuDriver extends EventEmitter implements PrinterDriver {
  private link: ConnectionState = 'disconnected';
  private linkMessage: string | null = null;
  private readonly reports = new BambuReports();
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
  private readonly commands = new PendingCommands();
  private sequence: number;
  private closed = false;
  private faults = 0;
  private readonly ftp: BambuFtp;
  private readonly backoffBaseMs: number;
  private readonly backoffMaxMs: number;
  private readonly authRetryMs: number;
  private readonly connectTimeoutMs: number;
  private readonly keepaliveSeconds: number;
  private readonly random: () => number;
  private readonly log: BambuDriverLogger | null;
  /** Every callback of the network or a timer: whatever goes wrong marks this printer `error`, never the process. */
  private readonly guard = guardWith((err) => this.fault(`the service could not handle what the printer sent (${reasonOf(err)})`));

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
    return this.reports.current;
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

  // --- Connection ---

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
    if (!this.config.access_code) {
      this.failWithoutClient(new DriverError('AUTH', 'no access code configured'));
      return;
    }
    this.log?.debug({ printer: this.config.id, address: this.where }, 'bambu: connecting');
    const options = mqttOptions(this.config, this.serial, this.mqttPort, { keepaliveSeconds: this.keepaliveSeconds, connectTimeoutMs: this.connectTimeoutMs });
    const client = mqttConnect(options);
    this.client = client;
    this.linkUp = false;
    let lastError: DriverError | null = null;
    // mqtt.js enforces no packet size for MQTT 3.1.1: refuse an oversized packet by its header, before it is buffered.
    const packets = new MqttPacketGuard(MAX_PACKET_BYTES);
    client.stream?.on('data', this.guard((chunk: Buffer) => {
      const size = packets.feed(chunk);
      if (size !== null && client === this.client) this.fault(`the printer sent an MQTT packet of ${size} bytes (limit ${MAX_PACKET_BYTES})`);
    }));
    const timeout = new DriverError('TIMEOUT', `no MQTT answer from ${this.where} within ${Math.round(this.connectTimeoutMs / 1000)} s`);
    this.connectTimer = setTimeout(this.guard(() => this.attemptFailed(client, timeout)), this.connectTimeoutMs);
    client.on('connect', this.guard(() => this.onConnack(client)));
    client.on('message', this.guard((topic: string, payload: Buffer) => this.onMessage(client, topic, payload)));
    client.on(
      'error',
      this.guard((err: Error & { code?: unknown }) => {
        if (client !== this.client) return;
        const mapped = mqttErrorOf(err, this.where);
        if (mapped.code === 'AUTH') this.attemptFailed(client, mapped);
        else lastError = mapped;
      }),
    );
    client.on(
      'close',
      this.guard(() => {
        if (client !== this.client) return;
        if (this.linkUp) this.linkLost(client, lastError?.message ?? 'connection lost');
        else this.attemptFailed(client, lastError ?? new DriverError('OFFLINE', `connection to ${this.where} closed before the printer accepted it`));
      }),
    );
  }

  /**
   * The printer sent something hostile or broken: drop the link, mark it
   * `error` with the reason and try again only slowly (like a refused access code).
   */
  private fault(reason: string): void {
    try {
      this.faults++;
      this.log?.warn({ printer: this.config.id, reason, faults: this.faults }, 'bambu: printer fault, link dropped');
      const err = new DriverError('PROTOCOL', reason, { fault: true });
      this.teardown().catch(() => undefined);
      this.commands.rejectAll(err);
      this.failWithoutClient(err);
    } catch (err) {
      this.log?.warn({ printer: this.config.id, err: String(err) }, 'bambu: fault handling failed');
    }
  }

  /** Reports dropped for exceeding the limits and faults that dropped the link, since the driver started. */
  get faultStats(): { dropped_reports: number; faults: number } {
    return { dropped_reports: this.reports.dropped, faults: this.faults };
  }

  private onConnack(client: MqttClient): void {
    if (client !== this.client) return;
    const topic = this.serial ? `device/${this.serial}/report` : 'device/+/report';
    client.subscribe(topic, { qos: 0 }, this.guard((err: Error | null, granted?: Array<{ qos: number }>) => {
      if (client !== this.client) return;
      if (err || !granted || granted.some((g) => g.qos === 128)) {
        this.attemptFailed(client, new DriverError('PROTOCOL', `the printer refused the subscription to ${topic}`));
        return;
      }
      this.clearConnectTimer();
      this.linkUp = true;
      this.lastMessageAt = Date.now();
      this.requestFullStatus(client);
      this.watchdog = setTimeout(this.guard(() => this.onWatchdog(client)), this.config.watchdog_ms);
      this.setLink('connected', null);
      this.log?.debug({ printer: this.config.id }, 'bambu: connected');
      for (const w of this.waiters.splice(0)) w.resolve();
    }));
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
    this.commands.rejectAll(new DriverError('OFFLINE', `connection to the printer was lost (${message})`));
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
    if (err.code === 'AUTH' || err.details.fault) {
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
    this.reconnectTimer = setTimeout(
      this.guard(() => {
        this.reconnectTimer = null;
        this.attemptConnect();
      }),
      delayMs,
    );
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

  // --- Reports ---

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
    const outcome = this.reports.take(payload, this.serial);
    if (outcome.kind === 'ignored') return;
    if (outcome.kind === 'refused') {
      // Dropped and counted; a printer that sends such a thing is broken or hostile: its link goes to `error`.
      this.fault(`report dropped: ${outcome.reason}`);
      return;
    }
    // A message proves the link: the next failure starts the backoff from the bottom again.
    this.attempt = 0;
    if (outcome.reply) this.commands.answer(outcome.reply);
    if (outcome.state) this.emit('state', outcome.state);
  }

  // --- Commands ---

  private command(command: string, fields: Json = {}): Promise<void> {
    const client = this.client;
    if (this.closed || !client || !this.linkUp || this.link !== 'connected') {
      return Promise.reject(new DriverError('OFFLINE', `printer is not connected (${this.linkMessage ?? this.link})`));
    }
    if (!this.serial) return Promise.reject(new DriverError('PROTOCOL', 'printer serial number unknown'));
    const sequenceId = String(++this.sequence);
    const body = JSON.stringify({ print: { sequence_id: sequenceId, command, param: '', ...fields } });
    // QoS 1 for control commands (OpenBambuAPI).
    return this.commands.send(command, sequenceId, this.config.command_timeout_ms, (sent) => client.publish(`device/${this.serial}/request`, body, { qos: 1 }, sent));
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
      const model = this.reports.current?.model ?? this.reports.version?.model ?? modelFromSerial(this.serial);
      return this.command('project_file', projectFileFields(absolute, model, this.reports.current?.capabilities?.has_ams ?? false));
    }
    if (/\.gcode$/i.test(name)) return this.command('gcode_file', { param: absolute });
    return Promise.reject(new DriverError('REJECTED', `a Bambu printer prints .3mf and .gcode files, not "${name}"`, { path }));
  }

  /** A queued print (project-file.ts): FTPS upload to the card root, then `project_file` with QoS 1. */
  sendAndStart(start: QueuedStart, hooks: QueuedStartHooks): Promise<void> {
    if (this.closed) return Promise.reject(new DriverError('OFFLINE', 'driver closed'));
    const model = () => this.reports.current?.model ?? this.reports.version?.model ?? modelFromSerial(this.serial);
    return sendQueuedStart({ ftp: this.ftp, model, command: (fields) => this.command('project_file', fields) }, start, hooks);
  }

  removeQueuedFile(remoteName: string): Promise<void> {
    return this.ftp.remove(`/${remoteName}`);
  }

  // --- Files ---

  listFiles(): Promise<PrinterFile[]> {
    if (this.closed) return Promise.reject(new DriverError('OFFLINE', 'driver closed'));
    return this.ftp.listFiles();
  }

  download(path: string, destination: string, onProgress?: (bytes: number, total: number) => void, signal?: AbortSignal): Promise<void> {
    if (this.closed) return Promise.reject(new DriverError('OFFLINE', 'driver closed'));
    return this.ftp.download(path.startsWith('/') ? path : `/${path}`, destination, onProgress, signal);
  }

  // --- Closing ---

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.clearReconnectTimer();
    const ended = this.teardown();
    const closedError = new DriverError('OFFLINE', 'driver closed');
    this.commands.rejectAll(closedError);
    for (const w of this.waiters.splice(0)) w.reject(closedError);
    this.ftp.close();
    this.link = 'disconnected';
    this.linkMessage = 'closed';
    await ended;
  }
}
