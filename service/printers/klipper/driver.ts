/**
 * Klipper driver: Moonraker's JSON-RPC 2.0 over its WebSocket for state and
 * commands, its HTTP API for files and the upload that starts a queued print.
 *
 * Link life cycle:
 * - `GET /server/info` first (reachable? API key accepted? Klippy's state),
 *   then a one-shot token (`GET /access/oneshot_token`) for the WebSocket
 *   `/websocket?token=` (old Moonraker without it: the X-Api-Key header);
 * - once Klippy is up (session.ts): `printer.objects.list` decides which of
 *   the wanted objects to subscribe to (a missing `display_status` on a
 *   vendor fork means null fields, never a broken link), the subscribe answer
 *   is the first full state and every `notify_status_update` delta is merged
 *   into it;
 * - `notify_klippy_shutdown` (and webhooks.state) is an error state with
 *   Klipper's message; `notify_klippy_disconnected` takes the printer offline
 *   while the socket stays and Moonraker is asked again until Klippy is ready;
 * - a lost socket, a silent one (ping without pong) or a failed attempt is
 *   retried with exponential backoff and jitter; a refused API key and a
 *   peer that breaks the rules (huge frames, floods, garbage) only slowly.
 * The API key is never logged, emitted or put in an error.
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
import { reconnectTimings, Reconnects, type ReconnectOptions } from '../reconnects';
import { downloadKlipperFile, downloadKlipperThumbnail, klipperFileMetadata, listKlipperFiles, removeKlipperFile, rootRelative, type KlipperFileMetadata } from './files';
import { MoonrakerHttp } from './http';
import { RpcLink } from './rpc';
import { KlipperSession } from './session';
import { uploadAndPrint } from './upload';

export interface KlipperDriverOptions extends ReconnectOptions {
  /** Largest WebSocket frame taken from Moonraker (bytes, default 4 MiB). */
  maxFrameBytes?: number;
  /** Most frames per second before the link counts as flooded (default 500). */
  maxFramesPerSecond?: number;
  /** How often Moonraker is asked for Klippy's state while Klippy is not ready (ms, default 2000). */
  klippyPollMs?: number;
}

interface Waiter {
  resolve: () => void;
  reject: (err: unknown) => void;
}

export class KlipperDriver extends EventEmitter implements PrinterDriver {
  private link: ConnectionState = 'disconnected';
  private linkMessage: string | null = null;
  private readonly http: MoonrakerHttp;
  private readonly reconnects: Reconnects;
  private readonly waiters: Waiter[] = [];
  private session: KlipperSession | null = null;
  private attempting = false;
  private closed = false;
  private faults = 0;
  private badFrames = 0;
  /** The file an earlier link saw printing: the next link looks up its end in Moonraker's history. */
  private printedFile: string | null = null;
  private readonly o: Required<Omit<KlipperDriverOptions, keyof ReconnectOptions>>;
  private readonly guard = guardWith((err) => this.fault(`the service could not handle what Moonraker sent (${reasonOf(err)})`));

  constructor(
    readonly config: DriverConfig,
    options: KlipperDriverOptions = {},
  ) {
    super();
    this.reconnects = new Reconnects(reconnectTimings(options), this.guard, () => void this.attempt());
    this.o = { maxFrameBytes: options.maxFrameBytes ?? 4 * 1024 * 1024, maxFramesPerSecond: options.maxFramesPerSecond ?? 500, klippyPollMs: options.klippyPollMs ?? 2000 };
    this.http = new MoonrakerHttp({ host: config.ip_address, port: config.ports.http ?? 7125, apiKey: config.access_code || null, timeoutMs: config.command_timeout_ms });
  }

  get state(): PrinterState | null {
    return this.session?.state ?? null;
  }

  get connection(): ConnectionState {
    return this.link;
  }

  get connectionMessage(): string | null {
    return this.linkMessage;
  }

  /** Frames dropped as broken and links dropped for breaking the rules, since the driver started. */
  get faultStats(): { bad_frames: number; faults: number } {
    return { bad_frames: this.badFrames + (this.session?.badFrames ?? 0), faults: this.faults };
  }

