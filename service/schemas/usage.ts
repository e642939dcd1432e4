/**
 * Opt-in usage statistics: the submission an installation sends to the
 * aggregation service (validated there with the same schema) and the shapes
 * of the local /usage-stats endpoints.
 */
import { z } from 'zod';
import { nullableTimestamp, queryBoolean, timestamp } from './common';

/** Version of the submission format; the aggregation service stores it with every submission. */
export const USAGE_SCHEMA_VERSION = '1.0';

export const DEPLOYMENT_MODES = ['standalone', 'node-red', 'docker'] as const;
export type DeploymentMode = (typeof DEPLOYMENT_MODES)[number];

const counter = z.number().int().min(0).max(1_000_000_000);
/** Keys of the maps (event types, features, printer types): identifiers, never free text. */
const key = z.string().regex(/^[A-Za-z0-9_.:-]{1,64}$/, 'must be an identifier (letters, digits, _ . : -), at most 64 characters');
const isoTime = z.iso.datetime({ offset: true }).meta({ format: 'date-time', description: 'ISO 8601 timestamp' });

function boundedRecord<V extends z.ZodType>(value: V, maxKeys: number) {
  return z.record(key, value).refine((r) => Object.keys(r).length <= maxKeys, { message: `at most ${maxKeys} entries` });
}

const sameSet = (a: string[], b: string[]) => new Set(a).size === a.length && a.length === b.length && b.every((x) => a.includes(x));

export const UsageSubmission = z
  .object({
    installation_id: z.uuid().meta({ description: 'Random UUID created at opt-in; not derived from anything on the machine' }),
    submitted_at: isoTime,
    // Bounded like every other string: /^\d+\.\d+$/ alone took 64 kB of digits, stored and exported as they came.
    schema_version: z.string().regex(/^\d{1,4}\.\d{1,4}$/, 'must be a format version such as 1.0').meta({ description: `Submission format, currently "${USAGE_SCHEMA_VERSION}"` }),
    period_start: isoTime.meta({ description: 'Start of the period the counters cover (last submission or opt-in)' }),
    period_end: isoTime,
    // A version, not free text: it is listed on the dashboards and in the mail reports (no markup, no line breaks).
    app_version: z
      .string()
      .regex(/^[0-9A-Za-z][0-9A-Za-z.+-]{0,63}$/, 'must be a version (letters, digits, . + -), at most 64 characters')
      .meta({ description: 'Printfarm version, e.g. 1.4.0 or 1.5.0-beta.2' }),
    platform: z.string().regex(/^[a-z0-9_-]{1,32}$/).meta({ description: 'Operating system (Node.js process.platform), e.g. linux, darwin, win32' }),
    deployment_mode: z.string().regex(/^[a-z0-9_-]{1,32}$/).meta({ description: 'standalone, node-red or docker' }),
    country_code: z.string().regex(/^[A-Z]{2}$/).meta({ description: 'ISO 3166-1 alpha-2 country derived from the time zone; XX when unknown' }),
    printer_count: counter.max(100_000),
    printer_types: z.array(key).max(50).meta({ description: 'Printer types present (e.g. bambu_lab, prusa_core, klipper)' }),
    printer_type_counts: boundedRecord(counter, 50).meta({ description: 'Printers per type' }),
    total_jobs_created: counter,
    total_jobs_completed: counter,
    total_jobs_failed: counter,
    total_files_downloaded: counter,
    total_files_uploaded: counter,
    uptime_hours: z.number().finite().min(0).max(1_000_000).meta({ description: 'Hours the service ran during the period' }),
    feature_usage: boundedRecord(z.boolean(), 100).meta({ description: 'Feature -> enabled' }),
    event_counts: boundedRecord(counter, 200).meta({ description: 'Event type -> count during the period' }),
  })
  .refine((s) => Date.parse(s.period_start) <= Date.parse(s.period_end), { message: 'period_start must not be after period_end', path: ['period_start'] })
  // The fleet is told three times; the printer statistics add up printer_type_counts for the types and
  // printer_count for the totals, so they must agree, or a sender could claim a billion printers of a type.
  .refine((s) => Object.values(s.printer_type_counts).reduce((a, b) => a + b, 0) === s.printer_count, {
    message: 'printer_type_counts must add up to printer_count',
    path: ['printer_type_counts'],
  })
  .refine((s) => sameSet(s.printer_types, Object.keys(s.printer_type_counts)), { message: 'printer_types must be the types of printer_type_counts', path: ['printer_types'] })
  .meta({ description: 'One anonymous usage-statistics submission: counts and fleet composition only' });
