/** Request and response shapes of the aggregation service: validation, types and its OpenAPI document. */
import { z } from 'zod';
import { timestamp } from '../schemas/common';

const int = z.number().int();
const percent = z.number().meta({ description: 'Percentage 0-100, 1 decimal; 0 when there is nothing to divide by' });
const changePercent = z.number().nullable().meta({ description: 'Change against the previous window in percent (1 decimal); null without a baseline' });

export const WindowQuery = z
  .object({
    days: z.coerce.number().int().min(1).max(365).default(30).meta({ description: 'Installations that submitted within this many days count (default 30)' }),
  })
  .strict();

export const TimelineQuery = z
  .object({
    days: z.coerce.number().int().min(1).max(730).default(90).meta({ description: 'How far back the timeline goes (default 90)' }),
    interval: z.enum(['day', 'week']).default('week').meta({ description: 'Bucket size; buckets end now and go back in steps of 1 or 7 days' }),
  })
  .strict();

export const InstallationParams = z.object({
  id: z.string().regex(/^[A-Za-z0-9-]{1,64}$/, 'must be an installation id (UUID)').meta({ description: 'Installation id (UUID)' }),
});

const Share = { installations: int, percentage: percent };

export const Summary = z.object({
  generated_at: timestamp,
  total_installations: int.meta({ description: 'Installations that ever submitted (and were not deleted)' }),
  active_installations_7d: int,
  active_installations_30d: int,
  new_installations_7d: int,
  total_submissions: int,
  submissions_24h: int,
  total_printers: int.meta({ description: 'Printers of the installations active in the last 30 days (their latest submission)' }),
  totals: z.object({
    jobs_created: int,
    jobs_completed: int,
    jobs_failed: int,
    files_downloaded: int,
    files_uploaded: int,
    uptime_hours: z.number(),
    errors: int,
  }),
  job_success_rate: percent.meta({ description: 'completed / (completed + failed)' }),
  first_submission_at: timestamp.nullable(),
  last_submission_at: timestamp.nullable(),
});

const TrendPoint = z.object({
  period_start: timestamp,
  period_end: timestamp,
  active_installations: int.meta({ description: 'Installations that submitted in the bucket' }),
  new_installations: int.meta({ description: 'Installations first seen in the bucket' }),
  submissions: int,
});

export const Installations = z.object({
  generated_at: timestamp,
  days: int,
  interval: z.enum(['day', 'week']),
  total_installations: int,
  active_installations_7d: int,
  active_installations_30d: int,
  new_installations_7d: int,
  week_over_week_change: changePercent.meta({ description: 'Active installations of the last 7 days against the 7 before' }),
  trend_direction: z.enum(['up', 'down', 'stable']).meta({ description: 'up/down when the week-over-week change is beyond ±5 %' }),
  trend: z.array(TrendPoint).meta({ description: 'Oldest first' }),
});

export const DeploymentModes = z.object({
  generated_at: timestamp,
  days: int,
  total_installations: int,
  modes: z.array(z.object({ mode: z.string(), ...Share })).meta({ description: 'The 50 modes with the most installations, most first' }),
  modes_other: z.object({ modes: int, installations: int }).meta({ description: 'The modes beyond the 50 listed: how many, and their installations added up' }),
});

export const Versions = z.object({
  generated_at: timestamp,
  days: int,
  total_installations: int,
  latest_version: z.string().nullable().meta({ description: 'The newest of the listed versions' }),
  latest_version_adoption: percent,
  versions: z.array(z.object({ version: z.string(), ...Share })).meta({ description: 'The 50 versions with the most installations, newest version first' }),
  versions_other: z.object({ versions: int, installations: int }).meta({ description: 'The versions beyond the 50 listed: how many, and their installations added up' }),
});

export const Geography = z.object({
  generated_at: timestamp,
  days: int,
  total_installations: int,
  country_count: int.meta({ description: 'Distinct countries, without XX (unknown)' }),
  countries: z.array(z.object({ country_code: z.string(), ...Share, printers: int })),
});

