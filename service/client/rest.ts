/**
 * The typed client of `/api/v1`: one method per operation, JSON in and out,
 * the service's error body turned into a PrintfarmError.
 */
import { readBodyUpTo } from '../util/read-body';
import { PrintfarmError } from './errors';
import type {
  CleanupCandidatesView,
  CleanupResultView,
  ConnectionTestView,
  CreateJobInput,
  CreatePrinterInput,
  CurrentJobDownloadView,
  DownloadStartedView,
  DownloadStatusView,
  FileDeletedView,
  FileDetailView,
  FileListFilter,
  FileListView,
  GcodeOptimizationUpdatedView,
  GcodeOptimizationView,
  HealthView,
  JobCancelledView,
  JobDeletedView,
  JobDetailView,
  JobListFilter,
  JobListView,
  JobUpdatedView,
  PrinterCommand,
  PrinterCommandView,
  PrinterCreatedView,
  PrinterDeletedView,
  PrinterDetailView,
  PrinterListFilter,
  PrinterListView,
  PrinterStatisticsView,
  PrinterUpdatedView,
  CreateQueueItemInput,
  PlateClearedView,
  QueueItemView,
  QueueListFilter,
  QueueListView,
  UpdateQueueItemInput,
  RefreshResultView,
  UploadResultView,
  Settings,
  SettingsUpdatedView,
  StatisticsFilter,
  StatisticsOverviewView,
  SystemInfoView,
  ThumbnailMethod,
  ThumbnailResultView,
  UpdateCheckView,
  UpdateJobInput,
  UpdatePrinterInput,
} from './types';

export const API_PREFIX = '/api/v1';

/**
 * The most of an answer the client holds (a wrong URL or a hostile server may send without end, and the
 * transfer timeout alone lets gigabytes in): JSON answers (the longest lists are a few MB), pictures
 * (camera snapshots, previews) and file contents (the service stores files up to 1 GiB).
 */
export const MAX_JSON_BYTES = 32 * 1024 * 1024;
export const MAX_PICTURE_BYTES = 32 * 1024 * 1024;
export const MAX_FILE_BYTES = 1024 * 1024 * 1024;

type Query = Record<string, string | number | boolean | undefined | null>;

export interface RequestOptions {
  query?: Query;
  body?: unknown;
  /** Milliseconds before the request is given up (default: the client's timeoutMs). */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** The largest answer accepted (default: MAX_JSON_BYTES for JSON, MAX_FILE_BYTES for bytes). */
  maxBytes?: number;
}

export interface ClientOptions {
  /** Default request timeout in ms (30 s). */
  timeoutMs?: number;
  /** How long a call that waits for a whole transfer may take (POST /files/download; 10 min). */
  transferTimeoutMs?: number;
  /** Extra headers on every request. */
  headers?: Record<string, string>;
  /** API token of a service with access control on (sent as `Authorization: Bearer`; the real-time channel uses it too). */
  token?: string;
  fetch?: typeof fetch;
}

const enc = encodeURIComponent;

export class PrintfarmClient {
  readonly baseUrl: string;
  private readonly timeoutMs: number;
  private readonly transferTimeoutMs: number;
  private readonly headers: Record<string, string>;
  private readonly fetchImpl: typeof fetch;
  /** The API token, if any (for the real-time channel of the same service). */
  readonly token: string | undefined;

  constructor(baseUrl: string, options: ClientOptions = {}) {
    const url = new URL(baseUrl);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TypeError(`base URL must be http(s), got "${baseUrl}"`);
    this.baseUrl = url.href.replace(/\/+$/, '');
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.transferTimeoutMs = options.transferTimeoutMs ?? 10 * 60_000;
    this.token = options.token || undefined;
    this.headers = { ...(this.token ? { authorization: `Bearer ${this.token}` } : {}), ...options.headers };
    this.fetchImpl = options.fetch ?? fetch;
  }

  /** ws(s)://host/ws for the real-time channel. */
  get wsUrl(): string {
    return this.baseUrl.replace(/^http/, 'ws') + '/ws';
  }

