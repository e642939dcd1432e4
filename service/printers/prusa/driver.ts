/**
 * PrusaLink driver (MK4/MK4S, Core One, XL, MINI on Buddy firmware; older
 * X-Api-Key firmware too). It polls /api/v1/status (and /api/v1/job while a
 * job exists) every `poll_ms`, merges the answers into one PrinterState and
 * carries out commands over the same authenticated HTTP client.
 *
 * Link life cycle: connect() starts one loop that never overlaps itself.
 * A failed round marks the link disconnected (or 'error' for a refused
 * access code) and retries with exponential backoff and jitter; a watchdog
 * marks it disconnected when no round succeeded within `watchdog_ms`, so the
 * state is never "online with frozen data". Every request has a deadline.
 */
import { EventEmitter } from 'node:events';
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
import type { ReconnectOptions } from '../reconnects';
import { controlJob } from './control';
import { downloadPrusaFile, listPrusaFiles } from './files';
import { PrusaHttpClient, type AuthMode } from './http';
import { uploadAndPrint } from './upload';
import { encodePath, mergePrusaState, stateChanged, stateHasJob, type PrusaInfo, type PrusaJob, type PrusaStatus, type PrusaVersion } from './state';

export interface PrusaDriverOptions extends Omit<ReconnectOptions, 'authRetryMs'> {
  /** Folder depth listFiles() descends to below each storage root (default 4). */
  maxFolderDepth?: number;
  /** Most files listFiles() returns (default 2000). */
  maxFiles?: number;
  /** Digest user name, `maker` on every PrusaLink printer. */
  username?: string;
}

interface Waiter {
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** A DriverError stays what it is; anything else is the service failing on what the printer sent (marked `internal`). */
function asDriverError(err: unknown): DriverError {
  if (err instanceof DriverError) return err;
  return new DriverError('PROTOCOL', `the service could not handle what the printer sent (${err instanceof Error ? err.message : String(err)})`, { internal: true });
}

export class PrusaDriver extends EventEmitter implements PrinterDriver {
  private current: PrinterState | null = null;
  private link: ConnectionState = 'disconnected';
  private linkMessage: string | null = null;
  private readonly http: PrusaHttpClient;
  private version: PrusaVersion | null = null;
  private info: PrusaInfo | null = null;
  private handshaken = false;
  private loop: Promise<void> | null = null;
  private closed = false;
  private attempt = 0;
  private waiters: Waiter[] = [];
  private wakeUp: (() => void) | null = null;
  private cycle: AbortController | null = null;
  private watchdog: NodeJS.Timeout | null = null;
  /** path -> refs.download, learnt from listings. */
  private readonly downloadRefs = new Map<string, string>();
  private readonly opts: Required<Omit<PrusaDriverOptions, 'random'>> & { random: () => number };

  constructor(
    readonly config: DriverConfig,
    options: PrusaDriverOptions = {},
  ) {
    super();
    this.opts = {
      backoffBaseMs: options.backoffBaseMs ?? 1000,
      backoffMaxMs: options.backoffMaxMs ?? 60_000,
      random: options.random ?? Math.random,
      maxFolderDepth: options.maxFolderDepth ?? 4,
      maxFiles: options.maxFiles ?? 2000,
      username: options.username ?? 'maker',
    };
    this.http = new PrusaHttpClient({
      host: config.ip_address,
      port: config.ports.http ?? 80,
      username: this.opts.username,
      password: config.access_code ?? '',
      authMethod: config.auth_method ?? 'digest',
      timeoutMs: config.command_timeout_ms,
    });
  }

  get state(): PrinterState | null {
    return this.current;
  }

  get connection(): ConnectionState {
    return this.link;
  }

  /** Why the link is disconnected or in error, null while connected. */
  get connectionMessage(): string | null {
    return this.linkMessage;
  }

  /** Which authentication the printer took: 'digest', 'apikey', or 'unknown' before the first answer. */
  get authMode(): AuthMode {
    return this.http.authMode;
  }

  /** Request and stale-nonce counters (diagnostics, tests). */
  get httpStats(): { requests: number; stale_retries: number } {
    return { ...this.http.stats };
  }

  connect(): Promise<void> {
    if (this.closed) return Promise.reject(new DriverError('OFFLINE', 'driver closed'));
    if (this.link === 'connected') return Promise.resolve();
    const settled = new Promise<void>((resolve, reject) => this.waiters.push({ resolve, reject }));
    // The loop catches per round; this catch is the last guard so that nothing can reach the process.
    this.loop ??= this.run().catch((err) => {
      this.loop = null;
      this.setLink('error', asDriverError(err).message);
    });
    return settled;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.clearWatchdog();
    this.http.close();
    this.cycle?.abort(new DriverError('OFFLINE', 'driver closed'));
    this.wakeUp?.();
    await this.loop;
    this.settle(new DriverError('OFFLINE', 'driver closed'));
    if (this.link !== 'disconnected') this.setLink('disconnected', 'driver closed');
  }

  listFiles(): Promise<PrinterFile[]> {
    return listPrusaFiles(this.http, this.downloadRefs, this.opts);
  }

  download(path: string, destination: string, onProgress?: (bytes: number, total: number) => void, signal?: AbortSignal): Promise<void> {
    return downloadPrusaFile(this.http, this.downloadRefs, path, destination, onProgress, signal);
  }

  async pause(): Promise<void> {
    await controlJob(this.http, 'pause');
    this.wake();
  }

