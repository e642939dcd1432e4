import { z } from 'zod';
import { FilamentUsage } from './spools';
import { amount, boundedObject, decimalParam, nullableTimestamp, Pagination, pageQuery, queryBoolean, queryDate, timestamp } from './common';

/** Stored job states; `running` is accepted in filters and shown by the auto-creation event (it means `printing`). */
export const JOB_STATUSES = ['queued', 'printing', 'paused', 'completed', 'failed', 'cancelled'] as const;
export const ACTIVE_JOB_STATUSES = ['queued', 'printing', 'paused'] as const;
export const JobStatus = z.enum(JOB_STATUSES);

export const JobIdParams = z.object({
  job_id: decimalParam(z.number().int().min(1).max(Number.MAX_SAFE_INTEGER)).meta({ description: 'Job id (integer)' }),
});

export const JobListQuery = z.object({
  printer_id: z.string().min(1).max(128).optional(),
  queue_item_id: z.string().min(1).max(128).optional().meta({ description: 'Only the jobs that print copies of this print-queue item' }),
  status: z.enum([...JOB_STATUSES, 'running']).optional(),
  is_business: queryBoolean.optional(),
  start_date: queryDate.optional().meta({ description: 'Jobs that started (or were created) on or after this date' }),
  end_date: queryDate.optional().meta({ description: 'Jobs that started (or were created) on or before this date (a date includes the whole day)' }),
  ...pageQuery,
  order_by: z.enum(['created_at', 'start_time', 'duration']).default('created_at'),
  order_dir: z.enum(['asc', 'desc']).default('desc'),
});

const MaterialInput = z.strictObject({
  type: z.string().max(50).optional(),
  brand: z.string().max(100).optional(),
  color: z.string().max(50).optional(),
  estimated_usage: amount.optional().meta({ description: 'Grams' }),
  actual_usage: amount.optional().meta({ description: 'Grams' }),
  cost_per_gram: amount.optional(),
});

const PrintSettingsShape = {
  layer_height: z.number().finite().min(0).max(10),
  infill: z.number().finite().min(0).max(100),
  print_speed: z.number().finite().min(0).max(10000),
  nozzle_temp: z.number().finite().min(0).max(600),
  bed_temp: z.number().finite().min(0).max(200),
};

const QualityMetricsInput = z.strictObject({
  first_layer_adhesion: z.string().max(50).optional(),
  surface_finish: z.string().max(50).optional(),
  dimensional_accuracy: z.number().finite().optional(),
});

/** Free-form customer data; the keys the spec names (order_id, customer_name) are strings when given. */
const CustomerInfo = boundedObject(16_384).superRefine((info, ctx) => {
  for (const key of ['order_id', 'customer_name']) {
    if (key in info && typeof info[key] !== 'string') ctx.addIssue({ code: 'custom', path: [key], message: 'must be a string' });
  }
});

export const CreateJobBody = z.strictObject({
  printer_id: z.string().min(1).max(128),
  job_name: z.string().trim().min(1).max(255),
  filename: z.string().max(255).optional(),
  status: z.enum(['queued', 'printing']).default('queued'),
  start_time: z.iso.datetime({ offset: true }).optional(),
  estimated_duration: z.number().int().min(0).max(10_000_000).optional().meta({ description: 'Seconds' }),
  layer_total: z.number().int().min(0).max(1_000_000).optional(),
  material_info: MaterialInput.optional(),
  file_info: z
    .strictObject({
      filename: z.string().max(255).optional(),
      size: z.number().int().min(0).optional(),
      path: z.string().max(1024).optional(),
      hash: z.string().max(200).optional(),
    })
    .optional(),
  print_settings: z.strictObject(PrintSettingsShape).partial().optional(),
  is_business: z.boolean().default(false),
  customer_info: CustomerInfo.optional(),
  material_cost: amount.optional(),
  power_cost: amount.optional(),
  labor_cost: amount.optional(),
  notes: z.string().max(10_000).optional(),
});