  /** The objects subscribed on the current link (tests, diagnostics). */
  get subscribedObjects(): string[] {
    return this.session?.subscribed ?? [];
  }

  connect(): Promise<void> {
    if (this.closed) return Promise.reject(new DriverError('OFFLINE', 'driver closed'));
    if (this.link === 'connected') return Promise.resolve();
    const result = new Promise<void>((resolve, reject) => this.waiters.push({ resolve, reject }));
    if (!this.session && !this.attempting) {
      this.reconnects.clear();
      void this.attempt();
    }
    return result;
  }

  private async attempt(): Promise<void> {
    if (this.closed || this.session || this.attempting) return;
    this.attempting = true;
    let rpc: RpcLink | null = null;
    try {
      const info = await this.http.json<Record<string, unknown>>('GET', '/server/info');
      let token: string | null = null;
      if (this.config.access_code) {
        try {
          const answer = await this.http.json<unknown>('GET', '/access/oneshot_token');
          if (typeof answer === 'string' && /^[A-Za-z0-9_-]{1,200}$/.test(answer)) token = answer;
        } catch (err) {
          if (!(err instanceof DriverError && err.code === 'NOT_FOUND')) throw err; // an old Moonraker: the header then
        }
      }
      if (this.closed) return;
      rpc = new RpcLink({
        url: `ws://${this.http.hostPort}/websocket${token ? `?token=${encodeURIComponent(token)}` : ''}`,
        headers: token ? {} : this.http.headers,
        connectTimeoutMs: this.config.command_timeout_ms,
        requestTimeoutMs: this.config.command_timeout_ms,
        maxFrameBytes: this.o.maxFrameBytes,
        maxPending: 64,
        maxFramesPerSecond: this.o.maxFramesPerSecond,
        pingMs: Math.max(1000, Math.floor(this.config.watchdog_ms / 3)),
        silenceMs: this.config.watchdog_ms,
      });
      await rpc.open();
      if (this.closed) return rpc.close();
      const link = rpc;
      const session = new KlipperSession(link, this.http, info, {
        guard: this.guard,
        klippyPollMs: this.o.klippyPollMs,
        events: {
          state: (s) => this.emitSafe('state', s),
          klippy: (ready, message) => this.klippyChanged(session, ready, message),
        },
      }, this.printedFile);
      this.session = session;
      link.on('closed', (reason: string, fault: boolean) => this.lost(session, reason, fault));
      await session.start();
    } catch (err) {
      rpc?.close();
      const e = err instanceof DriverError ? err : new DriverError('PROTOCOL', reasonOf(err));
      if (this.session && this.session.link === rpc) {
        this.session.stop(); // its timers end with the attempt
        this.session = null;
      }
      this.failed(e, e.code === 'AUTH');
    } finally {
      this.attempting = false;
    }
  }

  /** Klippy came up (the link is connected) or went away (the link stays, the printer is offline). */
  private klippyChanged(session: KlipperSession, ready: boolean, message: string | null): void {
    if (session !== this.session) return;
    if (ready) {
      this.reconnects.reset();
      this.setLink('connected', null);
      for (const w of this.waiters.splice(0)) w.resolve();
      return;
    }
    const err = new DriverError('OFFLINE', message ?? 'Klipper is not connected to Moonraker');
    this.setLink('disconnected', err.message);
    for (const w of this.waiters.splice(0)) w.reject(err);
  }

  private lost(session: KlipperSession, reason: string, fault: boolean): void {
    if (session !== this.session) return;
    this.session = null;
    this.printedFile = session.printedFile ?? this.printedFile;
    this.badFrames += session.badFrames;
    session.stop();
    if (fault) {
      this.faults++;
      this.failed(new DriverError('PROTOCOL', reason, { fault: true }), true);
    } else this.failed(new DriverError('OFFLINE', `connection to Moonraker lost (${reason})`), false);
  }

