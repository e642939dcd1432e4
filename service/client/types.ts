/**
 * The shapes the client sends and receives, taken from the service's own zod
 * schemas (type-only imports: nothing of zod is loaded at run time).
 */
import type { z } from 'zod';
import type { CleanupCandidates, CleanupResult, CurrentJobDownloadResult, DownloadStarted, DownloadStatus, FileDeleted, FileDetail, FileItem, FileList, FileListQuery, RefreshResult, UploadResult } from '../schemas/files';
import type { JobCancelled, JobDeleted, JobList, JobListQuery, JobUpdated, CreateJobBody, UpdateJobBody } from '../schemas/jobs';
import type {
  ConnectionTestResult,
  CreatePrinterBody,
  PrinterCommandResult,
  PrinterCreated,
  PrinterDeleted,
  PrinterList,
  PrinterUpdated,
  PrinterView,
  UpdatePrinterBody,
} from '../schemas/printers';
import type { GcodeOptimizationSettings, GcodeOptimizationUpdated, SettingsUpdated } from '../schemas/settings';
import type { CreateQueueItemBody, PlateCleared, QueueItem, QueueList, QueueListQuery, UpdateQueueItemBody } from '../schemas/queue';
import type { Health, SystemInfo, UpdateCheck } from '../schemas/system';
import type { JobUpdateEvent, PrinterStatusEvent } from '../events';

// The views the schemas already name are theirs; the rest are named here, one per schema.
export type { JobDetailView, JobView } from '../schemas/jobs';
export type { PrinterDetailView, PrinterView } from '../schemas/printers';
export type { PrinterStatisticsView, StatisticsOverviewView } from '../schemas/statistics';

export type HealthView = z.output<typeof Health>;
export type SystemInfoView = z.output<typeof SystemInfo>;
export type UpdateCheckView = z.output<typeof UpdateCheck>;

export type PrinterListView = z.output<typeof PrinterList>;
export type PrinterCreatedView = z.output<typeof PrinterCreated>;
export type PrinterUpdatedView = z.output<typeof PrinterUpdated>;
export type PrinterDeletedView = z.output<typeof PrinterDeleted>;
export type PrinterCommandView = z.output<typeof PrinterCommandResult>;
export type ConnectionTestView = z.output<typeof ConnectionTestResult>;
export type CreatePrinterInput = z.input<typeof CreatePrinterBody>;
export type UpdatePrinterInput = z.input<typeof UpdatePrinterBody>;
export type PrinterCommand = 'pause' | 'resume' | 'stop';
export interface PrinterListFilter {
  active?: boolean;
  type?: PrinterView['type'];
}

export type JobListView = z.output<typeof JobList>;
export type JobCancelledView = z.output<typeof JobCancelled>;
export type JobUpdatedView = z.output<typeof JobUpdated>;
export type JobDeletedView = z.output<typeof JobDeleted>;
export type JobListFilter = Partial<z.output<typeof JobListQuery>>;
export type CreateJobInput = z.input<typeof CreateJobBody>;
export type UpdateJobInput = z.input<typeof UpdateJobBody>;

export type FileView = z.output<typeof FileItem>;
export type FileDetailView = z.output<typeof FileDetail>;
export type FileListView = z.output<typeof FileList>;
export type FileListFilter = Partial<z.output<typeof FileListQuery>>;
export type DownloadStartedView = z.output<typeof DownloadStarted>;
export type DownloadStatusView = z.output<typeof DownloadStatus>;
export type CurrentJobDownloadView = z.output<typeof CurrentJobDownloadResult>;
export type FileDeletedView = z.output<typeof FileDeleted>;
export type CleanupCandidatesView = z.output<typeof CleanupCandidates>;
export type CleanupResultView = z.output<typeof CleanupResult>;
export type RefreshResultView = z.output<typeof RefreshResult>;

/** Spec 4.4: the thumbnail and preview calls (POST /files/{id}/thumbnail/extract|generate, /analyze/gcode). */
export type ThumbnailMethod = 'extract' | 'generate' | 'analyze';
export interface ThumbnailResultView {
  success: boolean;
  method: 'extracted' | 'generated' | 'analyzed' | string;
  thumbnail_url?: string | null;
  metadata?: Record<string, unknown>;
  message?: string;
}

export type StatisticsPeriod = 'day' | 'week' | 'month' | 'year';
export interface StatisticsFilter {
  period?: StatisticsPeriod;
  start_date?: string;
  end_date?: string;
}

export type Settings = Record<string, unknown>;
export type SettingsUpdatedView = z.output<typeof SettingsUpdated>;
export type GcodeOptimizationView = z.output<typeof GcodeOptimizationSettings>;
export type GcodeOptimizationUpdatedView = z.output<typeof GcodeOptimizationUpdated>;

/** A frame on /ws (spec 6): `{type, timestamp, data}`. */
export interface Frame<T = Record<string, unknown>> {
  type: string;
  timestamp: string;
  data: T;
}

/** data of a printer_status frame: the service's event, as a client may see it (older services sent fewer fields). */
export interface PrinterStatusData extends Partial<PrinterStatusEvent> {
  printer_id: string;
  status: string;
  name?: string;
  type?: string;
  job_name?: string;
  layer_current?: number | null;
  layer_total?: number | null;
  estimated_remaining?: number | null;
  error?: { code?: string; message?: string } | null;
  /** Sent when the printer's camera fails or comes back (never a frame). */
  camera?: { available: boolean; source: string | null; fps: number; error?: string };
}

/** data of a job_update frame: the service's event. */
export interface JobUpdateData extends JobUpdateEvent {
  job_name?: string;
  /** On a failed end the printer recorded a reason for (a Klipper print lost to a crash or power loss). */
  end_reason?: string;
}

/** data of a job_auto_created frame. */
export interface JobAutoCreatedData {
  id: string;
  printer_id: string;
  job_name: string;
  filename: string;
  status: string;
  start_time: string;
  customer_info: Record<string, unknown>;
  [extra: string]: unknown;
}

export type QueueItemView = z.output<typeof QueueItem>;
export type QueueListView = z.output<typeof QueueList>;
export interface QueueListFilter {
  status?: z.output<typeof QueueListQuery>['status'];
  page?: number;
  limit?: number;
}
export type CreateQueueItemInput = z.input<typeof CreateQueueItemBody>;
export type UpdateQueueItemInput = z.input<typeof UpdateQueueItemBody>;
export type PlateClearedView = z.output<typeof PlateCleared>;
export type UploadResultView = z.output<typeof UploadResult>;
