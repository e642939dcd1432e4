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
import { DriverError } from '../printers/driver';
import type { Fleet } from '../printers/fleet';
import { nowIso } from '../util/time';
import { sha256File, type FileStorage } from './storage';

export interface DownloadTask {
  download_id: string;
  file_id: string;
  status: 'downloading' | 'completed' | 'failed';
  progress: number;
  bytes_downloaded: number;
  bytes_total: number;
  speed_mbps: number;
  estimated_remaining: number | null;
  started_at: string;
  completed_at: string | null;
  error: string | null;
  attempt: number;
}

export interface DownloadOptions {
  /** Attempts in all (default 3). */
  attempts?: number;
  /** First retry delay in ms, doubling (default 1000). */
  retryDelayMs?: number;
  /** Least time between two file_update frames of one task (default 500 ms). */
  frameIntervalMs?: number;
}

/** Failures worth another try: the link dropped or stalled. A refused or missing file is final. */
const transient = (err: unknown) => !(err instanceof DriverError) || err.code === 'OFFLINE' || err.code === 'TIMEOUT' || err.code === 'PROTOCOL';

export class DownloadManager {
  private readonly tasks = new Map<string, { task: DownloadTask; done: Promise<void>; abort: AbortController }>();
  /** Finished tasks stay visible to the status endpoint until the next download of the file. */
  private readonly finished = new Map<string, DownloadTask>();
  private closed = false;

  constructor(
    private readonly store: Store,
    private readonly fleet: Fleet,
    private readonly storage: FileStorage,
    private readonly bus: EventBus,
    private readonly log: Logger,
    private readonly options: DownloadOptions = {},
  ) {}

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
  async start(file: FileRecord): Promise<{ task: DownloadTask; joined: boolean }> {
    const running = this.tasks.get(file.id);
    if (running) return { task: running.task, joined: true };
    // Fails fast (502) when the printer is not connected, before anything changes.
    this.fleet.driverOf(file.printer_id!);
    const task: DownloadTask = {
      download_id: randomUUID(),
      file_id: file.id,
      status: 'downloading',
      progress: 0,
      bytes_downloaded: 0,
      bytes_total: file.file_size,
      speed_mbps: 0,
      estimated_remaining: null,
      started_at: nowIso(),
      completed_at: null,
      error: null,
      attempt: 0,
    };
    await this.store.files.update(file.id, { status: 'downloading', error: null, updated_at: task.started_at });
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
      // A kill between the rename of a new complete copy and its database update leaves the new bytes under the
      // old checksum: the copy on disk is complete either way (only checksummed files are renamed into place),
      // so its checksum is taken again rather than trusted.
      const patch = kept
        ? { status: 'downloaded' as const, checksum: await sha256File(f.local_path!) }
        : { status: 'available' as const, local_path: null, checksum: null, downloaded_at: null };
      if (await this.store.files.transition(f.id, ['downloading'], { ...patch, error: null, updated_at: nowIso() })) recovered++;
    }
    return recovered;
  }

  /** Aborts running transfers (their files go back to `available`) and waits for them. */
  async close(): Promise<void> {
    this.closed = true;
    for (const { abort } of this.tasks.values()) abort.abort();
    await Promise.all([...this.tasks.values()].map((t) => t.done));
  }

  private async run(file: FileRecord, task: DownloadTask, signal: AbortSignal): Promise<void> {
    const attempts = this.options.attempts ?? 3;
    const target = this.storage.printerCopy(file.printer_id!, file.filename);
    for (let attempt = 1; ; attempt++) {
      task.attempt = attempt;
      const temp = this.storage.tempFor(target);
      try {
        await this.transfer(file, task, temp, signal);
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
        const reason = (err as Error).message;
        if (signal.aborted || this.closed) {
          await this.store.files.update(file.id, { status: 'available', download_attempts: file.download_attempts + attempt, updated_at: nowIso() });
          Object.assign(task, { status: 'failed', error: 'download aborted (service shutting down)', completed_at: nowIso() });
          return;
        }
        if (attempt < attempts && transient(err)) {
          this.log.warn({ file_id: file.id, attempt, reason }, 'download failed; retrying');
          await new Promise((r) => setTimeout(r, (this.options.retryDelayMs ?? 1000) * 2 ** (attempt - 1)));
          continue;
        }
        const now = nowIso();
        await this.store.files
          .update(file.id, { status: 'error', error: reason, download_attempts: file.download_attempts + attempt, updated_at: now })
          .catch((e) => this.log.error({ err: e }, 'could not store download failure'));
        Object.assign(task, { status: 'failed', error: reason, completed_at: now });
        this.log.warn({ file_id: file.id, printer_id: file.printer_id, reason }, 'download failed');
        this.frame(task, file, true);
        this.bus.emit('system_alert', {
          level: 'error',
          message: `Download of ${file.filename} failed: ${reason}`,
          code: 'DOWNLOAD_FAILED',
          file_id: file.id,
          printer_id: file.printer_id ?? undefined,
        });
        return;
      }
    }
  }

  private async transfer(file: FileRecord, task: DownloadTask, temp: string, signal: AbortSignal): Promise<void> {
    const driver = this.fleet.driverOf(file.printer_id!);
    const began = Date.now();
    task.bytes_downloaded = 0;
    await driver.download(
      file.printer_path!,
      temp,
      (bytes, total) => {
        const seconds = Math.max(0.001, (Date.now() - began) / 1000);
        const rate = bytes / seconds;
        task.bytes_downloaded = bytes;
        task.bytes_total = total || task.bytes_total;
        task.progress = task.bytes_total ? Math.min(100, Math.round((bytes / task.bytes_total) * 1000) / 10) : 0;
        task.speed_mbps = Math.round(((rate * 8) / 1e6) * 100) / 100;
        task.estimated_remaining = rate > 0 && task.bytes_total ? Math.max(0, Math.round((task.bytes_total - bytes) / rate)) : null;
        this.frame(task, file, false);
      },
      signal,
    );
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
