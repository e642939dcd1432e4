/**
 * The client-side automatic download component (spec, "Behavior rules:
 * automatic file download"): a queue of download tasks ordered Urgent > High
 * > Normal > Low (first come first served within a priority), run at most
 * `maxConcurrentDownloads` at a time; after each download a thumbnail task
 * ordered by file type (3MF/BGCode 1 extract, STL/OBJ 2 generate, G-code 3
 * analyze), at most `maxConcurrentThumbnails` at a time.
 *
 * Task life cycle: queued -> processing -> completed | failed. A failed
 * attempt that may work later (network, timeout, 429, 5xx) is queued again
 * after retryDelay, 2 x retryDelay, 4 x retryDelay... up to `retryAttempts`
 * retries; then the task fails for good (event `failed`). A thumbnail that
 * cannot be made falls back to a placeholder (event `placeholder`).
 * Finished tasks stay in the task log for `logRetentionDays`.
 *
 * The queue only schedules; the work is done by `QueueWorkers` (restWorkers()
 * calls the service's REST API).
 *
 * Events: task (task, change), completed (task), failed (task, error), placeholder (task), idle.
 */
import { EventEmitter } from 'node:events';
import { randomUUID } from 'node:crypto';
import { PrintfarmError } from './errors';
import {
  DOWNLOAD_QUEUE_DEFAULTS,
  PRIORITIES,
  SOURCE_PRIORITY,
  thumbnailPlan,
  type DownloadOutcome,
  type DownloadQueueOptions,
  type DownloadRequest,
  type Priority,
  type QueueTask,
  type QueueWorkers,
  type TaskChange,
  type TaskKind,
  type TaskStatus,
  type ThumbnailOutcome,
} from './download-tasks';

export * from './download-tasks';
export { autoDownload, restWorkers } from './download-workers';

const rank = (p: Priority) => PRIORITIES.indexOf(p);
const isRetryable = (err: unknown) => (err as { retryable?: unknown })?.retryable !== false;

function errorInfo(err: unknown): NonNullable<QueueTask['error']> {
  if (err instanceof PrintfarmError) return { code: err.code, message: err.message, status: err.status };
  const e = err as { code?: unknown; message?: unknown };
  return { code: typeof e?.code === 'string' ? e.code : 'ERROR', message: typeof e?.message === 'string' ? e.message : String(err) };
}

export class DownloadQueue extends EventEmitter {
  readonly options: DownloadQueueOptions;
  private readonly tasksById = new Map<string, QueueTask>();
  private readonly running = new Map<string, { done: Promise<void>; abort: AbortController }>();
  private readonly retryTimers = new Set<NodeJS.Timeout>();
  private pumpScheduled = false;
  private closed = false;

  constructor(
    private readonly workers: QueueWorkers,
    options: Partial<DownloadQueueOptions> = {},
  ) {
    super();
    const o = { ...DOWNLOAD_QUEUE_DEFAULTS };
    for (const [k, v] of Object.entries(options)) if (v !== undefined) (o as Record<string, unknown>)[k] = v;
    if (!(o.maxConcurrentDownloads >= 1) || !(o.maxConcurrentThumbnails >= 1)) throw new RangeError('concurrency limits must be at least 1');
    if (!(o.retryAttempts >= 0) || !(o.retryDelay >= 0) || !(o.logRetentionDays >= 0)) throw new RangeError('retryAttempts, retryDelay and logRetentionDays must not be negative');
    this.options = o;
  }

