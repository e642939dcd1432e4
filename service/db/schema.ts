/** Table types for kysely: one interface per table, exactly as the migrations create them. */
import type { Generated } from 'kysely';

export interface PrintersTable {
  id: string;
  name: string;
  type: string;
  model: string | null;
  ip_address: string;
  serial_number: string | null;
  access_code: string | null;
  is_active: number;
  status: string;
  connection_status: string;
  status_message: string | null;
  firmware_version: string | null;
  last_seen: string | null;
  created_at: string;
  updated_at: string;
  mqtt_port: number | null;
  ftps_port: number | null;
  http_port: number | null;
  power_watts: number | null;
  plate_state: string;
  plate_auto_clear: number;
  /** prusa_core: 'digest' or 'api_key'; NULL is Digest. */
  auth_method: string | null;
  /** bambu_lab: camera port override (NULL: 6000 or 322 by model). */
  camera_port: number | null;
  /** A camera URL that replaces the printer's own camera (may hold credentials). */
  camera_url: string | null;
}

export interface JobsTable {
  id: Generated<number>;
  printer_id: string;
  printer_name: string | null;
  job_name: string;
  filename: string | null;
  status: string;
  progress: number;
  layer_current: number | null;
  layer_total: number | null;
  start_time: string | null;
  end_time: string | null;
  estimated_duration: number | null;
  actual_duration: number | null;
  estimated_completion: string | null;
  material_type: string | null;
  material_brand: string | null;
  material_color: string | null;
  material_estimated_usage: number | null;
  material_actual_usage: number | null;
  material_cost_per_gram: number | null;
  file_size: number | null;
  file_path: string | null;
  file_hash: string | null;
  file_uploaded_at: string | null;
  print_settings: string | null;
  material_cost: number | null;
  power_cost: number | null;
  labor_cost: number | null;
  quality_metrics: string | null;
  is_business: number;
  customer_info: string | null;
  notes: string | null;
  created_at: string;
  updated_at: string;
  print_key: string | null;
  printer_job_id: string | null;
  queue_item_id: Generated<string | null>;
}

export interface SettingsTable {
  key: string;
  value: string;
  updated_at: string;
}

export interface FilesTable {
  id: string;
  printer_id: string | null;
  filename: string;
  file_type: string;
  file_size: number;
  status: string;
  printer_path: string | null;
  local_path: string | null;
  checksum: string | null;
  created_on_printer: string | null;
  downloaded_at: string | null;
  last_accessed: string | null;
  download_attempts: number;
  metadata: string | null;
  created_at: string;
  updated_at: string;
  original_filename: string | null;
  error: string | null;
}

export interface IdeasTable {
  id: Generated<number>;
  title: string;
  creator_name: string | null;
  source_platform: string;
  source_url: string | null;
  model_id: string | null;
  thumbnail_url: string | null;
  description: string | null;
  file_info: string | null;
  notes: string | null;
  tags: string;
  is_business: number;
  status: string;
  job_id: number | null;
  metadata_refresh_needed: number;
  metadata_fetched_at: string | null;
  metadata_attempted_at: string | null;
  status_changed_at: string;
  created_at: string;
  updated_at: string;
}

export interface TrendingItemsTable {
  id: string;
  platform: string;
  model_id: string;
  rank: number;
  title: string;
  creator_name: string | null;
  source_url: string;
  thumbnail_url: string | null;
  description: string | null;
  stats: string | null;
  fetched_at: string;
}

export interface TrendingCacheTable {
  platform: string;
  cached_at: string;
  expires_at: string;
}

export interface QueueItemsTable {
  id: string;
  file_id: string;
  name: string;
  plate: number;
  copies: number;
  priority: number;
  status: string;
  waiting_reason: string | null;
  failures_in_row: number;
  target: string | null;
  requirements: string | null;
  options: string | null;
  start_after: string | null;
  created_at: string;
  updated_at: string;
}

export interface QueueDispatchesTable {
  id: string;
  item_id: string;
  printer_id: string;
  job_id: number | null;
  state: string;
  attempt: number;
  error: string | null;
  remote_name: string;
  task_id: string;
  baseline_job_id: string | null;
  start_sent_at: string | null;
  created_at: string;
  updated_at: string;
}

/** Running totals of the jobs per printer, status and business flag, kept by triggers (migration 016). */
export interface JobTalliesTable {
  printer_id: string;
  status: string;
  is_business: number;
  jobs: number;
  print_time: number;
  used_grams: number;
}

export interface DB {
  printers: PrintersTable;
  jobs: JobsTable;
  job_tallies: JobTalliesTable;
  settings: SettingsTable;
  files: FilesTable;
  ideas: IdeasTable;
  trending_items: TrendingItemsTable;
  trending_cache: TrendingCacheTable;
  queue_items: QueueItemsTable;
  queue_dispatches: QueueDispatchesTable;
}
