/**
 * Downloads of printer files to local storage, in the background. One task
 * per file at a time (a second request joins the running one); the bytes go
 * to a temp file that is checksummed and renamed only when complete, so an
 * interrupted transfer never leaves a file marked downloaded. Transient
 * failures are retried; the last failure marks the file `error`.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import type { Logger } from 'pino';
import type { Store } from '../db';
import type { FileRecord } from '../db/repositories/files';
import type { EventBus } from '../events';
import { DomainError } from '../errors';
import { DriverError, storageFullCode } from '../printers/driver';
import type { Fleet } from '../printers/fleet';
import { nowIso } from '../util/time';
import { sha256File, type FileStorage } from './storage';

/** Why a download ended without a file: our disk, the size cap, a silent printer, a user, or the printer/link. */
export type DownloadFailure = 'disk_full' | 'too_large' | 'stalled' | 'cancelled' | 'printer';

export interface DownloadTask {
  download_id: string;
  file_id: string;
  status: 'downloading' | 'completed' | 'failed' | 'cancelled';
  /** 0..100 (0 while the size is unknown). */
  progress: number;
  bytes_downloaded: number;
  /** null while the printer has not told the size. */
  bytes_total: number | null;
  speed_mbps: number;
  estimated_remaining: number | null;
  started_at: string;
  completed_at: string | null;
  error: string | null;
  reason: DownloadFailure | null;
  attempt: number;
}

export interface DownloadOptions {
  /** Attempts in all (default 3). */
  attempts?: number;
  /** First retry delay in ms, doubling (default 1000). */
  retryDelayMs?: number;
  /** Least time between two file_update frames of one task (default 500 ms). */
  frameIntervalMs?: number;
  /** Largest file downloaded, bytes (MAX_DOWNLOAD_SIZE_MB; default 2 GiB). */
  maxBytes?: number;
  /** A transfer that brings no byte for this long is stopped (default 60 s). */
  stallTimeoutMs?: number;
}

export const DEFAULT_MAX_DOWNLOAD_BYTES = 2048 * 1024 * 1024;

/** Why the manager itself stopped an attempt (the abort reason). */
class Stop extends Error {
  constructor(
    readonly reason: 'stalled' | 'too_large' | 'cancelled' | 'shutdown',
    message: string,
  ) {
    super(message);
  }
}

const stopping = () => new DomainError(503, 'SERVICE_UNAVAILABLE', 'The service is shutting down', { phase: 'stopping' });

/** Failures worth another try: the link dropped or stalled. A refused or missing file is final. */
const transient = (err: unknown) => !(err instanceof DriverError) || err.code === 'OFFLINE' || err.code === 'TIMEOUT' || err.code === 'PROTOCOL';

export class DownloadManager {
  private readonly tasks = new Map<string, { task: DownloadTask; done: Promise<void>; abort: AbortController }>();
  private readonly maxBytes: number;
  /** Finished tasks stay visible to the status endpoint until the next download of the file. */
  private readonly finished = new Map<string, DownloadTask>();
  /** Starts under way (not yet in `tasks`), by file id. */
  private readonly starting = new Map<string, Promise<{ task: DownloadTask; joined: boolean }>>();
  private closed = false;

  constructor(
    private readonly store: Store,
    private readonly fleet: Fleet,
    private readonly storage: FileStorage,
    private readonly bus: EventBus,
    private readonly log: Logger,
    private readonly options: DownloadOptions = {},
  ) {
    this.maxBytes = options.maxBytes ?? DEFAULT_MAX_DOWNLOAD_BYTES;
  }

  /** The running or last task of a file. */
  status(fileId: string): DownloadTask | undefined {
    return this.tasks.get(fileId)?.task ?? this.finished.get(fileId);
  }

  /** Waits for the running download of a file (tests, and the current-job fetch). */
  async wait(fileId: string): Promise<DownloadTask | undefined> {
    await this.tasks.get(fileId)?.done;
    return this.status(fileId);
  }