  /**
   * Queues a download. A request for a printer file that is already queued or
   * being processed returns that task (at the higher of the two priorities).
   */
  add(request: DownloadRequest): QueueTask {
    if (this.closed) throw new Error('the download queue is closed');
    if (!request.file_id && !request.printer_id) throw new TypeError('a download needs printer_id (and optionally file_path) or file_id');
    const source = request.source ?? 'manual';
    const priority = request.priority ?? SOURCE_PRIORITY[source];
    if (!PRIORITIES.includes(priority)) throw new TypeError(`priority must be one of ${PRIORITIES.join(', ')}`);
    const same = [...this.tasksById.values()].find(
      (t) =>
        t.kind === 'download' &&
        (t.status === 'queued' || t.status === 'processing') &&
        (request.file_id ? t.file_id === request.file_id : t.printer_id === request.printer_id && t.file_path === (request.file_path ?? null)),
    );
    if (same) {
      if (same.status === 'queued' && rank(priority) < rank(same.priority)) {
        same.priority = priority;
        this.schedulePump();
      }
      return same;
    }
    return this.enqueue({
      kind: 'download',
      priority,
      thumbnail_priority: null,
      thumbnail_method: null,
      source,
      printer_id: request.printer_id ?? null,
      file_id: request.file_id ?? null,
      file_path: request.file_path ?? null,
      filename: null,
      job_name: request.job_name ?? null,
      parent_id: null,
    });
  }

  /** Queues the thumbnail task of a downloaded file; null when its type has none. */
  addThumbnail(file: { file_id: string; filename: string; printer_id?: string | null; parent_id?: string | null; priority?: Priority }): QueueTask | null {
    const plan = thumbnailPlan(file.filename);
    if (!plan || this.closed) return null;
    return this.enqueue({
      kind: 'thumbnail',
      priority: file.priority ?? 'normal',
      thumbnail_priority: plan.priority,
      thumbnail_method: plan.method,
      source: 'background',
      printer_id: file.printer_id ?? null,
      file_id: file.file_id,
      file_path: null,
      filename: file.filename,
      job_name: null,
      parent_id: file.parent_id ?? null,
    });
  }

  private enqueue(fields: Omit<QueueTask, 'id' | 'status' | 'attempts' | 'max_attempts' | 'created_at' | 'started_at' | 'finished_at' | 'next_attempt_at' | 'error' | 'result'>): QueueTask {
    const task: QueueTask = {
      id: randomUUID(),
      status: 'queued',
      attempts: 0,
      max_attempts: this.options.retryAttempts + 1,
      created_at: new Date().toISOString(),
      started_at: null,
      finished_at: null,
      next_attempt_at: null,
      error: null,
      result: null,
      ...fields,
    };
    this.tasksById.set(task.id, task);
    this.prune();
    this.changed(task, 'queued');
    this.schedulePump();
    return task;
  }

  /** The task log: every task still kept, oldest first (copies). */
  tasks(filter: { status?: TaskStatus; kind?: TaskKind } = {}): QueueTask[] {
    return [...this.tasksById.values()].filter((t) => (!filter.status || t.status === filter.status) && (!filter.kind || t.kind === filter.kind)).map((t) => structuredClone(t));
  }

  get(id: string): QueueTask | undefined {
    const t = this.tasksById.get(id);
    return t && structuredClone(t);
  }

  counts(): Record<TaskStatus, number> & { waiting_retry: number } {
    const c = { queued: 0, processing: 0, completed: 0, failed: 0, waiting_retry: 0 };
    for (const t of this.tasksById.values()) {
      c[t.status]++;
      if (t.status === 'queued' && t.next_attempt_at) c.waiting_retry++;
    }
    return c;
  }

  /** Drops finished tasks older than logRetentionDays (and the oldest beyond maxLogEntries); returns how many. */
  prune(now = Date.now()): number {
    const cutoff = now - this.options.logRetentionDays * 86_400_000;
    let removed = 0;
    const finished: QueueTask[] = [];
    for (const t of this.tasksById.values()) {
      if (!t.finished_at) continue;
      if (Date.parse(t.finished_at) < cutoff) {
        this.tasksById.delete(t.id);
        removed++;
      } else finished.push(t);
    }
    for (let i = 0; i < finished.length - this.options.maxLogEntries; i++) {
      this.tasksById.delete(finished[i].id);
      removed++;
    }
    return removed;
  }