export const Printers = z.object({
  generated_at: timestamp,
  days: int,
  total_installations: int,
  total_printers: int,
  average_per_installation: z.number(),
  median_per_installation: z.number(),
  max_per_installation: int,
  types: z
    .array(z.object({ type: z.string(), printers: int, installations: int, percentage: percent.meta({ description: 'Share of all printers' }) }))
    .meta({ description: 'The 50 printer types with the most printers, most first' }),
  types_other: z
    .object({ types: int, printers: int, installations: int })
    .meta({ description: 'The types beyond the 50 listed: how many, and their printers and installations added up' }),
  fleet_sizes: z.array(z.object({ size: z.enum(['0', '1', '2-5', '6-10', '11-50', '51+']), installations: int })),
});

const FeatureCount = z.object({
  feature: z.string(),
  enabled: int,
  disabled: int,
  adoption: percent.meta({ description: 'enabled / (enabled + disabled)' }),
});

export const Features = z.object({
  generated_at: timestamp,
  days: int,
  total_installations: int,
  features: z.array(FeatureCount).meta({ description: 'The 50 features most often enabled, most enabled first' }),
  features_other: z
    .object({ features: int, enabled: int, disabled: int })
    .meta({ description: 'The features beyond the 50 listed: how many, and their enabled and disabled counts added up' }),
});

export const VersionMigration = z.object({
  generated_at: timestamp,
  days: int,
  interval: z.enum(['day', 'week']),
  versions: z.array(z.string()).meta({ description: 'The 50 versions with the most installations over the whole timeline (per bucket added up), newest first' }),
  versions_omitted: int.meta({ description: 'Versions seen in the timeline but not listed (beyond the 50)' }),
  timeline: z.array(
    z.object({
      period_start: timestamp,
      period_end: timestamp,
      total_installations: int,
      versions: z.array(z.object({ version: z.string(), ...Share })).meta({ description: 'The listed versions seen in the bucket, newest first' }),
      versions_other: z.object({ versions: int, installations: int }).meta({ description: 'The bucket\'s versions beyond the listed ones: how many, and their installations added up' }),
    }),
  ),
});

export const Anomaly = z.object({
  type: z.enum(['active_installations_drop', 'active_installations_spike', 'submission_spike', 'submission_drop', 'error_increase', 'error_prevalence']),
  severity: z.enum(['low', 'medium', 'high']),
  metric: z.string(),
  message: z.string(),
  current_value: z.number(),
  baseline_value: z.number(),
  change_percent: changePercent,
  threshold: z.string().meta({ description: 'The rule that fired' }),
  detected_at: timestamp,
});

export const Anomalies = z.object({
  generated_at: timestamp,
  anomalies: z.array(Anomaly),
  counts: z.object({ high: int, medium: int, low: int }),
  rules: z.array(z.string()).meta({ description: 'The rules checked' }),
});

export const Overview = z.object({
  generated_at: timestamp,
  summary: Summary,
  installations: Installations,
  deployment_modes: DeploymentModes,
  versions: Versions,
  geography: Geography,
  printers: Printers,
  features: Features,
  anomalies: Anomalies,
});

export const FeatureTrends = z.object({
  generated_at: timestamp,
  days: int,
  interval: z.enum(['day', 'week']),
  features: z.array(z.string()).meta({ description: 'The 50 features most often enabled over the whole timeline, by name' }),
  features_omitted: int.meta({ description: 'Features seen in the timeline but not listed (beyond the 50)' }),
  timeline: z.array(z.object({ period_start: timestamp, period_end: timestamp, total_installations: int, features: z.array(FeatureCount) })),
});

export const Errors = z.object({
  generated_at: timestamp,
  days: int,
  interval: z.enum(['day', 'week']),
  total_errors: int,
  installations_reporting: int.meta({ description: 'Installations that submitted in the window' }),
  installations_with_errors: int,
  installations_with_errors_percentage: percent,
  errors_per_installation: z.number(),
  week_over_week_change: changePercent,
  trend_direction: z.enum(['up', 'down', 'stable']),
  by_type: z.array(z.object({ type: z.string(), count: int })).meta({ description: 'Error counters by code (event_counts error_*), the 50 most frequent, most frequent first' }),
  by_type_other: z.object({ types: int, count: int }).meta({ description: 'The codes beyond the 50 listed: how many, and their counts added up' }),
  trend: z.array(z.object({ period_start: timestamp, period_end: timestamp, errors: int, submissions: int, installations_with_errors: int })),
});