  async resume(): Promise<void> {
    await controlJob(this.http, 'resume');
    this.wake();
  }

  async stop(): Promise<void> {
    await controlJob(this.http, 'stop');
    this.wake();
  }

  async startPrint(path: string): Promise<void> {
    const target = encodePath(path);
    if (target === '/') throw new DriverError('NOT_FOUND', 'no file given');
    await this.http.request('POST', `/api/v1/files${target}`);
    this.wake();
  }

  /** The poll period changed: the wait for the next poll ends now, the following ones use the new period. */
  pollIntervalChanged(): void {
    this.wake();
  }

  /** A queued print: uploaded and started in one request (upload.ts); the next regular poll acknowledges it. */
  sendAndStart(start: QueuedStart, hooks: QueuedStartHooks): Promise<void> {
    return uploadAndPrint(this.http, start, hooks, this.config.command_timeout_ms);
  }

  // ---------------------------------------------------------------- internals

  private async run(): Promise<void> {
    while (!this.closed) {
      const cycle = new AbortController();
      this.cycle = cycle;
      try {
        if (!this.handshaken) await this.handshake(cycle.signal);
        await this.poll(cycle.signal);
        if (this.closed) break;
        this.attempt = 0;
        this.succeeded();
        await this.sleep(this.config.poll_ms);
      } catch (err) {
        if (this.closed) break;
        this.failed(asDriverError(err));
        await this.sleep(backoffDelay(this.attempt++, this.opts.random, this.opts.backoffBaseMs, this.opts.backoffMaxMs));
      }
    }
    this.cycle = null;
  }

  private async handshake(signal: AbortSignal): Promise<void> {
    const version = await this.http.json<PrusaVersion>('/api/version', { signal });
    let info: PrusaInfo | null = null;
    try {
      info = await this.http.json<PrusaInfo>('/api/v1/info', { signal });
    } catch (err) {
      if (!(err instanceof DriverError && err.code === 'NOT_FOUND')) throw err; // firmware without /api/v1/info
    }
    this.version = version;
    this.info = info;
    this.handshaken = true;
  }

  private async poll(signal: AbortSignal): Promise<void> {
    let status: PrusaStatus | null;
    try {
      status = await this.http.json<PrusaStatus>('/api/v1/status', { signal });
    } catch (err) {
      if (err instanceof DriverError && err.code === 'NOT_FOUND')
        throw new DriverError('PROTOCOL', 'the printer has no PrusaLink v1 API (/api/v1/status): update its firmware', { unsupported: true });
      throw err;
    }
    if (!status || typeof status.printer?.state !== 'string') throw new DriverError('PROTOCOL', 'status answer without printer.state');
    let job: PrusaJob | null | undefined;
    if (status.job || stateHasJob(status.printer.state)) job = await this.http.json<PrusaJob>('/api/v1/job', { signal });
    if (this.closed) return;
    const next = mergePrusaState(this.current, { status, job, version: this.version, info: this.info, now: Date.now() });
    if (stateChanged(this.current, next)) {
      this.current = next;
      this.safeEmit('state', next);
    }
  }

  private succeeded(): void {
    this.armWatchdog();
    this.setLink('connected', null);
    this.settle(null);
  }

  private failed(err: DriverError): void {
    this.handshaken = false;
    if (err.code === 'AUTH') this.setLink('error', err.message);
    else if (err.details.unsupported || err.details.internal) this.setLink('error', err.message); // will not heal by retrying
    else this.setLink('disconnected', err.message);
    this.settle(err);
  }

  /** A link without a successful round for watchdog_ms is disconnected, whatever the requests are doing. */
  private armWatchdog(): void {
    this.clearWatchdog();
    const ms = Math.max(this.config.watchdog_ms, this.config.poll_ms * 2);
    this.watchdog = setTimeout(() => {
      this.watchdog = null;
      if (this.closed || this.link !== 'connected') return;
      const reason = new DriverError('TIMEOUT', `no answer from the printer for ${ms} ms`);
      this.setLink('disconnected', reason.message);
      try {
        this.cycle?.abort(reason); // the hung round gives up now and the loop backs off
      } catch (err) {
        this.setLink('error', asDriverError(err).message); // a timer callback must never throw into the process
      }
    }, ms);
  }

  private clearWatchdog(): void {
    if (this.watchdog) clearTimeout(this.watchdog);
    this.watchdog = null;
  }

  private setLink(connection: ConnectionState, message: string | null): void {
    if (connection === this.link && message === this.linkMessage) return;
    this.link = connection;
    this.linkMessage = message;
    const change: ConnectionChange = { connection, message };
    this.safeEmit('connection', change);
  }

  private settle(err: DriverError | null): void {
    for (const w of this.waiters.splice(0)) {
      if (err) w.reject(err);
      else w.resolve();
    }
  }

  private sleep(ms: number): Promise<void> {
    if (this.closed) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        if (this.wakeUp === done) this.wakeUp = null;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wakeUp = done;
    });
  }

  /** Polls right away (after a command, so its effect shows without waiting a full period). */
  private wake(): void {
    if (this.link === 'connected') this.wakeUp?.();
  }

  /** A listener that throws must not break the poll loop. */
  private safeEmit(event: string, payload: unknown): void {
    try {
      this.emit(event, payload);
    } catch (err) {
      process.emitWarning(`printfarm: a '${event}' listener of printer ${this.config.id} threw: ${(err as Error)?.message ?? err}`);
    }
  }
}
