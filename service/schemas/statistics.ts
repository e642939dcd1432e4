/** Statistics (overview, per printer) and the maintenance events of a printer. */
import { z } from 'zod';
import { nullableTimestamp, pageQuery, Pagination, timestamp } from './common';

export const PERIODS = ['day', 'week', 'month', 'year'] as const;
export const MAINTENANCE_KINDS = [
  'maintenance',
  'nozzle_change',
  'bed_calibration',
  'cleaning',
  'lubrication',
  'belt_tension',
  'firmware_update',
  'part_replacement',
  'other',
] as const;

const PERIOD_TEXT =
  'Whole days in the configured time zone (setting `timezone`), ending today: `day` is today, `week` the last 7 days, `month` the last 30, `year` the last 365.';

/** A calendar day; the years are bounded so that day arithmetic and stored timestamps stay in the plain ISO format. */
const statsDate = z.iso
  .date()
  .refine((v) => v >= '1970-01-01' && v <= '2999-12-31', { message: 'must be between 1970-01-01 and 2999-12-31' })
  .meta({ description: 'Calendar date (YYYY-MM-DD) in the configured time zone; the day is included' });

export const StatisticsQuery = z
  .object({
    period: z.enum(PERIODS).optional().meta({ description: `${PERIOD_TEXT} Default \`week\` when no dates are given.` }),
    start_date: statsDate.optional().meta({ description: 'First day of a custom range (with end_date; not with period)' }),
    end_date: statsDate.optional().meta({ description: 'Last day of a custom range, included (with start_date; not with period)' }),
  })
  .superRefine((q, ctx) => {
    const custom = q.start_date !== undefined || q.end_date !== undefined;
    if (custom && q.period !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['period'], message: 'give either period or start_date and end_date, not both' });
    }
    if (q.start_date !== undefined && q.end_date === undefined) ctx.addIssue({ code: 'custom', path: ['end_date'], message: 'is required with start_date' });
    if (q.end_date !== undefined && q.start_date === undefined) ctx.addIssue({ code: 'custom', path: ['start_date'], message: 'is required with end_date' });
    if (q.start_date !== undefined && q.end_date !== undefined && q.start_date > q.end_date) {
      ctx.addIssue({ code: 'custom', path: ['end_date'], message: 'must not be before start_date' });
    }
  });

const count = z.number().int().min(0);
const rate = (what: string) =>
  z.number().min(0).max(100).meta({ description: `${what}. Percent from 0 to 100, rounded to 1 decimal; 0 when there is nothing to divide by.` });
const seconds = (what: string) => z.number().int().min(0).meta({ description: `${what}, in seconds` });
const kg = (what: string) => z.number().min(0).meta({ description: `${what}, in kg (3 decimals)` });
const day = (description: string) => z.string().meta({ format: 'date', description });

const periodFields = {
  period: z.enum([...PERIODS, 'custom']).meta({ description: '`custom` when start_date and end_date were given' }),
  start_date: day('First day of the period (YYYY-MM-DD, configured time zone)'),
  end_date: day('Last day of the period, included (YYYY-MM-DD, configured time zone)'),
};

const PRINTING_TEXT =
  'Printing time: a job prints from its start_time to its end_time (a running or paused one until now), cut to the period; a job that started and ended inside it counts its actual_duration.';

const JOB_PERIOD_TEXT = 'Jobs of the period: those that started in it (or, never started, were created in it), as GET /jobs counts them with the same dates.';

export const StatisticsOverview = z
  .object({
    ...periodFields,
    printers: z.object({
      total_active: count.meta({ description: 'Printers with is_active true (now)' }),
      online_count: count.meta({ description: 'Active printers connected now (connection_status connected)' }),
      utilization_rate: rate(
        `Printing time of the active printers in the period divided by the period time they existed (each from its creation, up to now). ${PRINTING_TEXT}`,
      ),
    }),
    jobs: z
      .object({
        total_jobs: count,
        completed_jobs: count,
        failed_jobs: count,
        success_rate: rate('Completed jobs divided by the finished ones (completed, failed or cancelled)'),
        total_print_time: seconds('Sum of the actual durations of the jobs'),
        average_job_duration: seconds('Mean actual duration of the jobs that have one (0 when none)'),
      })
      .meta({ description: JOB_PERIOD_TEXT }),
    materials: z.object({
      total_used_kg: kg('Material the jobs used (measured, or the estimate of completed jobs)'),
      most_used_material: z.string().nullable().meta({ description: 'Material type with the largest use (ties: more jobs); null when no job named one' }),
      materials_breakdown: z
        .array(
          z.object({
            material: z.string().meta({ description: 'Material type as first spelled (grouped case-insensitively); `unknown` for material used by jobs that named no type' }),
            used_kg: kg('Material used'),
            jobs: count.meta({ description: 'Jobs of this material' }),
          }),
        )
        .meta({ description: 'Heaviest first' }),
    }),
    business: z.object({
      business_jobs: count,
      private_jobs: count,
      business_percentage: rate('Business jobs divided by all jobs of the period'),
      revenue_estimate: z.number().min(0).meta({
        description: 'Sum of the total costs (material + power + labor) of the business jobs of the period, in the currency of the costs, rounded to cents',
      }),
    }),
    files: z
      .object({
        total_files: count,
        downloaded_files: count.meta({ description: 'Files with status downloaded' }),
        local_only_files: count.meta({ description: 'Files with status local (on this machine only)' }),
        download_success_rate: rate('Downloaded files divided by downloaded plus failed (status error) ones'),
        total_storage_used_mb: z.number().min(0).meta({ description: 'Size of the files kept locally (downloaded and local), in MiB (1024 × 1024 bytes), 2 decimals' }),
      })
      .meta({ description: 'The file catalog as it is now (not limited to the period)' }),
  })
  .meta({ description: 'Farm statistics of a period' });

