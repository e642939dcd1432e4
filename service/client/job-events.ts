/**
 * Job events for automations, from the `/ws` frames job_auto_created and
 * job_update: auto-created, started, progress (throttled per job), paused,
 * resumed, completed, failed, cancelled. Each job ends once: a cancel that
 * is reported twice (by the user's request and by the printer) is one event.
 */
import { EventEmitter } from 'node:events';
import type { Frame, JobAutoCreatedData, JobUpdateData } from './types';

export const JOB_EVENTS = ['auto-created', 'started', 'progress', 'paused', 'resumed', 'completed', 'failed', 'cancelled'] as const;
export type JobEventType = (typeof JOB_EVENTS)[number];
const TERMINAL = new Set(['completed', 'failed', 'cancelled']);
/** Unfinished jobs remembered (a real farm runs one per printer): a server inventing jobs must not grow the memory. */
export const MAX_TRACKED_JOBS = 10_000;

export interface JobEvent {
  event: JobEventType;
  job_id: number;
  printer_id: string;
  job_name: string | null;
  status: string;
  progress: number;
  timestamp: string;
  /** The frame's data as the service sent it. */
  data: Record<string, unknown>;
}

export interface JobEventOptions {
  /** At most one progress event per job in this many ms (10 s); the latest one is sent when the window ends. */
  progressThrottleMs?: number;
}

interface JobTrack {
  status: string | null;
  name: string | null;
  lastProgressAt: number;
  pending: JobEvent | null;
  timer: NodeJS.Timeout | null;
}

/** Turns frames (from FarmMonitor's `frame` event) into `event` (JobEvent) events. */
export class JobEventStream extends EventEmitter {
  private readonly jobs = new Map<number, JobTrack>();
  private readonly ended = new Set<number>();
  private readonly throttleMs: number;
  private readonly onFrame = (frame: Frame) => this.accept(frame);

  constructor(
    private readonly source: EventEmitter,
    options: JobEventOptions = {},
  ) {
    super();
    this.throttleMs = options.progressThrottleMs ?? 10_000;
    source.on('frame', this.onFrame);
  }

  accept(frame: Frame): void {
    const at = frame.timestamp ?? new Date().toISOString();
    if (frame.type === 'job_auto_created') {
      const d = frame.data as unknown as JobAutoCreatedData;
      const id = Number(d.id);
      if (!Number.isInteger(id)) return;
      this.track(id).name = d.job_name ?? null;
      this.publish({ event: 'auto-created', job_id: id, printer_id: d.printer_id, job_name: d.job_name ?? null, status: d.status, progress: 0, timestamp: at, data: d });
      return;
    }
    if (frame.type !== 'job_update') return;
    const d = frame.data as unknown as JobUpdateData;
    const id = Number(d.job_id ?? d.id);
    if (!Number.isInteger(id) || this.ended.has(id)) return;
    const job = this.track(id);
    if (typeof d.job_name === 'string') job.name = d.job_name;
    const event = this.classify(d, job);
    if (d.status) job.status = d.status;
    if (!event) return;
    const e: JobEvent = { event, job_id: id, printer_id: d.printer_id, job_name: job.name, status: d.status, progress: d.progress ?? 0, timestamp: at, data: d };
    if (event === 'progress') return this.throttle(job, e);
    if (TERMINAL.has(event)) this.finish(id);
    this.publish(e);
  }

  private classify(d: JobUpdateData, job: JobTrack): JobEventType | null {
    switch (d.change) {
      case 'progress':
        return 'progress';
      case 'cancelled':
        return 'cancelled';
      case 'created':
        return d.status === 'printing' ? 'started' : null;
      case 'status':
        if (d.status === 'printing') return job.status === 'paused' ? 'resumed' : 'started';
        if (d.status === 'paused') return 'paused';
        if (TERMINAL.has(d.status)) return d.status as JobEventType;
        return null;
      default:
        return null;
    }
  }

  private track(id: number): JobTrack {
    let job = this.jobs.get(id);
    if (!job) {
      // The longest tracked goes (with its pending progress event): frames of invented jobs must not pile up.
      if (this.jobs.size >= MAX_TRACKED_JOBS) {
        const [oldest, dropped] = this.jobs.entries().next().value!;
        if (dropped.timer) clearTimeout(dropped.timer);
        this.jobs.delete(oldest);
      }
      job = { status: null, name: null, lastProgressAt: -Infinity, pending: null, timer: null };
      this.jobs.set(id, job);
    }
    return job;
  }

  private throttle(job: JobTrack, e: JobEvent): void {
    const now = Date.now();
    const wait = job.lastProgressAt + this.throttleMs - now;
    if (wait <= 0) {
      job.lastProgressAt = now;
      this.publish(e);
      return;
    }
    job.pending = e;
    job.timer ??= setTimeout(() => {
      job.timer = null;
      const pending = job.pending;
      job.pending = null;
      if (!pending) return;
      job.lastProgressAt = Date.now();
      this.publish(pending);
    }, wait);
  }

  private finish(id: number): void {
    const job = this.jobs.get(id);
    if (job?.timer) clearTimeout(job.timer);
    this.jobs.delete(id);
    this.ended.add(id);
    // Remember a bounded number of ended jobs (enough to drop a late duplicate).
    if (this.ended.size > 1000) this.ended.delete(this.ended.values().next().value!);
  }

  private publish(e: JobEvent): void {
    this.emit('event', e);
  }

  close(): void {
    this.source.off('frame', this.onFrame);
    for (const job of this.jobs.values()) if (job.timer) clearTimeout(job.timer);
    this.jobs.clear();
  }
}
