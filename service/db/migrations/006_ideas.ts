import type { Kysely } from 'kysely';
import { ddl } from '../ddl';

/**
 * Ideas (bookmarks of models from the five platforms, or made by hand) and the
 * trending cache.
 * - `source_platform` has no CHECK: the accepted set (makerworld, printables,
 *   thingiverse, myminifactory, cults3d, manual) is validated by the API's
 *   schemas, so adding a platform never needs a table rebuild and no stored
 *   platform can be rejected by the database.
 * - One idea per (platform, model id): a second import of the same model finds
 *   the first one. Hand-made ideas have no model id.
 * - `job_id` links an idea that is printing to its job; deleting the job unlinks it.
 * - The trending cache is a table so that it survives restarts: items per
 *   platform plus one row per platform with when it was filled and when it expires.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await ddl(db)`CREATE TABLE ideas (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    title TEXT NOT NULL,
    creator_name TEXT,
    source_platform TEXT NOT NULL,
    source_url TEXT,
    model_id TEXT,
    thumbnail_url TEXT,
    description TEXT,
    file_info TEXT,
    notes TEXT,
    tags TEXT NOT NULL DEFAULT '[]',
    is_business INTEGER NOT NULL DEFAULT 0 CHECK (is_business IN (0, 1)),
    status TEXT NOT NULL DEFAULT 'idea' CHECK (status IN ('idea', 'planned', 'printing', 'completed', 'archived')),
    job_id INTEGER REFERENCES jobs (id) ON DELETE SET NULL,
    metadata_refresh_needed INTEGER NOT NULL DEFAULT 0 CHECK (metadata_refresh_needed IN (0, 1)),
    metadata_fetched_at TEXT,
    metadata_attempted_at TEXT,
    status_changed_at TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
  ) STRICT`.execute(db);
  await ddl(db)`CREATE UNIQUE INDEX ideas_source_model ON ideas (source_platform, model_id) WHERE model_id IS NOT NULL`.execute(db);
  await ddl(db)`CREATE INDEX ideas_status ON ideas (status)`.execute(db);
  await ddl(db)`CREATE INDEX ideas_created_at ON ideas (created_at)`.execute(db);
  await ddl(db)`CREATE INDEX ideas_job ON ideas (job_id) WHERE job_id IS NOT NULL`.execute(db);
  await ddl(db)`CREATE INDEX ideas_refresh ON ideas (metadata_attempted_at) WHERE metadata_refresh_needed = 1`.execute(db);

  await ddl(db)`CREATE TABLE trending_items (
    id TEXT PRIMARY KEY NOT NULL,
    platform TEXT NOT NULL,
    model_id TEXT NOT NULL,
    rank INTEGER NOT NULL,
    title TEXT NOT NULL,
    creator_name TEXT,
    source_url TEXT NOT NULL,
    thumbnail_url TEXT,
    description TEXT,
    stats TEXT,
    fetched_at TEXT NOT NULL
  ) STRICT`.execute(db);
  await ddl(db)`CREATE INDEX trending_items_platform ON trending_items (platform, rank)`.execute(db);

  await ddl(db)`CREATE TABLE trending_cache (
    platform TEXT PRIMARY KEY NOT NULL,
    cached_at TEXT NOT NULL,
    expires_at TEXT NOT NULL
  ) STRICT`.execute(db);
}