export const PrinterStatistics = z
  .object({
    printer_id: z.string(),
    printer_name: z.string(),
    ...periodFields,
    uptime: z.object({
      total_hours: z.number().min(0).meta({
        description:
          'Hours of the period (up to now) the printer was up: connected by its status history, or printing by its jobs (a printer that prints is up, also while the connection was down, the service stopped or before the printer was added; such time counts once). Other hours not monitored do not count. Never less than active_hours. 2 decimals',
      }),
      active_hours: z.number().min(0).meta({
        description: `Hours of the period it printed, 2 decimals; at most total_hours (jobs recorded twice over the same time cannot make it more). ${PRINTING_TEXT}`,
      }),
      utilization_rate: rate('Printing time (active_hours) divided by the period time since the printer was added, up to now'),
    }),
    jobs: z
      .object({
        total_jobs: count,
        completed_jobs: count,
        failed_jobs: count,
        cancelled_jobs: count,
        success_rate: rate('Completed jobs divided by the finished ones (completed, failed or cancelled)'),
        average_duration: seconds('Mean actual duration of the jobs that have one (0 when none)'),
      })
      .meta({ description: JOB_PERIOD_TEXT }),
    materials: z.object({
      total_used_kg: kg('Material the jobs used (measured, or the estimate of completed jobs)'),
      cost_total: z.number().min(0).meta({ description: 'Sum of the material costs of the jobs, rounded to cents' }),
      most_used: z.string().nullable().meta({ description: 'Material type with the largest use; null when no job named one' }),
    }),
    maintenance: z.object({
      last_maintenance: nullableTimestamp.meta({ description: 'Latest maintenance event of any kind up to the end of the period; null when none' }),
      nozzle_changes: count.meta({ description: 'nozzle_change events in the period' }),
      bed_calibrations: count.meta({ description: 'bed_calibration events in the period' }),
    }),
    quality_metrics: z
      .object({
        first_layer_success_rate: rate('Jobs whose first_layer_adhesion is fair or better (score 3 to 5) divided by the jobs with a recognised rating'),
        average_surface_quality: z
          .number()
          .min(1)
          .max(5)
          .nullable()
          .meta({ description: 'Mean surface_finish score from 1 (bad) to 5 (excellent), 1 decimal; null when no job has a recognised rating' }),
        dimensional_accuracy: z.number().nullable().meta({ description: 'Mean dimensional_accuracy of the jobs that have one, in the unit they were given in, 2 decimals; null when none' }),
      })
      .meta({
        description:
          'From the quality_metrics of the jobs of the period (PUT /jobs/{job_id}). Ratings: excellent or perfect 5, good 4, fair, ok, okay, acceptable or average 3, poor 2, bad, fail, failed or terrible 1, or the digits 1 to 5 (case-insensitive); other words are not counted.',
      }),
  })
  .meta({ description: 'Statistics of one printer over a period' });

export const MaintenanceKind = z.enum(MAINTENANCE_KINDS);

/** Clocks differ a little; a time further ahead than this is a mistake. */
export const MAINTENANCE_FUTURE_SLACK_MS = 5 * 60_000;

export const CreateMaintenanceBody = z.strictObject({
  kind: MaintenanceKind,
  notes: z.string().max(2000).optional(),
  performed_at: z.iso
    .datetime({ offset: true })
    .refine((v) => Date.parse(v) <= Date.now() + MAINTENANCE_FUTURE_SLACK_MS, { message: 'must not be in the future' })
    .refine((v) => Date.parse(v) >= Date.UTC(1970, 0, 1), { message: 'must not be before 1970' })
    .optional()
    .meta({ description: 'When it was done (ISO 8601 with offset); default now' }),
});

export const MaintenanceEvent = z.object({
  id: z.number().int(),
  printer_id: z.string(),
  kind: MaintenanceKind,
  notes: z.string().nullable(),
  performed_at: timestamp,
  created_at: timestamp,
});

export const MaintenanceListQuery = z.object({
  kind: MaintenanceKind.optional(),
  ...pageQuery,
});

export const MaintenanceList = z.object({
  printer_id: z.string(),
  maintenance: z.array(MaintenanceEvent).meta({ description: 'Newest first (by performed_at)' }),
  pagination: Pagination,
});

export type StatisticsFilter = z.output<typeof StatisticsQuery>;
export type StatisticsOverviewView = z.output<typeof StatisticsOverview>;
export type PrinterStatisticsView = z.output<typeof PrinterStatistics>;
export type CreateMaintenanceInput = z.output<typeof CreateMaintenanceBody>;
export type MaintenanceListFilter = z.output<typeof MaintenanceListQuery>;
export type MaintenanceEventView = z.output<typeof MaintenanceEvent>;