  /** Starts (or joins) the download of a printer file. The caller has checked the file exists and has a printer. */
  start(file: FileRecord): Promise<{ task: DownloadTask; joined: boolean }> {
    // A start awaits the database before its task is listed: a second start meanwhile joins that one, not a second transfer.
    const starting = this.starting.get(file.id);
    if (starting) return starting.then(({ task }) => ({ task, joined: true }));
    const started = this.begin(file).finally(() => this.starting.delete(file.id));
    this.starting.set(file.id, started);
    return started;
  }

  private async begin(file: FileRecord): Promise<{ task: DownloadTask; joined: boolean }> {
    const running = this.tasks.get(file.id);
    if (running) return { task: running.task, joined: true };
    if (file.file_size > this.maxBytes) {
      throw new DomainError(413, 'FILE_TOO_LARGE', `${file.filename} has ${file.file_size} bytes; downloads are limited to ${this.maxBytes} (MAX_DOWNLOAD_SIZE_MB)`, {
        file_id: file.id,
        file_size: file.file_size,
        limit_bytes: this.maxBytes,
      });
    }
    // Fails fast (502) when the printer is not connected, before anything changes.
    this.fleet.driverOf(file.printer_id!);
    if (this.closed) throw stopping();
    const task: DownloadTask = {
      download_id: randomUUID(),
      file_id: file.id,
      status: 'downloading',
      progress: 0,
      bytes_downloaded: 0,
      bytes_total: file.file_size > 0 ? file.file_size : null,
      speed_mbps: 0,
      estimated_remaining: null,
      started_at: nowIso(),
      completed_at: null,
      error: null,
      reason: null,
      attempt: 0,
    };
    await this.store.files.update(file.id, { status: 'downloading', error: null, updated_at: task.started_at });
    if (this.closed) {
      // close() aborted the tasks it found while this one was not listed yet: it must not run past the shutdown.
      await this.store.files.update(file.id, { status: file.status === 'downloading' ? 'available' : file.status, updated_at: nowIso() });
      throw stopping();
    }
    const abort = new AbortController();
    const done = this.run(file, task, abort.signal).finally(() => {
      this.tasks.delete(file.id);
      this.finished.set(file.id, task);
    });
    this.tasks.set(file.id, { task, done, abort });
    this.finished.delete(file.id);
    this.frame(task, file, true);
    return { task, joined: false };
  }

  /**
   * Files a previous run left `downloading` (killed mid-transfer, so it never reset them): none of them has a
   * task in this run. Each goes back to what it really is: `downloaded` when its earlier complete copy is still
   * on disk (the copy is only ever replaced by a complete, checksummed file), else `available`. Call before the
   * fleet connects, so no download of this run can be running yet.
   */
  async recoverInterrupted(): Promise<number> {
    const stuck: FileRecord[] = [];
    const limit = 500;
    for (let page = 1; ; page++) {
      const { files } = await this.store.files.list({ status: 'downloading', page, limit });
      stuck.push(...files);
      if (files.length < limit) break;
    }
    let recovered = 0;
    for (const f of stuck) {
      if (this.tasks.has(f.id)) continue;
      const kept = f.local_path !== null && f.checksum !== null && fs.existsSync(f.local_path);
      // The same kill during a first download leaves a complete copy at the target that no row names: it would
      // stay in the data dir as an orphan (and be fetched again), so it becomes the file's copy.
      const target = kept || f.printer_id === null ? null : this.storage.printerCopy(f.id, f.filename);
      const adopted = target !== null && fs.existsSync(target);
      // A kill between the rename of a new complete copy and its database update leaves the new bytes under the
      // old checksum: the copy on disk is complete either way (only checksummed files are renamed into place),
      // so its checksum is taken again rather than trusted.
      const patch = kept
        ? { status: 'downloaded' as const, checksum: await sha256File(f.local_path!) }
        : adopted
          ? { status: 'downloaded' as const, local_path: target, checksum: await sha256File(target), file_size: fs.statSync(target).size, downloaded_at: nowIso() }
          : { status: 'available' as const, local_path: null, checksum: null, downloaded_at: null };
      if (await this.store.files.transition(f.id, ['downloading'], { ...patch, error: null, updated_at: nowIso() })) recovered++;
    }
    return recovered;
  }

