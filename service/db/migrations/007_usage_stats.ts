import type { Kysely } from 'kysely';
import { ddl } from '../ddl';

/**
 * Opt-in usage statistics (client side). Nothing is written to these tables
 * before the user opts in.
 *
 * usage_events: counters, one row per (event type, hour) while not yet
 * submitted; a submission marks its rows submitted (they stay until the user
 * deletes them, so that the export shows what was sent).
 * usage_state: one row holding the opt-in choice, the random installation id
 * and the submission bookkeeping.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await ddl(db)`CREATE TABLE usage_events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    type TEXT NOT NULL,
    bucket TEXT NOT NULL,
    count INTEGER NOT NULL CHECK (count >= 0),
    first_at TEXT NOT NULL,
    last_at TEXT NOT NULL,
    submitted INTEGER NOT NULL DEFAULT 0 CHECK (submitted IN (0, 1)),
    submitted_at TEXT
  ) STRICT`.execute(db);
  // One open (unsubmitted) counter per type and hour: recording an event is an upsert.
  await ddl(db)`CREATE UNIQUE INDEX usage_events_open ON usage_events (type, bucket) WHERE submitted = 0`.execute(db);
  await ddl(db)`CREATE INDEX usage_events_submitted ON usage_events (submitted, id)`.execute(db);

  await ddl(db)`CREATE TABLE usage_state (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    opted_in INTEGER NOT NULL DEFAULT 0 CHECK (opted_in IN (0, 1)),
    installation_id TEXT,
    opted_in_at TEXT,
    opted_out_at TEXT,
    last_submission_at TEXT,
    last_attempt_at TEXT,
    last_error TEXT,
    submission_count INTEGER NOT NULL DEFAULT 0,
    uploads_seen_at TEXT,
    updated_at TEXT NOT NULL
  ) STRICT`.execute(db);
  await ddl(db)`INSERT INTO usage_state (id, opted_in, updated_at) VALUES (1, 0, ${new Date().toISOString()})`.execute(db);
}
