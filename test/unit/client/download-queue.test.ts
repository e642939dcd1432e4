/**
 * The client-side download queue (spec, "automatic file download"):
 * priorities, concurrency caps, retries with exponential backoff (fake
 * timers that keep setImmediate real), thumbnails by file type with a
 * placeholder on failure, the task log and its retention, and automatic
 * detection of prints that start.
 */
import { EventEmitter } from 'node:events';
import {
  autoDownload,
  DOWNLOAD_QUEUE_DEFAULTS,
  DownloadQueue,
  PermanentError,
  PrintfarmError,
  thumbnailPlan,
  type DownloadOutcome,
  type FarmMonitor,
  type PrinterSnapshot,
  type QueueTask,
  type QueueWorkers,
  type ThumbnailOutcome,
} from '../../../service/client';

/** Workers whose calls the test finishes by hand. */
function manualWorkers() {
  const calls: { task: QueueTask; at: number; resolve: (v: unknown) => void; reject: (e: unknown) => void; signal: AbortSignal }[] = [];
  const call = (task: QueueTask, signal: AbortSignal) =>
    new Promise<never>((resolve, reject) => {
      calls.push({ task: structuredClone(task), at: Date.now(), resolve: resolve as (v: unknown) => void, reject, signal });
      signal.addEventListener('abort', () => reject(new PrintfarmError(0, 'ABORTED', 'aborted')));
    });
  const workers: QueueWorkers = { download: call, thumbnail: call };
  return { workers, calls };
}

const ok = (filename: string, has_thumbnail = false): DownloadOutcome => ({ status: 'success', file_id: `f-${filename}`, filename, has_thumbnail, message: 'Downloaded' });
const tick = () => new Promise((r) => setImmediate(r));
const offline = () => new PrintfarmError(502, 'PRINTER_OFFLINE', 'printer offline');

