/**
 * The times a submission may carry, against the receiving clock. The schema (schemas/usage.ts) knows only
 * that they are ISO timestamps; a sender could claim the year 9999 or 0001, which no installation can have
 * lived through and which would sit in the export and the stored rows for ever. A submission's times lie
 * between EARLIEST (before Printfarm existed) and the receiver's clock plus CLOCK_SKEW_MS (a farm whose
 * clock runs a little ahead is not refused). No tighter lower bound: a farm whose submissions failed for a
 * long time still covers the whole period since its last one.
 */
import { z } from 'zod';
import { validationError } from '../errors';
import type { UsageSubmission } from '../schemas/usage';

export const EARLIEST = '2020-01-01T00:00:00.000Z';
export const CLOCK_SKEW_MS = 24 * 60 * 60 * 1000;

/** Throws 422 VALIDATION_ERROR naming each time out of range. */
export function checkSubmissionTimes(s: Pick<UsageSubmission, 'submitted_at' | 'period_start' | 'period_end'>, nowMs: number): void {
  const latest = nowMs + CLOCK_SKEW_MS;
  const time = z.string().refine((v) => {
    const ms = Date.parse(v);
    return ms >= Date.parse(EARLIEST) && ms <= latest;
  }, `must lie between ${EARLIEST} and 24 hours after the receiving clock (${new Date(latest).toISOString()})`);
  const result = z.object({ submitted_at: time, period_start: time, period_end: time }).safeParse(s);
  if (!result.success) throw validationError('body', result.error);
}
