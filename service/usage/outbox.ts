/**
 * The submission on its way (usage_state.pending_submission): built once, stored before the first attempt
 * and sent unchanged until it is answered. The aggregation service takes a repeat of a stored
 * (installation_id, submitted_at) as a duplicate, so a submission whose answer was lost (a timeout after
 * the aggregator stored it, retries that ran out, a restart between sending and marking) is resent as the
 * same submission: its period is counted once, and its counters are marked only once it went through.
 */
import type { CapturedCounter, UsageState } from '../db/repositories/usage';
import type { UsageSubmission } from '../schemas/usage';
import type { SubmissionError } from './submitter';

export interface PendingSubmission {
  payload: UsageSubmission;
  /** The counter rows (and their counts) the payload covers: what is marked submitted on success. */
  captured: CapturedCounter[];
}

export const storePending = (p: PendingSubmission): string => JSON.stringify(p);

/** The stored submission of this installation, or null (none, unreadable, or of an id deleted since). */
export function readPending(state: UsageState): PendingSubmission | null {
  if (!state.pending_submission || !state.installation_id) return null;
  try {
    const p = JSON.parse(state.pending_submission) as PendingSubmission;
    return p?.payload?.installation_id === state.installation_id && Array.isArray(p.captured) ? p : null;
  } catch {
    return null;
  }
}

/**
 * Whether a failed submission is sent again as it is. Not when the aggregation service refused its content
 * (a 4xx other than a refused key or a rate limit): it never would take it, so the next attempt builds a
 * fresh one from the counters, which stay open.
 */
export function keepAfterFailure(e: Pick<SubmissionError, 'status'>): boolean {
  const s = e.status;
  return s === null || s < 400 || s >= 500 || s === 401 || s === 403 || s === 429;
}