export const StoredSubmission = z.object({
  id: int,
  installation_id: z.string(),
  received_at: timestamp,
  submitted_at: timestamp,
  schema_version: z.string(),
  period_start: timestamp,
  period_end: timestamp,
  app_version: z.string(),
  platform: z.string(),
  deployment_mode: z.string(),
  country_code: z.string(),
  printer_count: int,
  printer_types: z.array(z.string()),
  printer_type_counts: z.record(z.string(), int),
  total_jobs_created: int,
  total_jobs_completed: int,
  total_jobs_failed: int,
  total_files_downloaded: int,
  total_files_uploaded: int,
  uptime_hours: z.number(),
  feature_usage: z.record(z.string(), z.boolean()),
  event_counts: z.record(z.string(), int),
});

export const Installation = z.object({
  installation_id: z.string(),
  first_seen_at: timestamp,
  last_seen_at: timestamp,
  submissions: int,
  app_version: z.string(),
  platform: z.string(),
  deployment_mode: z.string(),
  country_code: z.string(),
  printer_count: int,
});

export const Export = z.object({
  exported_at: timestamp,
  installations: z.array(Installation),
  submissions: z.array(StoredSubmission),
});

export const SubmitAccepted = z.object({
  status: z.enum(['accepted', 'duplicate']).meta({ description: 'duplicate: the same (installation_id, submitted_at) was stored before (a client retry); nothing changed' }),
  installation_id: z.string(),
  submission_id: int,
  received_at: timestamp,
  replaced: z
    .array(z.object({ submission_id: int, submitted_at: timestamp, period_start: timestamp, period_end: timestamp }))
    .meta({ description: 'Stored submissions of this installation whose period this one overlaps: they no longer count (empty for a duplicate)' }),
  rate_limit: z.object({
    limit: int,
    remaining: int,
    window_start: timestamp,
    reset_at: timestamp,
  }),
});

export const InstallationDeleted = z.object({
  installation_id: z.string(),
  deleted: z.literal(true),
  submissions_deleted: int,
});

export const Health = z.object({
  status: z.enum(['healthy', 'unhealthy']),
  service: z.literal('printfarm-aggregator'),
  version: z.string(),
  uptime_seconds: int,
  database: z.enum(['ok', 'error']),
  email_configured: z.boolean(),
  timestamp,
});

export const Liveness = z.object({ status: z.literal('alive'), timestamp });
export const Readiness = z.object({ ready: z.boolean(), database: z.enum(['ok', 'error']), timestamp });

export const EmailStatus = z.object({
  configured: z.boolean(),
  host: z.string().nullable(),
  port: int.nullable(),
  secure: z.boolean(),
  auth: z.boolean().meta({ description: 'A user name is set (the password is never shown)' }),
  from: z.string().nullable(),
  recipients: z.array(z.string()),
  reports_sent: int,
  last_sent_at: timestamp.nullable(),
  last_error: z.string().nullable(),
});

export const MailBody = z
  .object({
    to: z
      .array(z.email())
      .min(1)
      .max(20)
      .optional()
      .meta({ description: 'Recipients for this mail; default the configured report recipients' }),
  })
  .strict();

export const ReportData = z.object({
  kind: z.enum(['weekly', 'monthly']),
  period_start: timestamp,
  period_end: timestamp,
  active_installations: int,
  previous_active_installations: int,
  active_change_percent: changePercent,
  new_installations: int,
  submissions: int,
  jobs_created: int,
  jobs_completed: int,
  jobs_failed: int,
  job_success_rate: percent,
  files_downloaded: int,
  files_uploaded: int,
  errors: int,
  total_printers: int,
  top_versions: z.array(z.object({ version: z.string(), installations: int })),
  top_countries: z.array(z.object({ country_code: z.string(), installations: int })),
  deployment_modes: z.array(z.object({ mode: z.string(), installations: int })),
  anomalies: z.array(Anomaly),
});

export const MailSent = z.object({
  sent: z.literal(true),
  message_id: z.string(),
  recipients: z.array(z.string()),
  subject: z.string(),
  report: ReportData.nullable().meta({ description: 'The figures of the report (null for the test mail)' }),
});
