import type { Kysely } from 'kysely';
import { ddl } from '../ddl';

/**
 * usage_state.pending_submission: the submission on its way to the aggregation service (its payload and
 * the counter rows it covers, JSON), stored before the first attempt and cleared when it was answered.
 * Until then every attempt, also after a failure or a restart, sends exactly that payload (the same
 * submitted_at), which the aggregation service recognises as a repeat: a submission it stored but whose
 * answer was lost is neither counted twice nor lost.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await ddl(db)`ALTER TABLE usage_state ADD COLUMN pending_submission TEXT`.execute(db);
}