  url(path: string, query?: Query): string {
    const u = new URL(this.baseUrl + API_PREFIX + path);
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined && v !== null && v !== '') u.searchParams.set(k, String(v));
    return u.href;
  }

  /**
   * Aborts every request in flight and refuses new ones (ABORTED). Whoever owns the client calls it when
   * done (FarmConnection.close): a service that accepts but never answers would otherwise hold a closing
   * Node-RED node until each request's timeout. Controllers per request, not one long-lived signal in
   * AbortSignal.any: Node 20 keeps every signal combined with a long-lived one.
   */
  close(): void {
    this.closed = true;
    for (const c of this.inFlight) c.abort();
    this.inFlight.clear();
  }

  private closed = false;
  private readonly inFlight = new Set<AbortController>();

  /** Runs `call` with a signal that close() aborts, until its answer has been read. */
  private async tracked<T>(method: string, path: string, options: RequestOptions, call: (options: RequestOptions) => Promise<T>): Promise<T> {
    if (this.closed) throw new PrintfarmError(0, 'ABORTED', `${method} ${path}: the client is closed`);
    const own = new AbortController();
    this.inFlight.add(own);
    try {
      return await call({ ...options, signal: options.signal ? AbortSignal.any([options.signal, own.signal]) : own.signal });
    } finally {
      this.inFlight.delete(own);
    }
  }

  /** Sends one request; resolves with the parsed JSON body, rejects with PrintfarmError. */
  request<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    return this.tracked(method, path, options, (o) => this.requestOnce<T>(method, path, o));
  }

  private async requestOnce<T>(method: string, path: string, options: RequestOptions): Promise<T> {
    const res = await this.send(method, path, options, 'application/json');
    const text = (await this.readBody(res, method, path, options.maxBytes ?? MAX_JSON_BYTES)).toString('utf8');
    let body: unknown = undefined;
    if (text) {
      try {
        body = JSON.parse(text);
      } catch {
        if (res.ok) throw new PrintfarmError(res.status, 'BAD_RESPONSE', `${method} ${path}: the answer is not JSON`);
      }
    }
    if (!res.ok) throw PrintfarmError.fromBody(res.status, body, `${method} ${path} answered ${res.status}`);
    return body as T;
  }

  /** Like request() but gives the bytes (file contents, pictures). */
  requestBytes(method: string, path: string, options: RequestOptions = {}): Promise<{ data: Buffer; contentType: string | null }> {
    return this.tracked(method, path, options, (o) => this.requestBytesOnce(method, path, o));
  }

  private async requestBytesOnce(method: string, path: string, options: RequestOptions): Promise<{ data: Buffer; contentType: string | null }> {
    const res = await this.send(method, path, options, '*/*');
    const data = await this.readBody(res, method, path, options.maxBytes ?? MAX_FILE_BYTES);
    if (!res.ok) {
      let body: unknown;
      try {
        body = JSON.parse(data.toString('utf8'));
      } catch {
        body = undefined;
      }
      throw PrintfarmError.fromBody(res.status, body, `${method} ${path} answered ${res.status}`);
    }
    return { data, contentType: res.headers.get('content-type') };
  }

  /**
   * Opens an endless answer (a camera stream): resolves with the response once its headers arrived
   * (within the client's timeout), or rejects with PrintfarmError; the body runs until `signal` aborts
   * or the client closes (a relay must not outlive the config node that owns the client: with a remote
   * service, nothing else would ever end it).
   */
  async openStream(path: string, signal: AbortSignal): Promise<Response> {
    if (this.closed) throw new PrintfarmError(0, 'ABORTED', `GET ${path}: the client is closed`);
    const headersDue = new AbortController();
    const timer = setTimeout(() => headersDue.abort(new DOMException('no headers in time', 'TimeoutError')), this.timeoutMs);
    // Tracked for as long as the caller's signal is not aborted (the stream's whole life, not just its headers).
    const own = new AbortController();
    const untrack = () => this.inFlight.delete(own);
    this.inFlight.add(own);
    signal.addEventListener('abort', untrack, { once: true });
    let streaming = false;
    try {
      // The whole-request timeout of send() must not cut the stream: about 24 days (the longest a timer takes).
      const res = await this.send('GET', path, { signal: AbortSignal.any([signal, headersDue.signal, own.signal]), timeoutMs: 2 ** 31 - 1 }, 'multipart/x-mixed-replace, image/jpeg, application/json');
      if (res.ok) {
        streaming = true;
        return res;
      }
      const text = await this.readBody(res, 'GET', path, MAX_JSON_BYTES).then(String, () => '');
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        body = undefined;
      }
      throw PrintfarmError.fromBody(res.status, body, `GET ${path} answered ${res.status}`);
    } finally {
      clearTimeout(timer);
      if (!streaming) {
        untrack();
        signal.removeEventListener('abort', untrack);
      }
    }
  }

  private async send(method: string, path: string, options: RequestOptions, accept: string): Promise<Response> {
    const headers: Record<string, string> = { accept, ...this.headers };
    let body: string | FormData | undefined;
    if (options.body instanceof FormData) body = options.body; // multipart: fetch sets the boundary
    else if (options.body !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(options.body);
    }
    const timeout = AbortSignal.timeout(options.timeoutMs ?? this.timeoutMs);
    const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
    try {
      return await this.fetchImpl(this.url(path, options.query), { method, headers, body, signal });
    } catch (err) {
      throw this.failure(err, method, path);
    }
  }

  /** A fetch failure (before or during the body) as a PrintfarmError. */
  private failure(err: unknown, method: string, path: string): PrintfarmError {
    if (err instanceof PrintfarmError) return err;
    const e = err as Error & { cause?: { code?: string; message?: string } };
    if (e?.name === 'TimeoutError') return new PrintfarmError(0, 'TIMEOUT', `${method} ${path}: no answer from ${this.baseUrl} in time`);
    if (e?.name === 'AbortError') return new PrintfarmError(0, 'ABORTED', `${method} ${path}: aborted`);
    const reason = e?.cause?.code ?? e?.cause?.message ?? e?.message ?? String(err);
    return new PrintfarmError(0, 'NETWORK_ERROR', `${method} ${path}: cannot reach ${this.baseUrl} (${reason})`, { cause: reason });
  }

  /**
   * The body, at most `max` bytes. A peer may send without end (held whole, it would exhaust the memory)
   * or cut or stall the body after the headers (fetch then throws a bare TypeError or DOMException): both
   * are PrintfarmErrors (RESPONSE_TOO_LARGE, NETWORK_ERROR, TIMEOUT) like every other failure.
   */
  private async readBody(res: Response, method: string, path: string, max: number): Promise<Buffer> {
    const tooLarge = () => new PrintfarmError(res.status, 'RESPONSE_TOO_LARGE', `${method} ${path}: the answer of ${this.baseUrl} is larger than ${max} bytes`);
    if (Number(res.headers.get('content-length')) > max) {
      await res.body?.cancel().catch(() => undefined);
      throw tooLarge();
    }
    try {
      return await readBodyUpTo(res, max, tooLarge);
    } catch (err) {
      throw this.failure(err, method, path);
    }
  }

  // System
  health = () => this.request<HealthView>('GET', '/health');
  systemInfo = () => this.request<SystemInfoView>('GET', '/system/info');
  updateCheck = () => this.request<UpdateCheckView>('GET', '/update-check');

  readonly printers = {
    list: (filter: PrinterListFilter = {}) => this.request<PrinterListView>('GET', '/printers', { query: { ...filter } }),
    get: (id: string) => this.request<PrinterDetailView>('GET', `/printers/${enc(id)}`),
    create: (body: CreatePrinterInput) => this.request<PrinterCreatedView>('POST', '/printers', { body }),
    update: (id: string, body: UpdatePrinterInput) => this.request<PrinterUpdatedView>('PUT', `/printers/${enc(id)}`, { body }),
    remove: (id: string) => this.request<PrinterDeletedView>('DELETE', `/printers/${enc(id)}`),
    /** pause / resume / stop; resolves when the printer acknowledged. */
    command: (id: string, action: PrinterCommand) => this.request<PrinterCommandView>('POST', `/printers/${enc(id)}/${action}`),
    pause: (id: string) => this.printers.command(id, 'pause'),
    resume: (id: string) => this.printers.command(id, 'resume'),
    stop: (id: string) => this.printers.command(id, 'stop'),
    testConnection: (id: string) => this.request<ConnectionTestView>('POST', `/printers/${enc(id)}/test-connection`),
    /** The plate was cleared: the queue may start the next print there. */
    plateCleared: (id: string) => this.request<PlateClearedView>('POST', `/printers/${enc(id)}/plate-cleared`),
    /** A JPEG from the printer's camera, at most 2 s old (PrintfarmError CAMERA_UNAVAILABLE, CAMERA_ERROR, PRINTER_OFFLINE...). */
    snapshot: (id: string) => this.requestBytes('GET', `/printers/${enc(id)}/camera/snapshot`, { timeoutMs: this.transferTimeoutMs, maxBytes: MAX_PICTURE_BYTES }).then((r) => r.data),
    /** The camera's live MJPEG stream (multipart/x-mixed-replace) for relaying; see openStream. */
    cameraStream: (id: string, signal: AbortSignal) => this.openStream(`/printers/${enc(id)}/camera/stream`, signal),
  };

  /** The print queue: each copy starts on the next free printer that can print it. */
  readonly queue = {
    list: (filter: QueueListFilter = {}) => this.request<QueueListView>('GET', '/queue', { query: { ...filter } }),
    get: (id: string) => this.request<QueueItemView>('GET', `/queue/${enc(id)}`),
    /** Queues a file the service has locally (see files.upload). */
    add: (body: CreateQueueItemInput) => this.request<QueueItemView>('POST', '/queue', { body }),
    update: (id: string, body: UpdateQueueItemInput) => this.request<QueueItemView>('PATCH', `/queue/${enc(id)}`, { body }),
    /** Cancels the copies not yet started; printing copies go on. */
    cancel: (id: string) => this.request<QueueItemView>('DELETE', `/queue/${enc(id)}`),
    hold: (id: string) => this.request<QueueItemView>('POST', `/queue/${enc(id)}/hold`),
    release: (id: string) => this.request<QueueItemView>('POST', `/queue/${enc(id)}/release`),
  };

  readonly jobs = {
    list: (filter: JobListFilter = {}) => this.request<JobListView>('GET', '/jobs', { query: { ...filter } }),
    get: (id: number | string) => this.request<JobDetailView>('GET', `/jobs/${enc(String(id))}`),
    create: (body: CreateJobInput) => this.request<JobDetailView>('POST', '/jobs', { body }),
    update: (id: number | string, body: UpdateJobInput) => this.request<JobUpdatedView>('PUT', `/jobs/${enc(String(id))}`, { body }),
    remove: (id: number | string) => this.request<JobDeletedView>('DELETE', `/jobs/${enc(String(id))}`),
    cancel: (id: number | string) => this.request<JobCancelledView>('POST', `/jobs/${enc(String(id))}/cancel`),
  };

  readonly files = {
    list: (filter: FileListFilter = {}) => this.request<FileListView>('GET', '/files', { query: { ...filter } }),
    get: (id: string) => this.request<FileDetailView>('GET', `/files/${enc(id)}`),
    refresh: (printerId?: string) => this.request<RefreshResultView>('POST', '/files/refresh', { body: printerId ? { printer_id: printerId } : {} }),
    /** Starts a background download (202); follow downloadStatus() or file_update frames. */
    startDownload: (id: string) => this.request<DownloadStartedView>('POST', `/files/${enc(id)}/download`),
    downloadStatus: (id: string) => this.request<DownloadStatusView>('GET', `/files/${enc(id)}/download/status`),
    /** Fetches the file of a printer's current print (or `filePath`) and answers when it is local. */
    downloadForPrinter: (printerId: string, filePath?: string, options: { signal?: AbortSignal } = {}) =>
      this.request<CurrentJobDownloadView>('POST', '/files/download', {
        body: filePath ? { printer_id: printerId, file_path: filePath } : { printer_id: printerId },
        timeoutMs: this.transferTimeoutMs,
        signal: options.signal,
      }),
    /** Stores a local file (multipart upload); its id can be queued. */
    upload: (name: string, data: Buffer | Uint8Array) => {
      const form = new FormData();
      form.append('file', new Blob([new Uint8Array(data)]), name);
      return this.request<UploadResultView>('POST', '/files/upload', { body: form, timeoutMs: this.transferTimeoutMs });
    },
    content: (id: string) => this.requestBytes('GET', `/files/${enc(id)}/content`, { timeoutMs: this.transferTimeoutMs }).then((r) => r.data),
    removeLocal: (id: string) => this.request<FileDeletedView>('DELETE', `/files/${enc(id)}`),
    cleanupCandidates: (query: { older_than_days?: number; min_size_mb?: number; unused_only?: boolean } = {}) =>
      this.request<CleanupCandidatesView>('GET', '/files/cleanup/candidates', { query }),
    cleanup: (fileIds: string[]) => this.request<CleanupResultView>('POST', '/files/cleanup', { body: { file_ids: fileIds, confirm: true } }),
    /** Spec 4.4: extract (3MF/BGCode), generate (STL/OBJ) or analyze (G-code) a file's thumbnail. */
    thumbnail: (id: string, method: ThumbnailMethod, options: { signal?: AbortSignal } = {}) =>
      this.request<ThumbnailResultView>('POST', method === 'analyze' ? `/files/${enc(id)}/analyze/gcode` : `/files/${enc(id)}/thumbnail/${method}`, {
        timeoutMs: this.transferTimeoutMs,
        signal: options.signal,
      }),
    /** Spec 4.4: POST /files/{id}/preview (the picture's bytes). */
    preview: (id: string) => this.requestBytes('POST', `/files/${enc(id)}/preview`, { timeoutMs: this.transferTimeoutMs, maxBytes: MAX_PICTURE_BYTES }),
  };

  readonly statistics = {
    overview: (filter: StatisticsFilter = {}) => this.request<StatisticsOverviewView>('GET', '/statistics/overview', { query: { ...filter } }),
    printer: (id: string, filter: StatisticsFilter = {}) => this.request<PrinterStatisticsView>('GET', `/statistics/printers/${enc(id)}`, { query: { ...filter } }),
  };

  readonly settings = {
    get: () => this.request<Settings>('GET', '/settings'),
    update: (changes: Settings) => this.request<SettingsUpdatedView>('PUT', '/settings', { body: changes }),
    application: () => this.request<Settings>('GET', '/settings/application'),
    gcodeOptimization: () => this.request<GcodeOptimizationView>('GET', '/settings/gcode-optimization'),
    updateGcodeOptimization: (changes: Partial<GcodeOptimizationView>) =>
      this.request<GcodeOptimizationUpdatedView>('PUT', '/settings/gcode-optimization', { body: changes }),
  };
}