  /** Stops the running download of a file (its earlier copy, if any, stays); resolves with the ended task, or undefined when none ran. */
  async cancel(fileId: string): Promise<DownloadTask | undefined> {
    const running = this.tasks.get(fileId);
    if (!running) return undefined;
    running.abort.abort(new Stop('cancelled', 'download cancelled'));
    await running.done;
    return running.task;
  }

  /** Aborts running transfers (their files go back to `available`) and waits for them. */
  async close(): Promise<void> {
    this.closed = true;
    for (const { abort } of this.tasks.values()) abort.abort(new Stop('shutdown', 'download aborted (service shutting down)'));
    await Promise.all([...this.tasks.values()].map((t) => t.done));
  }

  private async run(file: FileRecord, task: DownloadTask, signal: AbortSignal): Promise<void> {
    const attempts = this.options.attempts ?? 3;
    const target = this.storage.printerCopy(file.id, file.filename);
    for (let attempt = 1; ; attempt++) {
      task.attempt = attempt;
      const temp = this.storage.tempFor(target);
      // Per attempt: the task's abort (cancel, shutdown) plus our own (stall, size cap).
      const attemptAbort = new AbortController();
      const forward = () => attemptAbort.abort(signal.reason);
      if (signal.aborted) forward();
      else signal.addEventListener('abort', forward, { once: true });
      try {
        await this.transfer(file, task, temp, attemptAbort);
        const checksum = await sha256File(temp);
        const size = fs.statSync(temp).size;
        fs.renameSync(temp, target);
        const now = nowIso();
        await this.store.files.update(file.id, {
          status: 'downloaded',
          local_path: target,
          checksum,
          file_size: size,
          downloaded_at: now,
          download_attempts: file.download_attempts + attempt,
          error: null,
          updated_at: now,
        });
        Object.assign(task, { status: 'completed', progress: 100, bytes_downloaded: size, bytes_total: size, estimated_remaining: 0, completed_at: now });
        this.log.info({ file_id: file.id, printer_id: file.printer_id, bytes: size }, 'file downloaded');
        this.frame(task, file, true);
        return;
      } catch (err) {
        fs.rmSync(temp, { force: true });
        const stop = attemptAbort.signal.reason instanceof Stop ? attemptAbort.signal.reason : null;
        const diskCode = storageFullCode(err);
        const reason = diskCode ? `local storage full (${diskCode})` : stop ? stop.message : (err as Error).message;
        if (stop?.reason === 'cancelled' || stop?.reason === 'shutdown' || (signal.aborted && !stop) || this.closed) {
          // An earlier complete copy is untouched (only the temp file is gone): the file keeps it.
          const status = file.local_path && fs.existsSync(file.local_path) ? 'downloaded' : 'available';
          await this.store.files.update(file.id, { status, download_attempts: file.download_attempts + attempt, updated_at: nowIso() });
          const cancelled = stop?.reason === 'cancelled';
          Object.assign(task, { status: cancelled ? 'cancelled' : 'failed', error: reason, reason: cancelled ? 'cancelled' : null, completed_at: nowIso() });
          if (cancelled) {
            this.log.info({ file_id: file.id, printer_id: file.printer_id }, 'download cancelled');
            this.frame(task, file, true);
          }
          return;
        }
        // A full disk or an oversized file will not heal by asking again; a stall or a lost link may.
        const failure: DownloadFailure = diskCode ? 'disk_full' : stop?.reason === 'too_large' ? 'too_large' : stop?.reason === 'stalled' ? 'stalled' : 'printer';
        const retryable = failure === 'stalled' || (failure === 'printer' && transient(err));
        if (attempt < attempts && retryable) {
          this.log.warn({ file_id: file.id, attempt, reason }, 'download failed; retrying');
          await new Promise((r) => setTimeout(r, (this.options.retryDelayMs ?? 1000) * 2 ** (attempt - 1)));
          continue;
        }
        const now = nowIso();
        await this.store.files
          .update(file.id, { status: 'error', error: reason, download_attempts: file.download_attempts + attempt, updated_at: now })
          .catch((e) => this.log.error({ err: e }, 'could not store download failure'));
        Object.assign(task, { status: 'failed', error: reason, reason: failure, completed_at: now });
        this.log[failure === 'disk_full' ? 'error' : 'warn']({ file_id: file.id, printer_id: file.printer_id, reason: failure, error: reason }, 'download failed');
        this.frame(task, file, true);
        this.bus.emit('system_alert', {
          level: 'error',
          message: `Download of ${file.filename} failed: ${reason}`,
          code: 'DOWNLOAD_FAILED',
          reason: failure,
          file_id: file.id,
          printer_id: file.printer_id ?? undefined,
        });
        return;
      } finally {
        signal.removeEventListener('abort', forward);
      }
    }
  }

