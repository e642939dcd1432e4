/**
 * Bambu Lab driver (X1, P1, A1, H2 families in LAN mode): MQTT over TLS for
 * state and commands, implicit FTPS for files (PROTOCOLS.md §1-2).
 *
 * Link life cycle:
 * - one MQTT connection per printer (the X1 broker takes about 4 clients),
 *   user `bblp` + access code, subscribed to `device/{serial}/report`;
 * - on every (re)connect: `pushall` + `get_version`, and never otherwise
 *   (a P1P must not get pushall more than once per 5 minutes);
 * - partial reports are merged into one full report (state.ts); a new link's
 *   state goes out from its first full report (the pushall answer) on, or from
 *   its deltas after `firstReportWaitMs` (5 s) when that never comes;
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
import {
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
import { PendingCommands, startCommandOf } from './commands';
import { BambuFtp } from './ftp';
import { sendQueuedStart } from './project-file';
import { mqttOptions, type BambuDriverLogger, type BambuDriverOptions } from './link';
import { reconnectTimings, Reconnects } from '../reconnects';
import { BambuReports } from './reports';
import { BambuSession } from './session';
import { modelFromSerial, type Json } from './state';

export type { BambuDriverLogger, BambuDriverOptions } from './link';

interface Waiter {
  resolve: () => void;
  reject: (err: unknown) => void;
}

export class BambuDriver extends EventEmitter implements PrinterDriver {
  private link: ConnectionState = 'disconnected';
  private linkMessage: string | null = null;
  private readonly reports: BambuReports;
  private serial: string | null;
  /** The MQTT client of the current attempt or link (session.ts); null between attempts. */
  private session: BambuSession | null = null;
  private readonly reconnects: Reconnects;
  private readonly waiters: Waiter[] = [];
  private readonly commands = new PendingCommands();
  private sequence: number;
  private closed = false;
  private faults = 0;
  private readonly ftp: BambuFtp;
  private readonly connectTimeoutMs: number;
  private readonly keepaliveSeconds: number;
  private readonly firstReportWaitMs: number;
  /** Ends a new link's wait for its first full report (reports.ts awaitFullReport); null when none is awaited. */
  private firstReportTimer: NodeJS.Timeout | null = null;
  private readonly log: BambuDriverLogger | null;
  /** Every callback of the network or a timer: whatever goes wrong marks this printer `error`, never the process. */
  private readonly guard = guardWith((err) => this.fault(`the service could not handle what the printer sent (${reasonOf(err)})`));

  constructor(
    readonly config: DriverConfig,
    options: BambuDriverOptions = {},
  ) {
    super();
    this.reports = new BambuReports(config.cancelled_run ?? null);
    this.serial = config.serial_number?.trim() || null;
    const timings = reconnectTimings(options);
    this.reconnects = new Reconnects(timings, this.guard, () => this.attemptConnect());
    this.connectTimeoutMs = options.connectTimeoutMs ?? 10_000;
    this.keepaliveSeconds = options.keepaliveSeconds ?? 30;
    this.firstReportWaitMs = options.firstReportWaitMs ?? 5000;
    this.log = options.logger ?? null;
    this.sequence = 20_000 + Math.floor(timings.random() * 60_000);
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

  /** The printer model as far as known (report, version answer, else the serial's prefix). */
  private get model(): string | null {
    return this.reports.current?.model ?? this.reports.version?.model ?? modelFromSerial(this.serial);
  }

  private get where(): string {
    return `${this.config.ip_address}:${this.mqttPort}`;
  }

  // --- Connection ---

  connect(): Promise<void> {
    if (this.closed) return Promise.reject(new DriverError('OFFLINE', 'driver closed'));
    if (this.link === 'connected') return Promise.resolve();
    const result = new Promise<void>((resolve, reject) => this.waiters.push({ resolve, reject }));
    if (!this.session) {
      // An explicit connect() does not wait out a pending backoff.
      this.reconnects.clear();
      this.attemptConnect();
    }
    return result;
  }

  private attemptConnect(): void {
    if (this.closed || this.session) return;
    if (!this.config.access_code) {
      this.failWithoutClient(new DriverError('AUTH', 'no access code configured'));
      return;
    }
    this.log?.debug({ printer: this.config.id, address: this.where }, 'bambu: connecting');
    const options = mqttOptions(this.config, this.serial, this.mqttPort, { keepaliveSeconds: this.keepaliveSeconds });
    // The handlers name their own session: a late event of an ended session never touches a newer link.
    const session: BambuSession = new BambuSession(options, {
      where: this.where,
      reportTopic: this.serial ? `device/${this.serial}/report` : 'device/+/report',
      connectTimeoutMs: this.connectTimeoutMs,
      watchdogMs: this.config.watchdog_ms,
      guard: this.guard,
      events: {
        up: () => this.onLinkUp(session),
        message: (topic, payload) => this.onMessage(session, topic, payload),
        failed: (err) => this.attemptFailed(session, err),
        lost: (message) => this.linkLost(session, message),
        silent: (seconds) => {
          this.log?.warn({ printer: this.config.id, silent_s: seconds }, 'bambu: watchdog, reconnecting');
          this.linkLost(session, `no report for ${seconds} s`);
        },
        fault: (reason) => this.fault(reason),
      },
    });
    this.session = session;
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

  private onLinkUp(session: BambuSession): void {
    if (session !== this.session) return;
    // The link's state goes out from its pushall answer on; a printer that never answers (a P1P takes pushall
    // only once per 5 minutes) is shown from its deltas after the bounded wait.
    this.reports.awaitFullReport();
    this.clearFirstReportTimer();
    this.firstReportTimer = setTimeout(this.guard(() => this.firstReportOverdue(session)), this.firstReportWaitMs);
    this.requestFullStatus(session);
    this.setLink('connected', null);
    this.log?.debug({ printer: this.config.id }, 'bambu: connected');
    for (const w of this.waiters.splice(0)) w.resolve();
  }

  private firstReportOverdue(session: BambuSession): void {
    this.firstReportTimer = null;
    if (session !== this.session) return;
    this.log?.debug({ printer: this.config.id, wait_ms: this.firstReportWaitMs }, 'bambu: no full report yet, showing the deltas');
    const state = this.reports.release(this.serial);
    if (state) this.emit('state', state);
  }

  private clearFirstReportTimer(): void {
    if (this.firstReportTimer) clearTimeout(this.firstReportTimer);
    this.firstReportTimer = null;
  }

  /** pushall + get_version: only here, i.e. once per (re)connect. */
  private requestFullStatus(session: BambuSession): void {
    if (!this.serial) return; // learnt from the first report; that one is then asked for below
    const topic = `device/${this.serial}/request`;
    session.publish(topic, JSON.stringify({ pushing: { sequence_id: String(++this.sequence), command: 'pushall', version: 1, push_target: 1 } }), 0);
    session.publish(topic, JSON.stringify({ info: { sequence_id: String(++this.sequence), command: 'get_version' } }), 0);
  }

  /** A connection that was up went away (socket closed, watchdog). */
  private linkLost(session: BambuSession, message: string): void {
    if (session !== this.session) return;
    this.teardown();
    this.commands.rejectAll(new DriverError('OFFLINE', `connection to the printer was lost (${message})`));
    this.setLink('disconnected', message);
    this.reconnects.backoff();
  }

  /** A connection attempt failed before the link was up. */
  private attemptFailed(session: BambuSession, err: DriverError): void {
    if (session !== this.session) return;
    this.teardown();
    this.failWithoutClient(err);
  }

  private failWithoutClient(err: DriverError): void {
    for (const w of this.waiters.splice(0)) w.reject(err);
    if (err.code === 'AUTH' || err.details.fault) {
      this.setLink('error', err.message);
      this.reconnects.slowly();
    } else {
      this.setLink('disconnected', err.message);
      this.reconnects.backoff();
    }
    this.log?.debug({ printer: this.config.id, code: err.code, reason: err.message }, 'bambu: connection attempt failed');
  }

  /** Ends the current session (its late events are ignored: `session !== this.session`). */
  private teardown(): Promise<void> {
    this.clearFirstReportTimer();
    const session = this.session;
    this.session = null;
    return session ? session.end() : Promise.resolve();
  }

  private setLink(connection: ConnectionState, message: string | null): void {
    if (this.link === connection && this.linkMessage === message) return;
    this.link = connection;
    this.linkMessage = message;
    const change: ConnectionChange = { connection, message };
    this.emit('connection', change);
  }

  // --- Reports ---

  private onMessage(session: BambuSession, topic: string, payload: Buffer): void {
    if (session !== this.session) return;
    if (!this.serial) {
      const m = topic.match(/^device\/([^/]+)\/report$/);
      if (m) {
        this.serial = m[1];
        this.requestFullStatus(session);
      }
    }
    const outcome = this.reports.take(payload, this.serial);
    if (outcome.kind === 'ignored') return;
    if (outcome.kind === 'refused') {
      // Dropped and counted; a printer that sends such a thing is broken or hostile: its link goes to `error`.
      this.fault(`report dropped: ${outcome.reason}`);
      return;
    }
    this.reconnects.reset();
    if (!this.reports.awaiting) this.clearFirstReportTimer();
    if (outcome.reply) this.commands.answer(outcome.reply);
    if (outcome.state) this.emit('state', outcome.state);
  }

  // --- Commands ---

  private command(command: string, fields: Json = {}): Promise<void> {
    const session = this.session;
    if (this.closed || !session?.up || this.link !== 'connected') {
      return Promise.reject(new DriverError('OFFLINE', `printer is not connected (${this.linkMessage ?? this.link})`));
    }
    if (!this.serial) return Promise.reject(new DriverError('PROTOCOL', 'printer serial number unknown'));
    const sequenceId = String(++this.sequence);
    const body = JSON.stringify({ print: { sequence_id: sequenceId, command, param: '', ...fields } });
    // QoS 1 for control commands (OpenBambuAPI).
    return this.commands.send(command, sequenceId, this.config.command_timeout_ms, (sent) => session.publish(`device/${this.serial}/request`, body, 1, sent));
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

  /** Starts a file stored on the printer (commands.ts: `project_file` for .3mf, `gcode_file` for .gcode). */
  startPrint(path: string): Promise<void> {
    try {
      const start = startCommandOf(path, this.model, this.reports.current?.capabilities?.has_ams ?? false);
      return this.command(start.command, start.fields);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** A queued print (project-file.ts): FTPS upload to the card root, then `project_file` with QoS 1. */
  sendAndStart(start: QueuedStart, hooks: QueuedStartHooks): Promise<void> {
    if (this.closed) return Promise.reject(new DriverError('OFFLINE', 'driver closed'));
    return sendQueuedStart({ ftp: this.ftp, model: () => this.model, command: (fields) => this.command('project_file', fields) }, start, hooks);
  }

  removeQueuedFile(remoteName: string): Promise<void> {
    // Already gone (deleted on the printer, or a demo printer that started empty) is what the caller wanted.
    return this.ftp.remove(`/${remoteName}`).catch((err) => {
      if (!(err instanceof DriverError && err.code === 'NOT_FOUND')) throw err;
    });
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
    this.reconnects.stop();
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
