/**
 * The file catalog: files on printers (refreshed when a printer connects,
 * periodically and on demand) and local files, one list with one status.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Logger } from 'pino';
import { DomainError, notFound } from '../errors';
import type { Store } from '../db';
import type { FileRecord, FileStatus, PrinterFileEntry } from '../db/repositories/files';
import { printedFile, printFileName } from '../monitoring/print-identity';
import type { Fleet } from '../printers/fleet';
import { storageFullCode } from '../util/storage-errors';
import { nowIso } from '../util/time';
import type { DownloadManager } from './downloads';
import { moveCopiesToLayout } from './layout-migration';
import { fileTypeOf, printerFileId, sha256File, type FileStorage } from './storage';

const STATUS_ICON: Record<FileStatus, string> = { available: '☁️', downloading: '⏬', downloaded: '✅', local: '💾', error: '⚠️' };

/** Largest accepted upload (bytes). */
export const MAX_UPLOAD_BYTES = 1024 * 1024 * 1024;
const ALLOWED_UPLOADS = ['.3mf', '.gcode', '.bgcode', '.stl', '.obj', '.gco', '.g'];

/** What the periodic orphan sweep leaves alone: written this recently (a download or a preview finishing now). */
const ORPHAN_GRACE_MS = 60_000;

export class FileCatalog {
  private timer: NodeJS.Timeout | null = null;
  private readonly refreshing = new Map<string, Promise<{ added: number; removed: number }>>();
  private recovering: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly store: Store,
    private readonly fleet: Fleet,
    private readonly storage: FileStorage,
    readonly downloads: DownloadManager,
    private readonly log: Logger,
  ) {}

  /** Refreshes a printer's files whenever it connects, and every `periodMs` for all connected printers. */
  start(periodMs = 10 * 60_000): void {
    const startedAt = Date.now();
    const swept = this.storage.sweepPartials();
    if (swept) this.log.info({ removed: swept }, 'removed partial downloads left by an interrupted run');
    // Runs before any printer is connected (fleet.start() comes after), so no download of this run can race it.
    this.recovering = moveCopiesToLayout(this.store, this.storage, this.log)
      .catch((err) => this.log.error({ err }, 'could not move local copies to the current layout'))
      .then(() => this.downloads.recoverInterrupted())
      .then(
      (n) => n && this.log.info({ files: n }, 'reset files left downloading by an interrupted run'),
      (err) => this.log.error({ err }, 'could not reset files left downloading by an interrupted run'),
    )
      .then(async () => {
        const removed = this.storage.sweepUnlistedUploads(await this.store.files.uploadPaths(), startedAt);
        if (removed) this.log.info({ removed }, 'removed uploads an interrupted run left without a record');
      })
      .catch((err) => this.log.error({ err }, 'could not look for uploads left without a record'))
      .then(() => this.sweepOrphans(startedAt));
    this.fleet.onLinkUp((printerId) => {
      this.refresh(printerId).catch((err) => this.log.warn({ err: (err as Error).message, printer_id: printerId }, 'file refresh failed'));
    });
    this.timer = setInterval(() => {
      for (const id of this.fleet.connectedPrinters()) this.refresh(id).catch(() => undefined);
      void this.sweepOrphans(Date.now() - ORPHAN_GRACE_MS);
    }, periodMs);
    this.timer.unref();
  }

  thumbnailPath(fileId: string): string {
    return this.storage.thumbnailPath(fileId);
  }

  /**
   * Removes the local copies and thumbnails of files whose row is gone (written before `before`): a removed
   * printer takes its files' rows with it, a refresh drops the files gone from the printer, and neither touches
   * the disk. Never throws.
   */
  async sweepOrphans(before: number): Promise<{ copies: number; thumbnails: number }> {
    try {
      const swept = this.storage.sweepOrphans(await this.store.files.ids(), before);
      if (swept.copies || swept.thumbnails) this.log.info(swept, 'removed copies and thumbnails of files that are gone');
      return swept;
    } catch (err) {
      this.log.error({ err }, 'could not remove copies and thumbnails of files that are gone');
      return { copies: 0, thumbnails: 0 };
    }
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await Promise.allSettled([this.recovering, ...this.refreshing.values()]);
  }

  /** Lists a printer's files and brings the catalog in line (concurrent calls share one listing). */
  refresh(printerId: string): Promise<{ added: number; removed: number }> {
    const running = this.refreshing.get(printerId);
    if (running) return running;
    const job = (async () => {
      const driver = this.fleet.driverOf(printerId);
      const listed = await driver.listFiles();
      const entries: PrinterFileEntry[] = listed.map((f) => ({
        id: printerFileId(printerId, f.path),
        path: f.path,
        name: f.name,
        file_type: fileTypeOf(f.name),
        size: f.size,
        modified: f.modified,
      }));
      return this.store.files.syncPrinter(printerId, entries, nowIso());
    })().finally(() => this.refreshing.delete(printerId));
    this.refreshing.set(printerId, job);
    return job;
  }

  async require(id: string): Promise<FileRecord> {
    const file = await this.store.files.get(id);
    if (!file) throw notFound('FILE_NOT_FOUND', `File "${id}" not found`, { file_id: id });
    return file;
  }

  view(f: FileRecord) {
    const m = f.metadata ?? {};
    const num = (v: unknown) => (typeof v === 'number' ? v : null);
    return {
      id: f.id,
      printer_id: f.printer_id,
      printer_name: f.printer_name,
      filename: f.filename,
      file_size: f.file_size,
      file_type: f.file_type,
      status: f.status,
      status_icon: STATUS_ICON[f.status],
      printer_path: f.printer_path,
      local_path: this.storage.shown(f.local_path),
      created_on_printer: f.created_on_printer,
      downloaded_at: f.downloaded_at,
      last_accessed: f.last_accessed,
      download_url: f.status === 'available' || f.status === 'error' ? `/api/v1/files/${f.id}/download` : null,
      ...(f.status === 'local' ? { upload_url: '/api/v1/files/upload' } : {}),
      ...(f.checksum ? { checksum: f.checksum } : {}),
      metadata: { estimated_print_time: num(m.estimated_print_time), layer_height: num(m.layer_height), infill: num(m.infill) },
    };
  }

  async detail(id: string) {
    const f = await this.require(id);
    const m = f.metadata ?? {};
    const related = await this.relatedJobs(f);
    return {
      ...this.view(f),
      original_filename: f.original_filename ?? f.filename,
      preview_url: `/api/v1/files/${f.id}/preview`,
      content_url: f.local_path ? `/api/v1/files/${f.id}/content` : null,
      download_attempts: f.download_attempts,
      error: f.error,
      metadata: {
        ...this.view(f).metadata,
        layer_count: typeof m.layer_count === 'number' ? m.layer_count : null,
        support_material: typeof m.support_material === 'boolean' ? m.support_material : null,
        material_type: typeof m.material_type === 'string' ? m.material_type : null,
        nozzle_temperature: typeof m.nozzle_temperature === 'number' ? m.nozzle_temperature : null,
        bed_temperature: typeof m.bed_temperature === 'number' ? m.bed_temperature : null,
      },
      related_jobs: related,
    };
  }

  /** Jobs that printed this file: of its printer, whose file (its path, else its name) is this one and not a variant of its name. */
  private async relatedJobs(f: FileRecord) {
    if (!f.printer_id) return [];
    const { jobs } = await this.store.jobs.list({ printer_id: f.printer_id, page: 1, limit: 100, order_by: 'created_at', order_dir: 'desc' });
    const files = await this.store.files.forPrinter(f.printer_id);
    return jobs
      .filter((j) => printedFile(files, { path: j.file_path, name: j.filename ?? j.job_name })?.id === f.id)
      .map((j) => ({ id: j.id, status: j.status, completed_at: j.status === 'completed' ? j.end_time : null }));
  }

  /** Removes the local copy only: a printer file goes back to `available`, a local-only file is gone. */
  async deleteLocal(id: string) {
    let f = await this.require(id);
    // Deleting a file that is being downloaded stops the download (a drip-feeding printer must not pin it).
    const cancelled = f.status === 'downloading' && (await this.downloads.cancel(id)) !== undefined;
    if (cancelled) f = await this.require(id);
    if (f.status === 'downloading') throw new DomainError(409, 'FILE_BUSY', `File "${id}" is being downloaded`, { file_id: id });
    if (cancelled && !f.local_path) {
      return { id, message: 'Download cancelled; the file stays on the printer', status: 'available' as FileStatus, deleted_at: nowIso() };
    }
    if (!f.local_path && f.status !== 'local') {
      throw new DomainError(409, 'NO_LOCAL_COPY', `File "${id}" has no local copy to delete`, { file_id: id, status: f.status });
    }
    if (f.local_path) this.storage.removeCopy(f.local_path);
    const now = nowIso();
    if (f.printer_id) {
      await this.store.files.update(id, { status: 'available', local_path: null, checksum: null, downloaded_at: null, updated_at: now });
      return { id, message: 'Local copy deleted; the file stays on the printer', status: 'available' as FileStatus, deleted_at: now };
    }
    await this.store.files.delete(id);
    return { id, message: 'Local file deleted', status: 'deleted', deleted_at: now };
  }

  async cleanupCandidates(q: { older_than_days: number; min_size_mb: number; unused_only: boolean }) {
    const before = new Date(Date.now() - q.older_than_days * 86_400_000).toISOString();
    const files = await this.store.files.withLocalCopy({ before, minSize: Math.round(q.min_size_mb * 1024 * 1024), unusedOnly: q.unused_only });
    const candidates = files.map((f) => ({
      id: f.id,
      filename: f.filename,
      file_size: f.file_size,
      downloaded_at: f.downloaded_at,
      last_accessed: f.last_accessed,
      age_days: Math.floor((Date.now() - Date.parse(f.downloaded_at ?? f.created_at)) / 86_400_000),
      space_savings_mb: Math.round((f.file_size / 1024 / 1024) * 100) / 100,
    }));
    return {
      cleanup_candidates: candidates,
      total_candidates: candidates.length,
      total_space_savings_mb: Math.round(candidates.reduce((s, c) => s + c.space_savings_mb, 0) * 100) / 100,
    };
  }

  async cleanup(fileIds: string[]) {
    let cleaned = 0;
    let freed = 0;
    const failed: { file_id: string; error: string }[] = [];
    for (const id of fileIds) {
      try {
        const f = await this.require(id);
        await this.deleteLocal(id);
        cleaned++;
        freed += f.file_size;
      } catch (err) {
        failed.push({ file_id: id, error: (err as Error).message });
      }
    }
    return { cleaned_files: cleaned, space_freed_mb: Math.round((freed / 1024 / 1024) * 100) / 100, failed_cleanups: failed, completed_at: nowIso() };
  }

  /** Stores an upload as a local file: streamed to a temp file, checksummed, renamed. */
  async storeUpload(name: string, body: Readable, limit = MAX_UPLOAD_BYTES) {
    const type = fileTypeOf(name);
    if (!ALLOWED_UPLOADS.includes(type)) {
      throw new DomainError(422, 'VALIDATION_ERROR', `Invalid body: file: ${type} files are not print or model files`, {
        location: 'body',
        fields: [{ field: 'file', message: `allowed: ${ALLOWED_UPLOADS.join(', ')}`, code: 'invalid_type' }],
      });
    }
    const id = randomUUID().replace(/-/g, '').slice(0, 20);
    const target = this.storage.localFile(id, name);
    const temp = this.storage.tempFor(target);
    const out = fs.createWriteStream(temp);
    try {
      await pipeline(body, out);
      if ((body as Readable & { truncated?: boolean }).truncated) {
        throw new DomainError(413, 'PAYLOAD_TOO_LARGE', `Upload exceeds ${limit} bytes`, { limit_bytes: limit });
      }
      const checksum = await sha256File(temp);
      const size = fs.statSync(temp).size;
      fs.renameSync(temp, target);
      const now = nowIso();
      await this.store.files.insert({
        id,
        printer_id: null,
        filename: name,
        original_filename: name,
        file_type: type,
        file_size: size,
        status: 'local',
        printer_path: null,
        local_path: target,
        checksum,
        created_on_printer: null,
        downloaded_at: null,
        last_accessed: null,
        download_attempts: 0,
        metadata: null,
        error: null,
        created_at: now,
        updated_at: now,
      });
      return id;
    } catch (err) {
      // A write stream destroyed before its file was open still creates the file when the open completes.
      if (!out.closed) await new Promise<void>((resolve) => out.once('close', () => resolve()));
      fs.rmSync(temp, { force: true });
      fs.rmSync(target, { force: true });
      const diskCode = storageFullCode(err);
      if (diskCode) {
        this.log.error({ code: diskCode, filename: name, folder: this.storage.root }, 'upload refused: local storage full');
        throw new DomainError(507, 'STORAGE_FULL', `Local storage is full (${diskCode}); free space in the data folder and try again`, { code: diskCode });
      }
      throw err;
    }
  }

  /**
   * Fetches the file of a printer's current print (or `filePath`): finds it in the catalog (refreshing once
   * when it is not there), downloads it unless a local copy exists, and says what happened.
   */
  async fetchCurrentJobFile(printerId: string, filePath?: string) {
    if (!(await this.store.printers.exists(printerId))) throw notFound('PRINTER_NOT_FOUND', `Printer "${printerId}" not found`, { printer_id: printerId });
    const state = this.fleet.stateOf(printerId);
    const job = state && ['preparing', 'printing', 'paused'].includes(state.state) ? state.job : null;
    const answer = (status: string, f: FileRecord | null, message: string) => ({
      status: status as 'success',
      file_id: f?.id ?? null,
      filename: f?.filename ?? null,
      has_thumbnail: f?.metadata?.has_thumbnail === true,
      message,
    });
    if (!filePath && !job) return answer('not_printing', null, `Printer "${printerId}" is not printing`);
    const wanted = filePath ?? printFileName(job!);
    const find = async () => printedFile(await this.store.files.forPrinter(printerId), filePath ? { path: filePath, name: filePath } : { path: job!.file, name: wanted });
    let file = await find();
    if (!file) {
      await this.refresh(printerId);
      file = await find();
    }
    if (!file) return answer('no_file', null, `Printer "${printerId}" holds no file matching "${wanted}"`);
    if (file.local_path) {
      return answer(file.metadata?.has_thumbnail === true ? 'exists_with_thumbnail' : 'exists_no_thumbnail', file, 'A local copy exists already');
    }
    await this.downloads.start(file);
    const task = await this.downloads.wait(file.id);
    if (task?.status !== 'completed') {
      throw new DomainError(502, 'DOWNLOAD_FAILED', `Download of ${file.filename} failed: ${task?.error ?? 'unknown error'}`, {
        file_id: file.id,
        printer_id: printerId,
        reason: task?.reason ?? null,
      });
    }
    return answer('success', (await this.store.files.get(file.id)) ?? file, 'Downloaded');
  }

  /** The local copy for serving; marks it accessed. */
  async localCopy(id: string): Promise<FileRecord & { local_path: string }> {
    const f = await this.require(id);
    if (!f.local_path || !this.storage.owns(f.local_path) || !fs.existsSync(f.local_path)) {
      throw new DomainError(409, 'NO_LOCAL_COPY', `File "${id}" has no local copy; download it first`, { file_id: id, status: f.status });
    }
    await this.store.files.update(id, { last_accessed: nowIso() });
    return f as FileRecord & { local_path: string };
  }
}