  private async transfer(file: FileRecord, task: DownloadTask, temp: string, abort: AbortController): Promise<void> {
    const driver = this.fleet.driverOf(file.printer_id!);
    const began = Date.now();
    task.bytes_downloaded = 0;
    const stallMs = this.options.stallTimeoutMs ?? 60_000;
    let watchdog: NodeJS.Timeout | undefined;
    const arm = () => {
      clearTimeout(watchdog);
      watchdog = setTimeout(() => abort.abort(new Stop('stalled', `no data from the printer for ${Math.round(stallMs / 1000)} s`)), stallMs);
    };
    arm();
    try {
      await driver.download(
        file.printer_path!,
        temp,
        (bytes, total) => {
          if (abort.signal.aborted) return;
          arm();
          // The size the printer tells (else the listing's); -1 or 0 means it does not know.
          const known = total > 0 ? total : task.bytes_total;
          if (bytes > this.maxBytes || (known !== null && known > this.maxBytes)) {
            abort.abort(new Stop('too_large', `${file.filename} is larger than the download limit of ${this.maxBytes} bytes (MAX_DOWNLOAD_SIZE_MB)`));
            return;
          }
          const seconds = Math.max(0.001, (Date.now() - began) / 1000);
          const rate = bytes / seconds;
          task.bytes_downloaded = bytes;
          task.bytes_total = known !== null && known >= bytes ? known : known === null ? null : bytes;
          task.progress = task.bytes_total ? Math.max(0, Math.min(100, Math.round((bytes / task.bytes_total) * 1000) / 10)) : 0;
          task.speed_mbps = Math.round(((rate * 8) / 1e6) * 100) / 100;
          task.estimated_remaining = rate > 0 && task.bytes_total ? Math.max(0, Math.round((task.bytes_total - bytes) / rate)) : null;
          this.frame(task, file, false);
        },
        abort.signal,
      );
    } finally {
      clearTimeout(watchdog);
    }
    // A driver that ignored the abort and finished anyway still does not deliver an oversized file.
    if (abort.signal.aborted) throw abort.signal.reason;
  }

  private lastFrame = new Map<string, number>();

  /** file_update frames, at most one per frameIntervalMs per task (plus the first and the last). */
  private frame(task: DownloadTask, file: FileRecord, force: boolean): void {
    const now = Date.now();
    if (!force && now - (this.lastFrame.get(task.download_id) ?? 0) < (this.options.frameIntervalMs ?? 500)) return;
    this.lastFrame.set(task.download_id, now);
    if (task.status !== 'downloading') this.lastFrame.delete(task.download_id);
    this.bus.emit('file_update', { ...task, printer_id: file.printer_id, filename: file.filename });
  }
}