describe('download queue', () => {
  afterEach(() => {
    jest.useRealTimers();
  });

  test('the defaults are the spec table', () => {
    expect(DOWNLOAD_QUEUE_DEFAULTS).toMatchObject({ maxConcurrentDownloads: 2, maxConcurrentThumbnails: 1, retryAttempts: 3, retryDelay: 5000, autoDetectionEnabled: true, logRetentionDays: 30 });
    expect(new DownloadQueue(manualWorkers().workers).options).toMatchObject(DOWNLOAD_QUEUE_DEFAULTS);
    expect(() => new DownloadQueue(manualWorkers().workers, { maxConcurrentDownloads: 0 })).toThrow(RangeError);
  });

  test('Urgent > High > Normal > Low, first come first served within a priority; sources map to priorities', async () => {
    const { workers, calls } = manualWorkers();
    const q = new DownloadQueue(workers, { maxConcurrentDownloads: 1, thumbnails: false });
    q.add({ printer_id: 'busy', source: 'manual' });
    await tick();
    expect(calls.map((c) => c.task.printer_id)).toEqual(['busy']);
    q.add({ printer_id: 'low', source: 'background' });
    q.add({ printer_id: 'normal-1' });
    q.add({ printer_id: 'high', source: 'auto' });
    q.add({ printer_id: 'normal-2', priority: 'normal' });
    q.add({ printer_id: 'urgent', source: 'critical' });
    q.add({ printer_id: 'low-but-raised', priority: 'low' });
    q.add({ printer_id: 'low-but-raised', priority: 'high' }); // the same file again: one task, the higher priority
    for (let i = 0; i < 7; i++) {
      calls[calls.length - 1].resolve(ok('x.gcode'));
      await tick();
    }
    expect(calls.map((c) => [c.task.printer_id, c.task.priority])).toEqual([
      ['busy', 'normal'],
      ['urgent', 'urgent'],
      ['high', 'high'],
      ['low-but-raised', 'high'],
      ['normal-1', 'normal'],
      ['normal-2', 'normal'],
      ['low', 'low'],
    ]);
    expect(q.counts()).toMatchObject({ queued: 0, processing: 0, completed: 7 });
  });

  test('at most maxConcurrentDownloads downloads and maxConcurrentThumbnails thumbnails run at once', async () => {
    const { workers, calls } = manualWorkers();
    const q = new DownloadQueue(workers);
    let peak = { download: 0, thumbnail: 0 };
    q.on('task', () => {
      const running = q.tasks({ status: 'processing' });
      peak = {
        download: Math.max(peak.download, running.filter((t) => t.kind === 'download').length),
        thumbnail: Math.max(peak.thumbnail, running.filter((t) => t.kind === 'thumbnail').length),
      };
    });
    const names = ['a.3mf', 'b.stl', 'c.gcode', 'd.bgcode', 'e.obj'];
    names.forEach((n) => q.add({ printer_id: 'p', file_path: `/${n}` }));
    await tick();
    expect(q.counts()).toMatchObject({ processing: 2, queued: 3 });
    while (q.counts().queued || q.counts().processing) {
      const open = calls.filter((c) => !q.get(c.task.id)?.finished_at && q.get(c.task.id)?.status === 'processing');
      const c = open[0];
      c.resolve(c.task.kind === 'download' ? ok(c.task.file_path!.slice(1)) : ({ method: 'extracted', thumbnail_url: '/t.png', message: '' } satisfies ThumbnailOutcome));
      await tick();
    }
    expect(peak).toEqual({ download: 2, thumbnail: 1 });
    expect(q.tasks({ kind: 'thumbnail' })).toHaveLength(5);
  });

  test('thumbnails run by file type: 3MF and BGCode (extract) before STL/OBJ (generate) before G-code (analyze)', async () => {
    expect(['x.gcode.3mf', 'x.bgcode', 'x.STL', 'x.obj', 'x.gcode', 'x.txt'].map((n) => thumbnailPlan(n))).toEqual([
      { priority: 1, method: 'extract' },
      { priority: 1, method: 'extract' },
      { priority: 2, method: 'generate' },
      { priority: 2, method: 'generate' },
      { priority: 3, method: 'analyze' },
      null,
    ]);
    const { workers, calls } = manualWorkers();
    const q = new DownloadQueue(workers);
    q.addThumbnail({ file_id: 'blocker', filename: 'blocker.gcode' });
    await tick();
    for (const name of ['c.gcode', 'b.stl', 'a.3mf', 'd.bgcode', 'e.obj']) q.addThumbnail({ file_id: name, filename: name });
    expect(q.addThumbnail({ file_id: 'n', filename: 'notes.txt' })).toBeNull();
    for (let i = 0; i < 6; i++) {
      calls[calls.length - 1].resolve({ method: 'extracted', thumbnail_url: null, message: '' });
      await tick();
    }
    expect(calls.map((c) => [c.task.file_id, c.task.thumbnail_method])).toEqual([
      ['blocker', 'analyze'],
      ['a.3mf', 'extract'],
      ['d.bgcode', 'extract'],
      ['b.stl', 'generate'],
      ['e.obj', 'generate'],
      ['c.gcode', 'analyze'],
    ]);
  });

  test('a failed attempt is retried after 5 s, 10 s and 20 s, then the task fails for good', async () => {
    jest.useFakeTimers({ doNotFake: ['setImmediate', 'nextTick', 'queueMicrotask'] });
    const start = Date.now();
    const { workers, calls } = manualWorkers();
    const q = new DownloadQueue(workers, { thumbnails: false });
    const failed = jest.fn();
    const changes: string[] = [];
    q.on('failed', failed);
    q.on('task', (_t, change) => changes.push(change));
    const task = q.add({ printer_id: 'p', file_path: '/a.3mf', source: 'auto' });
    await jest.advanceTimersByTimeAsync(0);
    expect(calls).toHaveLength(1);

    for (const wait of [5000, 10_000, 20_000]) {
      calls[calls.length - 1].reject(offline());
      await jest.advanceTimersByTimeAsync(0);
      expect(q.get(task.id)).toMatchObject({ status: 'queued', error: { code: 'PRINTER_OFFLINE', status: 502 } });
      const before = calls.length;
      await jest.advanceTimersByTimeAsync(wait - 1);
      expect(calls.length).toBe(before);
      await jest.advanceTimersByTimeAsync(1);
      expect(calls.length).toBe(before + 1);
    }
    expect(calls.map((c) => c.at - start)).toEqual([0, 5000, 15_000, 35_000]);
    calls[3].reject(offline());
    await jest.advanceTimersByTimeAsync(0);
    expect(q.get(task.id)).toMatchObject({ status: 'failed', attempts: 4, max_attempts: 4, error: { code: 'PRINTER_OFFLINE' } });
    expect(failed).toHaveBeenCalledTimes(1);
    expect(failed.mock.calls[0][0]).toMatchObject({ id: task.id, status: 'failed' });
    expect(changes).toEqual(['queued', 'processing', 'retry', 'processing', 'retry', 'processing', 'retry', 'processing', 'failed']);
    // No further attempt is ever made.
    await jest.advanceTimersByTimeAsync(600_000);
    expect(calls).toHaveLength(4);
  });

  test('a retry succeeds; a failure no retry can fix (4xx, not printing) fails at once', async () => {
    jest.useFakeTimers({ doNotFake: ['setImmediate', 'nextTick', 'queueMicrotask'] });
    const { workers, calls } = manualWorkers();
    const q = new DownloadQueue(workers, { retryDelay: 1000, thumbnails: false });
    const a = q.add({ printer_id: 'a' });
    await jest.advanceTimersByTimeAsync(0);
    calls[0].reject(new PrintfarmError(0, 'NETWORK_ERROR', 'cannot reach'));
    await jest.advanceTimersByTimeAsync(1000);
    calls[1].resolve(ok('a.3mf'));
    await jest.advanceTimersByTimeAsync(0);
    expect(q.get(a.id)).toMatchObject({ status: 'completed', attempts: 2, error: null, result: { status: 'success' } });

    const b = q.add({ printer_id: 'b' });
    const c = q.add({ printer_id: 'c' });
    await jest.advanceTimersByTimeAsync(0);
    calls[2].reject(new PermanentError('NOT_PRINTING', 'Printer "b" is not printing'));
    calls[3].reject(new PrintfarmError(404, 'PRINTER_NOT_FOUND', 'Printer "c" not found'));
    await jest.advanceTimersByTimeAsync(0);
    expect(q.get(b.id)).toMatchObject({ status: 'failed', attempts: 1, error: { code: 'NOT_PRINTING' } });
    expect(q.get(c.id)).toMatchObject({ status: 'failed', attempts: 1, error: { code: 'PRINTER_NOT_FOUND', status: 404 } });
  });

  test('after a download its thumbnail task is queued (not when the file has one); a thumbnail that fails becomes a placeholder', async () => {
    const { workers, calls } = manualWorkers();
    const q = new DownloadQueue(workers, { retryAttempts: 0 });
    const placeholder = jest.fn();
    const failed = jest.fn();
    q.on('placeholder', placeholder);
    q.on('failed', failed);
    const d = q.add({ printer_id: 'p' });
    const e = q.add({ printer_id: 'q' });
    await tick();
    calls[0].resolve(ok('part.stl'));
    calls[1].resolve(ok('plate.3mf', true));
    await tick();
    const thumbs = q.tasks({ kind: 'thumbnail' });
    expect(thumbs).toEqual([expect.objectContaining({ parent_id: d.id, file_id: 'f-part.stl', thumbnail_method: 'generate', thumbnail_priority: 2, status: 'processing' })]);
    expect(q.tasks({ kind: 'thumbnail' }).some((t) => t.parent_id === e.id)).toBe(false);
    calls[2].reject(new PrintfarmError(404, 'NOT_FOUND', 'No route POST /api/v1/files/f-part.stl/thumbnail/generate'));
    await tick();
    expect(q.get(thumbs[0].id)).toMatchObject({ status: 'failed', result: { method: 'placeholder', thumbnail_url: null } });
    expect(placeholder).toHaveBeenCalledTimes(1);
    expect(failed).not.toHaveBeenCalled();
  });

  test('the task log keeps finished tasks for logRetentionDays', async () => {
    jest.useFakeTimers({ doNotFake: ['setImmediate', 'nextTick', 'queueMicrotask'], now: new Date('2026-03-01T12:00:00Z') });
    const { workers, calls } = manualWorkers();
    const q = new DownloadQueue(workers, { logRetentionDays: 30, thumbnails: false });
    const old = q.add({ printer_id: 'old' });
    await jest.advanceTimersByTimeAsync(0);
    calls[0].resolve(ok('old.gcode'));
    await jest.advanceTimersByTimeAsync(0);
    jest.setSystemTime(new Date('2026-03-31T11:59:59Z'));
    expect(q.prune()).toBe(0);
    jest.setSystemTime(new Date('2026-03-31T12:00:01Z'));
    const fresh = q.add({ printer_id: 'fresh' }); // adding prunes as well
    expect(q.get(old.id)).toBeUndefined();
    expect(q.tasks().map((t) => t.id)).toEqual([fresh.id]);
  });

  test('close() aborts running calls, clears retry timers and refuses new tasks', async () => {
    jest.useFakeTimers({ doNotFake: ['setImmediate', 'nextTick', 'queueMicrotask'] });
    const { workers, calls } = manualWorkers();
    const q = new DownloadQueue(workers);
    q.add({ printer_id: 'a' });
    q.add({ printer_id: 'b' });
    await jest.advanceTimersByTimeAsync(0);
    calls[0].reject(offline());
    await jest.advanceTimersByTimeAsync(0);
    await q.close();
    expect(calls[1].signal.aborted).toBe(true);
    expect(jest.getTimerCount()).toBe(0);
    expect(() => q.add({ printer_id: 'c' })).toThrow(/closed/);
  });

  test('automatic detection queues the current file as High when a printer starts printing (and can be switched off)', async () => {
    const { workers, calls } = manualWorkers();
    const monitor = new EventEmitter() as unknown as FarmMonitor;
    const snapshot = (id: string) => ({ id, status: 'printing', current_job: { name: 'Cube', progress: 1, estimated_remaining: 60 } }) as PrinterSnapshot;
    const q = new DownloadQueue(workers);
    const stop = autoDownload(monitor, q, (p) => p.id !== 'ignored');
    monitor.emit('job-start', snapshot('x1c'), { status: 'online' });
    monitor.emit('job-start', snapshot('ignored'), { status: 'online' });
    await tick();
    expect(calls.map((c) => [c.task.printer_id, c.task.priority, c.task.source, c.task.job_name])).toEqual([['x1c', 'high', 'auto', 'Cube']]);
    stop();
    monitor.emit('job-start', snapshot('mk4'), { status: 'offline' });
    const off = new DownloadQueue(workers, { autoDetectionEnabled: false });
    autoDownload(monitor, off);
    monitor.emit('job-start', snapshot('mk4'), { status: 'offline' });
    await tick();
    expect(calls).toHaveLength(1);
  });
});
