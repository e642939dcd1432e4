/**
 * Shared by the aggregation service's API tests (test/api/aggregator*.test.ts): the fixed clock, a valid
 * submission to vary, and the check of the spec's error body.
 */
import { randomUUID } from 'node:crypto';
import type { UsageSubmission } from '../../service/schemas/usage';
import type { JsonReply } from './usage';

export const NOW = Date.parse('2026-03-01T12:00:00.000Z');

/**
 * A valid submission. Its period ends at its submitted_at and starts a millisecond before: the aggregator
 * counts an overlapped period of an installation once (the later submission replaces the earlier), so
 * submissions of one installation at different times must not overlap unless a test is about that.
 */
export function submission(overrides: Partial<UsageSubmission> = {}): UsageSubmission {
  const at = Date.parse(overrides.submitted_at ?? new Date(NOW).toISOString());
  return {
    installation_id: randomUUID(),
    submitted_at: new Date(at).toISOString(),
    schema_version: '1.0',
    period_start: new Date(at - 1).toISOString(),
    period_end: new Date(at).toISOString(),
    app_version: '1.2.0',
    platform: 'linux',
    deployment_mode: 'standalone',
    country_code: 'DE',
    printer_count: 0,
    printer_types: [],
    printer_type_counts: {},
    total_jobs_created: 0,
    total_jobs_completed: 0,
    total_jobs_failed: 0,
    total_files_downloaded: 0,
    total_files_uploaded: 0,
    uptime_hours: 0,
    feature_usage: {},
    event_counts: {},
    ...overrides,
  };
}

export function expectErrorBody(res: JsonReply, status: number, code: string) {
  expect([res.status, res.body?.error?.code]).toEqual([status, code]);
  expect(res.body.error).toEqual({ code, message: expect.any(String), details: expect.any(Object), timestamp: expect.any(String), request_id: expect.any(String) });
  expect(res.headers['x-request-id']).toBe(res.body.error.request_id);
  return res.body.error;
}
