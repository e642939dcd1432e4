import type { Kysely } from 'kysely';
import { ddl } from '../ddl';

/**
 * Job tracking: the identity of a print (normalised file name + start minute)
 * with a unique index as the last guard against duplicate auto-created jobs,
 * the printer's own job id, and a per-printer power draw for power costs.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await ddl(db)`ALTER TABLE jobs ADD COLUMN print_key TEXT`.execute(db);
  await ddl(db)`ALTER TABLE jobs ADD COLUMN printer_job_id TEXT`.execute(db);
  await ddl(db)`CREATE UNIQUE INDEX jobs_print_identity ON jobs (printer_id, print_key) WHERE print_key IS NOT NULL`.execute(db);
  await ddl(db)`ALTER TABLE printers ADD COLUMN power_watts INTEGER CHECK (power_watts BETWEEN 1 AND 10000)`.execute(db);
}
