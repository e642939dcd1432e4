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
import { PrusaHttpClient, type AuthMode } from './http';
import { uploadAndPrint } from './upload';
import {
  encodePath,
  mergePrusaState,
  stateChanged,
  stateHasJob,
  type PrusaFileEntry,
  type PrusaInfo,
  type PrusaJob,
  type PrusaStatus,
  type PrusaVersion,
} from './state';

export interface PrusaDriverOptions {
  /** First backoff step (ms); 1000 in production, smaller in tests. */
  backoffBaseMs?: number;
  /** Longest backoff step (ms), 60 000 by default. */
  backoffMaxMs?: number;
  /** Random source for the jitter (tests pin it). */
  random?: () => number;
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

interface StorageEntry {
  name?: string;
  type?: string;
  path?: string;
  available?: boolean;
}

const MAX_FOLDER_REQUESTS = 200;

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

  async listFiles(): Promise<PrinterFile[]> {
    let storages: StorageEntry[];
    try {
      const answer = await this.http.json<{ storage_list?: StorageEntry[] }>('/api/v1/storage');
      storages = (answer?.storage_list ?? []).filter((s) => s.available !== false);
    } catch (err) {
      if (!(err instanceof DriverError && err.code === 'NOT_FOUND')) throw err;
      storages = [{ path: '/usb', name: 'usb' }]; // firmware without /api/v1/storage: Buddy's one storage
    }
    const files: PrinterFile[] = [];
    let requests = 0;
    for (const storage of storages) {
      const root = (storage.path ?? storage.name ?? '').replace(/^\/+|\/+$/g, '');
      if (!root) continue;
      const queue: Array<{ rel: string; depth: number }> = [{ rel: '', depth: 0 }];
      while (queue.length && files.length < this.opts.maxFiles && requests < MAX_FOLDER_REQUESTS) {
        const { rel, depth } = queue.shift()!;
        requests++;
        let folder: PrusaFileEntry | null;
        try {
          folder = await this.http.json<PrusaFileEntry>(`/api/v1/files${encodePath(`${root}/${rel}`)}${rel ? '' : '/'}`);
        } catch (err) {
          if (err instanceof DriverError && err.code === 'NOT_FOUND') continue; // storage gone (USB pulled) or folder removed
          throw err;
        }
        for (const child of folder?.children ?? []) {
          if (!child || typeof child.name !== 'string') continue;
          const childRel = rel ? `${rel}/${child.name}` : child.name;
          if (child.type === 'FOLDER') {
            if (depth < this.opts.maxFolderDepth) queue.push({ rel: childRel, depth: depth + 1 });
            continue;
          }
          const path = `/${root}/${childRel}`;
          if (child.refs?.download) this.downloadRefs.set(path, child.refs.download);
          files.push({
            path,
            name: child.display_name ?? child.name,
            size: typeof child.size === 'number' ? child.size : 0,
            modified: typeof child.m_timestamp === 'number' ? new Date(child.m_timestamp * 1000).toISOString() : null,
            storage: root,
          });
          if (files.length >= this.opts.maxFiles) break;
        }
      }
    }
    return files;
  }

  async download(
    path: string,
    destination: string,
    onProgress?: (bytes: number, total: number) => void,
    signal?: AbortSignal,
  ): Promise<void> {
    const key = encodePath(path).split('/').map(safeDecode).join('/');
    let url = this.downloadRefs.get(key);
    if (!url) {
      const meta = await this.http.json<PrusaFileEntry>(`/api/v1/files${encodePath(key)}`, { signal });
      if (meta?.type === 'FOLDER') throw new DriverError('NOT_FOUND', `${path} is a folder`);
      url = meta?.refs?.download ?? key;
    }
    // refs.download is a path on the printer (Buddy: /usb/SHAPE-~1.BGC), maybe already percent-encoded.
    await this.http.download(encodePath(url.split('/').map(safeDecode).join('/')), destination, onProgress, signal);
  }

  async pause(): Promise<void> {
    const id = await this.currentJobId();
    await this.http.request('PUT', `/api/v1/job/${id}/pause`);
    this.wake();
  }

  async resume(): Promise<void> {
    const id = await this.currentJobId();
    await this.http.request('PUT', `/api/v1/job/${id}/resume`);
    this.wake();
  }

  async stop(): Promise<void> {
    const id = await this.currentJobId();
    await this.http.request('DELETE', `/api/v1/job/${id}`);
    this.wake();
  }

  async startPrint(path: string): Promise<void> {
    const target = encodePath(path);
    if (target === '/') throw new DriverError('NOT_FOUND', 'no file given');
    await this.http.request('POST', `/api/v1/files${target}`);
    this.wake();
  }

  /** A queued print: uploaded and started in one request (upload.ts); the next regular poll acknowledges it. */
  sendAndStart(start: QueuedStart, hooks: QueuedStartHooks): Promise<void> {
    return uploadAndPrint(this.http, start, hooks, this.config.command_timeout_ms);
  }

  // ---------------------------------------------------------------- internals

  /** The printer's current job id, asked fresh so that a command never hits an old job. */
  private async currentJobId(): Promise<number> {
    const status = await this.http.json<PrusaStatus>('/api/v1/status');
    if (typeof status?.job?.id === 'number') return status.job.id;
    const job = await this.http.json<PrusaJob>('/api/v1/job'); // partial report without job: ask the job itself
    if (typeof job?.id === 'number') return job.id;
    throw new DriverError('REJECTED', 'there is no job on the printer');
  }

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

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
