/**
 * The vocabulary of the automatic download queue: priorities and sources, a task and its life
 * cycle, the options and their defaults, the workers' contract, and which thumbnail method
 * each file type gets (spec, "Behavior rules: automatic file download").
 */
import type { CurrentJobDownloadView, ThumbnailMethod } from './types';

export type Priority = 'urgent' | 'high' | 'normal' | 'low';
export const PRIORITIES: readonly Priority[] = ['urgent', 'high', 'normal', 'low'];
/** Where a download came from, and the priority it gets by default (spec). */
export type TaskSource = 'critical' | 'auto' | 'manual' | 'background';
export const SOURCE_PRIORITY: Readonly<Record<TaskSource, Priority>> = { critical: 'urgent', auto: 'high', manual: 'normal', background: 'low' };

export type TaskStatus = 'queued' | 'processing' | 'completed' | 'failed';
export type TaskKind = 'download' | 'thumbnail';
export type TaskChange = 'queued' | 'processing' | 'retry' | 'completed' | 'failed';

export interface DownloadQueueOptions {
  maxConcurrentDownloads: number;
  maxConcurrentThumbnails: number;
  /** Retries after the first attempt. */
  retryAttempts: number;
  /** First retry delay in ms; doubles with every retry. */
  retryDelay: number;
  /** Queue the current print's file when a printer starts printing. */
  autoDetectionEnabled: boolean;
  logRetentionDays: number;
  /** Queue a thumbnail task after each download. */
  thumbnails: boolean;
  /** The task log keeps at most this many finished tasks. */
  maxLogEntries: number;
}

export const DOWNLOAD_QUEUE_DEFAULTS: Readonly<DownloadQueueOptions> = {
  maxConcurrentDownloads: 2,
  maxConcurrentThumbnails: 1,
  retryAttempts: 3,
  retryDelay: 5000,
  autoDetectionEnabled: true,
  logRetentionDays: 30,
  thumbnails: true,
  maxLogEntries: 5000,
};

export interface DownloadRequest {
  printer_id?: string;
  /** The file on the printer; default: the file of its current print. */
  file_path?: string;
  /** A catalog file (instead of printer_id + file_path). */
  file_id?: string;
  priority?: Priority;
  source?: TaskSource;
  job_name?: string;
}

export interface ThumbnailOutcome {
  method: 'extracted' | 'generated' | 'analyzed' | 'placeholder' | string;
  thumbnail_url: string | null;
  message: string;
}

export type DownloadOutcome = CurrentJobDownloadView;

export interface QueueTask {
  id: string;
  kind: TaskKind;
  status: TaskStatus;
  priority: Priority;
  /** Thumbnail tasks: 1 (3MF, BGCode), 2 (STL, OBJ), 3 (G-code). */
  thumbnail_priority: 1 | 2 | 3 | null;
  thumbnail_method: ThumbnailMethod | null;
  source: TaskSource;
  printer_id: string | null;
  file_id: string | null;
  file_path: string | null;
  filename: string | null;
  job_name: string | null;
  /** The download task a thumbnail task follows. */
  parent_id: string | null;
  attempts: number;
  max_attempts: number;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  next_attempt_at: string | null;
  error: { code: string; message: string; status?: number } | null;
  result: DownloadOutcome | ThumbnailOutcome | null;
}

export interface QueueWorkers {
  download(task: Readonly<QueueTask>, signal: AbortSignal): Promise<DownloadOutcome>;
  thumbnail(task: Readonly<QueueTask>, signal: AbortSignal): Promise<ThumbnailOutcome>;
}

/** A failure that no retry will fix (e.g. the printer is not printing any more). */
export class PermanentError extends Error {
  readonly retryable = false;
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** Thumbnail processing by file type (spec): priority and method. */
export function thumbnailPlan(filename: string): { priority: 1 | 2 | 3; method: ThumbnailMethod } | null {
  const name = filename.toLowerCase();
  if (name.endsWith('.3mf') || name.endsWith('.bgcode') || name.endsWith('.bgc')) return { priority: 1, method: 'extract' };
  if (name.endsWith('.stl') || name.endsWith('.obj')) return { priority: 2, method: 'generate' };
  if (name.endsWith('.gcode') || name.endsWith('.gco') || name.endsWith('.g')) return { priority: 3, method: 'analyze' };
  return null;
}