export type UsageSubmission = z.infer<typeof UsageSubmission>;

const EventTotals = z
  .record(z.string(), z.object({ pending: z.number().int(), total: z.number().int() }))
  .meta({ description: 'Per event type: counted since the last submission (pending) and in all' });

export const UsageEvent = z.object({
  id: z.number().int(),
  type: z.string(),
  bucket: timestamp.meta({ description: 'The hour the counter belongs to' }),
  count: z.number().int(),
  first_at: timestamp,
  last_at: timestamp,
  submitted: z.boolean(),
  submitted_at: nullableTimestamp,
});

export const UsageLocal = z.object({
  opted_in: z.boolean(),
  installation_id: z.string().nullable(),
  opted_in_at: nullableTimestamp,
  opted_out_at: nullableTimestamp,
  last_submission_at: nullableTimestamp,
  last_attempt_at: nullableTimestamp,
  last_error: z.string().nullable(),
  submission_count: z.number().int(),
  next_submission_due_at: nullableTimestamp.meta({ description: 'When the scheduler submits next (it checks hourly); null when opted out' }),
  settings: z.object({
    endpoint: z.string(),
    api_key_set: z.boolean(),
    timeout_seconds: z.number().int(),
    retry_count: z.number().int(),
    submission_interval_days: z.number().int(),
  }),
  event_totals: EventTotals,
  pending_events: z.number().int().meta({ description: 'Counter rows not yet submitted' }),
  next_submission: UsageSubmission.nullable().meta({ description: 'Exactly what would be sent now (null when opted out)' }),
});

export const UsageExport = UsageLocal.extend({
  exported_at: timestamp,
  events: z.array(UsageEvent).meta({ description: 'Every locally stored counter, newest first' }),
});

/** opt-in / opt-out take no body; an object with fields is refused so that typos do not pass silently. */
export const EmptyBody = z.object({}).strict();

export const OptInResult = z.object({
  opted_in: z.literal(true),
  installation_id: z.string(),
  opted_in_at: timestamp,
  message: z.string(),
});

export const OptOutResult = z.object({
  opted_in: z.literal(false),
  opted_out_at: timestamp,
  local_events_kept: z.number().int().meta({ description: 'Counters kept locally (view, export or delete them); nothing more is collected or sent' }),
  message: z.string(),
});

export const DeleteAllQuery = z
  .object({
    include_remote: queryBoolean.optional().meta({ description: 'Also ask the aggregation service to delete this installation (DELETE /installation/{id})' }),
  })
  .strict();

export const DeleteAllResult = z.object({
  deleted_events: z.number().int(),
  opted_in: z.boolean(),
  installation_id: z.string().nullable().meta({ description: 'A fresh random id when still opted in' }),
  remote: z
    .object({ requested: z.boolean(), deleted: z.boolean(), status: z.number().int().nullable(), error: z.string().nullable() })
    .nullable()
    .meta({ description: 'Outcome of the deletion request to the aggregation service (null when not asked)' }),
  message: z.string(),
});

export const SubmitResult = z.object({
  status: z.literal('submitted'),
  installation_id: z.string(),
  submitted_at: timestamp,
  attempts: z.number().int(),
  events_submitted: z.number().int().meta({ description: 'Counter rows marked submitted' }),
  payload: UsageSubmission,
});