export const UpdateJobBody = z
  .strictObject({
    is_business: z.boolean().optional(),
    customer_info: CustomerInfo.optional().meta({
      description: 'Replaces the stored customer data as a whole; an auto-created job keeps auto_created, discovery_time, printer_start_time, discovered_on_startup and end_reason',
    }),
    material_cost: amount.optional(),
    power_cost: amount.optional(),
    labor_cost: amount.optional(),
    notes: z.string().max(10_000).optional(),
    quality_metrics: QualityMetricsInput.optional(),
  })
  .refine((b) => Object.keys(b).length > 0, { message: 'give at least one field to change' });

export const Job = z.object({
  id: z.number().int(),
  printer_id: z.string(),
  printer_name: z.string().nullable(),
  job_name: z.string(),
  filename: z.string().nullable(),
  status: JobStatus,
  progress: z.number(),
  layer_current: z.number().int().nullable(),
  layer_total: z.number().int().nullable(),
  start_time: nullableTimestamp,
  end_time: nullableTimestamp,
  estimated_duration: z.number().int().nullable(),
  actual_duration: z.number().int().nullable(),
  estimated_completion: nullableTimestamp,
  material_info: z.object({
    type: z.string().nullable(),
    color: z.string().nullable(),
    estimated_usage: z.number().nullable(),
    actual_usage: z.number().nullable(),
  }),
  file_info: z.object({ size: z.number().int().nullable(), path: z.string().nullable() }),
  costs: z.object({ material_cost: z.number(), power_cost: z.number(), total_cost: z.number() }),
  is_business: z.boolean(),
  customer_info: z.record(z.string(), z.unknown()).nullable(),
  queue_item_id: z.string().nullable().meta({ description: 'The print-queue item this job prints a copy of (a print the queue dispatched); null for a print started by hand' }),
  filament_usage: z.array(FilamentUsage).meta({
    description: 'What the print used, per slot, once it ended (failed and cancelled prints pro rata to their progress); material_info.actual_usage and costs.material_cost are its sums',
  }),
  created_at: timestamp,
  updated_at: timestamp,
});

export const JobDetail = Job.extend({
  material_info: Job.shape.material_info.extend({ brand: z.string().nullable(), cost_per_gram: z.number().nullable() }),
  file_info: Job.shape.file_info.extend({
    filename: z.string().nullable(),
    hash: z.string().nullable().meta({ description: 'Algorithm-prefixed, e.g. sha256:<hex>' }),
    uploaded_at: nullableTimestamp,
  }),
  print_settings: z.object({
    layer_height: z.number().nullable(),
    infill: z.number().nullable(),
    print_speed: z.number().nullable(),
    nozzle_temp: z.number().nullable(),
    bed_temp: z.number().nullable(),
  }),
  costs: Job.shape.costs.extend({ labor_cost: z.number() }),
  quality_metrics: z.object({
    first_layer_adhesion: z.string().nullable(),
    surface_finish: z.string().nullable(),
    dimensional_accuracy: z.number().nullable(),
  }),
  notes: z.string().nullable(),
});

export const JobList = z.object({
  jobs: z.array(Job),
  pagination: Pagination,
  summary: z.object({
    active_jobs: z.number().int(),
    queued_jobs: z.number().int(),
    completed_today: z.number().int(),
    failed_today: z.number().int(),
  }),
});

export const JobCancelled = z.object({
  id: z.number().int(),
  status: JobStatus,
  message: z.string(),
  cancelled_at: timestamp,
});
export const JobUpdated = z.object({ id: z.number().int(), message: z.string(), updated_at: timestamp });
export const JobDeleted = z.object({ id: z.number().int(), message: z.string(), deleted_at: timestamp });

export type JobListFilter = z.output<typeof JobListQuery>;
export type CreateJobInput = z.output<typeof CreateJobBody>;
export type UpdateJobInput = z.output<typeof UpdateJobBody>;
export type JobView = z.output<typeof Job>;
export type JobDetailView = z.output<typeof JobDetail>;