  private schedulePump(): void {
    if (this.pumpScheduled || this.closed) return;
    this.pumpScheduled = true;
    // Tasks added in one go are ordered by priority before any of them starts.
    queueMicrotask(() => {
      this.pumpScheduled = false;
      this.pump();
    });
  }

  private pump(): void {
    if (this.closed) return;
    for (const kind of ['download', 'thumbnail'] as const) {
      const limit = kind === 'download' ? this.options.maxConcurrentDownloads : this.options.maxConcurrentThumbnails;
      let busy = [...this.tasksById.values()].filter((t) => t.kind === kind && t.status === 'processing').length;
      if (busy >= limit) continue;
      const ready = [...this.tasksById.values()]
        .filter((t) => t.kind === kind && t.status === 'queued' && !t.next_attempt_at)
        .sort((a, b) => (a.thumbnail_priority ?? 0) - (b.thumbnail_priority ?? 0) || rank(a.priority) - rank(b.priority));
      for (const task of ready) {
        if (busy >= limit) break;
        busy++;
        this.run(task);
      }
    }
    if (this.running.size === 0 && !this.counts().queued) this.emit('idle');
  }

  private run(task: QueueTask): void {
    task.status = 'processing';
    task.attempts++;
    task.started_at = new Date().toISOString();
    this.changed(task, 'processing');
    const abort = new AbortController();
    const work = task.kind === 'download' ? this.workers.download(task, abort.signal) : this.workers.thumbnail(task, abort.signal);
    const done = Promise.resolve(work)
      .then(
        (result) => this.succeeded(task, result),
        (err) => this.attemptFailed(task, err),
      )
      .catch((err) => {
        if (this.listenerCount('error')) this.emit('error', err);
      })
      .finally(() => {
        this.running.delete(task.id);
        this.schedulePump();
      });
    this.running.set(task.id, { done, abort });
  }

  private succeeded(task: QueueTask, result: DownloadOutcome | ThumbnailOutcome): void {
    if (this.closed) return;
    task.status = 'completed';
    task.result = result;
    task.error = null;
    task.finished_at = new Date().toISOString();
    this.changed(task, 'completed');
    this.emit('completed', structuredClone(task));
    if (task.kind === 'download' && this.options.thumbnails) {
      const r = result as DownloadOutcome;
      if (r.file_id && r.filename && !r.has_thumbnail) this.addThumbnail({ file_id: r.file_id, filename: r.filename, printer_id: task.printer_id, parent_id: task.id });
    }
  }

  private attemptFailed(task: QueueTask, err: unknown): void {
    if (this.closed) return;
    task.error = errorInfo(err);
    if (isRetryable(err) && task.attempts < task.max_attempts) {
      const delay = this.options.retryDelay * 2 ** (task.attempts - 1);
      task.status = 'queued';
      task.next_attempt_at = new Date(Date.now() + delay).toISOString();
      this.changed(task, 'retry');
      const timer = setTimeout(() => {
        this.retryTimers.delete(timer);
        task.next_attempt_at = null;
        this.schedulePump();
      }, delay);
      this.retryTimers.add(timer);
      return;
    }
    task.status = 'failed';
    task.finished_at = new Date().toISOString();
    if (task.kind === 'thumbnail') {
      task.result = { method: 'placeholder', thumbnail_url: null, message: `No thumbnail: ${task.error.message}` };
      this.changed(task, 'failed');
      this.emit('placeholder', structuredClone(task));
      return;
    }
    this.changed(task, 'failed');
    this.emit('failed', structuredClone(task), err);
  }

  private changed(task: QueueTask, change: TaskChange): void {
    this.emit('task', structuredClone(task), change);
  }

  /** Stops: no new work, retry timers cleared, running calls aborted and awaited. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const t of this.retryTimers) clearTimeout(t);
    this.retryTimers.clear();
    for (const { abort } of this.running.values()) abort.abort();
    await Promise.all([...this.running.values()].map((r) => r.done));
  }
}