  /** The peer sent something the driver failed on: the link goes, slowly retried. */
  private fault(reason: string): void {
    const session = this.session;
    this.session = null;
    this.faults++;
    if (session) {
      this.printedFile = session.printedFile ?? this.printedFile;
      this.badFrames += session.badFrames;
      session.stop();
      session.link.close();
    }
    this.failed(new DriverError('PROTOCOL', reason, { fault: true }), true);
  }

  private failed(err: DriverError, slowly: boolean): void {
    for (const w of this.waiters.splice(0)) w.reject(err);
    if (this.closed) return;
    if (slowly) {
      this.setLink('error', err.message);
      this.reconnects.slowly();
    } else {
      this.setLink('disconnected', err.message);
      this.reconnects.backoff();
    }
  }

  private setLink(connection: ConnectionState, message: string | null): void {
    if (this.link === connection && this.linkMessage === message) return;
    this.link = connection;
    this.linkMessage = message;
    this.emitSafe('connection', { connection, message } satisfies ConnectionChange);
  }

  private emitSafe(event: string, payload: unknown): void {
    try {
      this.emit(event, payload);
    } catch (err) {
      process.emitWarning(`printfarm: a '${event}' listener of printer ${this.config.id} threw: ${reasonOf(err)}`);
    }
  }

  // --- Commands ---

  private ready(): KlipperSession {
    const session = this.session;
    if (this.closed || !session || this.link !== 'connected') throw new DriverError('OFFLINE', `printer is not connected (${this.linkMessage ?? this.link})`);
    return session;
  }

  private async rpc(method: string, params?: Record<string, unknown>): Promise<void> {
    await this.ready().link.call(method, params);
  }

  pause(): Promise<void> {
    return this.rpc('printer.print.pause');
  }

  resume(): Promise<void> {
    return this.rpc('printer.print.resume');
  }

  stop(): Promise<void> {
    return this.rpc('printer.print.cancel');
  }

  async startPrint(path: string): Promise<void> {
    await this.rpc('printer.print.start', { filename: decodeURIComponent(rootRelative(path)) });
  }

  /** A queued print (upload.ts): one multipart upload with print=true; print_stats acknowledges it. */
  async sendAndStart(start: QueuedStart, hooks: QueuedStartHooks): Promise<void> {
    this.ready();
    await uploadAndPrint(this.http, start, hooks, this.config.command_timeout_ms);
  }

  /**
   * Deletes a file from the `gcodes` root. Not removeQueuedFile: a queued print's file stays on the
   * printer after the print, as on PrusaLink (Klipper has no ghost prints at power-on; the operator may
   * print it again from Mainsail or Fluidd).
   */
  deleteFile(path: string): Promise<void> {
    return removeKlipperFile(this.http, path);
  }

  // --- Files ---

  listFiles(): Promise<PrinterFile[]> {
    if (this.closed) return Promise.reject(new DriverError('OFFLINE', 'driver closed'));
    return listKlipperFiles(this.http);
  }

  download(path: string, destination: string, onProgress?: (bytes: number, total: number) => void, signal?: AbortSignal): Promise<void> {
    if (this.closed) return Promise.reject(new DriverError('OFFLINE', 'driver closed'));
    return downloadKlipperFile(this.http, path, destination, onProgress, signal);
  }

  /** Moonraker's metadata of a file: estimated time, filament, thumbnails. */
  fileMetadata(path: string): Promise<KlipperFileMetadata> {
    return klipperFileMetadata(this.http, path);
  }

  /** The largest thumbnail Moonraker extracted for a file; false when there is none. */
  downloadThumbnail(path: string, destination: string): Promise<boolean> {
    return downloadKlipperThumbnail(this.http, path, destination);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.reconnects.stop();
    const session = this.session;
    this.session = null;
    session?.stop();
    session?.link.close();
    this.http.close();
    const closedError = new DriverError('OFFLINE', 'driver closed');
    for (const w of this.waiters.splice(0)) w.reject(closedError);
    this.link = 'disconnected';
    this.linkMessage = 'closed';
  }
}
