import { z } from 'zod';
import { decimalParam, nullableTimestamp, pageQuery, queryBoolean, timestamp } from './common';

export const FILE_STATUSES = ['available', 'downloading', 'downloaded', 'local', 'error'] as const;

export const FileIdParams = z.object({ file_id: z.string().min(1).max(64) });

export const FileListQuery = z.object({
  printer_id: z.string().min(1).max(128).optional(),
  status: z.enum(FILE_STATUSES).optional(),
  file_type: z
    .string()
    .regex(/^\.?[A-Za-z0-9]{1,10}$/, 'an extension such as .3mf, .stl, .gcode')
    .transform((v) => (v.startsWith('.') ? v : `.${v}`).toLowerCase())
    .optional(),
  search: z.string().max(200).optional().meta({ description: 'Text in the file name' }),
  ...pageQuery,
});

const FileMetadata = z.object({
  estimated_print_time: z.number().nullable().meta({ description: 'Seconds' }),
  layer_height: z.number().nullable(),
  infill: z.number().nullable().meta({ description: 'Percent' }),
});

export const FileItem = z.object({
  id: z.string(),
  printer_id: z.string().nullable(),
  printer_name: z.string().nullable(),
  filename: z.string(),
  file_size: z.number().int(),
  file_type: z.string().meta({ description: 'Extension with the dot, e.g. .3mf' }),
  status: z.enum(FILE_STATUSES),
  status_icon: z.string(),
  printer_path: z.string().nullable(),
  local_path: z.string().nullable().meta({ description: 'Where the local copy is, relative to the data directory (e.g. files/local/…); null without one' }),
  created_on_printer: nullableTimestamp,
  downloaded_at: nullableTimestamp,
  last_accessed: nullableTimestamp,
  download_url: z.string().nullable().meta({ description: 'POST here to download (files on a printer)' }),
  upload_url: z.string().optional().meta({ description: 'Local files: where uploads go' }),
  checksum: z.string().optional().meta({ description: 'sha256:<hex> of the local copy' }),
  metadata: FileMetadata,
});

export const FileDetail = FileItem.extend({
  original_filename: z.string(),
  preview_url: z.string(),
  content_url: z.string().nullable().meta({ description: 'GET the bytes of the local copy' }),
  download_attempts: z.number().int(),
  error: z.string().nullable(),
  metadata: FileMetadata.extend({
    layer_count: z.number().int().nullable(),
    support_material: z.boolean().nullable(),
    material_type: z.string().nullable(),
    nozzle_temperature: z.number().nullable(),
    bed_temperature: z.number().nullable(),
  }),
  related_jobs: z.array(z.object({ id: z.number().int(), status: z.string(), completed_at: nullableTimestamp })),
});

export const FileList = z.object({
  files: z.array(FileItem),
  pagination: z.object({ page: z.number().int(), limit: z.number().int(), total_items: z.number().int(), total_pages: z.number().int() }),
  summary: z.object({
    available_count: z.number().int(),
    downloaded_count: z.number().int(),
    local_count: z.number().int(),
    total_size: z.number().int().meta({ description: 'Bytes' }),
    download_success_rate: z.number().meta({ description: 'Percent of finished downloads that succeeded' }),
  }),
});

export const DownloadStarted = z.object({
  id: z.string(),
  status: z.literal('downloading'),
  message: z.string(),
  download_id: z.string(),
  estimated_duration: z.number().int().nullable().meta({ description: 'Seconds, from the size at an assumed 2 MB/s' }),
  started_at: timestamp,
});

export const DownloadStatus = z.object({
  download_id: z.string(),
  file_id: z.string(),
  status: z.enum(['downloading', 'completed', 'failed', 'cancelled']),
  progress: z.number().min(0).max(100).meta({ description: 'Percent, 0..100 (0 while the size is unknown)' }),
  bytes_downloaded: z.number().int(),
  bytes_total: z.number().int().nullable().meta({ description: 'null while the printer has not told the size' }),
  speed_mbps: z.number(),
  estimated_remaining: z.number().int().nullable(),
  started_at: timestamp,
  completed_at: nullableTimestamp,
  error: z.string().nullable(),
  reason: z
    .enum(['disk_full', 'too_large', 'stalled', 'cancelled', 'printer'])
    .nullable()
    .meta({
      description:
        'Why it ended without a file: disk_full (local storage full; not retried), too_large (over MAX_DOWNLOAD_SIZE_MB), stalled (no byte for 60 s, after retries), cancelled, printer (the printer or the link failed)',
    }),
  attempt: z.number().int(),
});

export const FileDeleted = z.object({ id: z.string(), message: z.string(), status: z.string(), deleted_at: timestamp });

export const CleanupQuery = z.object({
  older_than_days: decimalParam(z.number().int().min(0).max(36500).default(30)),
  min_size_mb: decimalParam(z.number().min(0).max(1e6).default(0)),
  unused_only: queryBoolean.default(false),
});

export const CleanupCandidates = z.object({
  cleanup_candidates: z.array(
    z.object({
      id: z.string(),
      filename: z.string(),
      file_size: z.number().int(),
      downloaded_at: nullableTimestamp,
      last_accessed: nullableTimestamp,
      age_days: z.number().int(),
      space_savings_mb: z.number(),
    }),
  ),
  total_candidates: z.number().int(),
  total_space_savings_mb: z.number(),
});

export const CleanupBody = z.strictObject({
  file_ids: z.array(z.string().min(1).max(64)).min(1).max(10_000),
  confirm: z.boolean(),
});

export const CleanupResult = z.object({
  cleaned_files: z.number().int(),
  space_freed_mb: z.number(),
  failed_cleanups: z.array(z.object({ file_id: z.string(), error: z.string() })),
  completed_at: timestamp,
});

export const CurrentJobDownloadBody = z.strictObject({
  printer_id: z.string().min(1).max(128),
  file_path: z.string().max(1024).optional().meta({ description: 'The file on the printer; default: the file of its current print' }),
});

export const CurrentJobDownloadResult = z.object({
  status: z.enum(['success', 'processed', 'exists_with_thumbnail', 'exists_no_thumbnail', 'not_printing', 'no_file']),
  file_id: z.string().nullable(),
  filename: z.string().nullable(),
  has_thumbnail: z.boolean(),
  message: z.string(),
});

export const RefreshBody = z.strictObject({ printer_id: z.string().min(1).max(128).optional() });
export const RefreshResult = z.object({
  refreshed: z.array(z.object({ printer_id: z.string(), added: z.number().int(), removed: z.number().int() })),
  failed: z.array(z.object({ printer_id: z.string(), error: z.string() })),
});

export const UploadResult = FileDetail;

export const ThumbnailResult = z.object({
  success: z.boolean(),
  method: z.enum(['extracted', 'generated', 'analyzed']),
  thumbnail_url: z.string().meta({ description: 'GET: the PNG (a placeholder when success is false)' }),
  metadata: z.record(z.string(), z.unknown()).optional(),
  message: z.string(),
});
