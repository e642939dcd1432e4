import { sql, type Kysely } from 'kysely';
import { ddl, onPostgres } from '../ddl';
import { dialectOf } from '../dialect';

/**
 * Running totals of the jobs per (printer, status, business): the number of
 * jobs, their printing time and the material they used. GET /jobs' total and
 * its summary's active and queued counts, and a printer's detail totals, read
 * these few rows instead of counting a history that reaches 10^7 jobs (there a
 * count(*) of the jobs took hundreds of milliseconds, a printer's totals
 * more, every time a dashboard asked).
 *
 * Triggers keep them in the transaction that changes a job, so they agree with
 * the jobs in every snapshot. An update only touches them when one of the
 * counted columns changes (not on every progress report). Grams are summed as
 * REAL: rounding drift after millions of additions stays far below the 0.01 g
 * the API shows. The index jobs_printer_totals (008), which only the printer
 * totals read, goes.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await ddl(db)`CREATE TABLE job_tallies (
    printer_id TEXT NOT NULL,
    status TEXT NOT NULL,
    is_business INTEGER NOT NULL,
    jobs INTEGER NOT NULL,
    print_time INTEGER NOT NULL,
    used_grams REAL NOT NULL,
    PRIMARY KEY (printer_id, status, is_business)
  ) STRICT`.execute(db);
  await sql`INSERT INTO job_tallies (printer_id, status, is_business, jobs, print_time, used_grams)
    SELECT printer_id, status, is_business, count(*), coalesce(sum(actual_duration), 0), coalesce(sum(${used('')}), 0)
    FROM jobs GROUP BY printer_id, status, is_business`.execute(db);
  if (dialectOf(db) === 'postgres') await postgresTriggers(db);
  else await sqliteTriggers(db);
  await ddl(db)`DROP INDEX jobs_printer_totals`.execute(db);
}

/** Grams a job used, as the statistics count them (0 when none): `row` is '', 'OLD.' or 'NEW.'. */
function used(row: string) {
  const r = sql.raw(row);
  return sql`coalesce(${r}material_actual_usage, CASE WHEN ${r}status = 'completed' THEN ${r}material_estimated_usage END, 0)`;
}

/** The columns a tally counts: an UPDATE that changes none of them leaves the tallies alone. */
const COUNTED = ['printer_id', 'status', 'is_business', 'actual_duration', 'material_actual_usage', 'material_estimated_usage'];

async function sqliteTriggers(db: Kysely<unknown>): Promise<void> {
  /** Adds one job (`sign` 1) or takes it away (-1): an upsert, so a first job of a new key makes its row. */
  const add = (row: 'OLD.' | 'NEW.', sign: 1 | -1) => {
    const r = sql.raw(row);
    const s = sql.raw(String(sign));
    return sql`INSERT INTO job_tallies (printer_id, status, is_business, jobs, print_time, used_grams)
      VALUES (${r}printer_id, ${r}status, ${r}is_business, ${s}, ${s} * coalesce(${r}actual_duration, 0), ${s} * ${used(row)})
      ON CONFLICT (printer_id, status, is_business) DO UPDATE SET jobs = jobs + excluded.jobs,
        print_time = print_time + excluded.print_time, used_grams = used_grams + excluded.used_grams;`;
  };
  const changed = sql.raw(COUNTED.map((c) => `OLD.${c} IS NOT NEW.${c}`).join(' OR '));
  await sql`CREATE TRIGGER jobs_tally_insert AFTER INSERT ON jobs BEGIN ${add('NEW.', 1)} END`.execute(db);
  await sql`CREATE TRIGGER jobs_tally_delete AFTER DELETE ON jobs BEGIN ${add('OLD.', -1)} END`.execute(db);
  await sql`CREATE TRIGGER jobs_tally_update AFTER UPDATE OF ${sql.raw(COUNTED.join(', '))} ON jobs WHEN ${changed}
    BEGIN ${add('OLD.', -1)} ${add('NEW.', 1)} END`.execute(db);
}

/**
 * PostgreSQL: inserts and deletes are counted per statement from their transition tables (one upsert per key
 * however many rows a statement writes: `db copy` and bulk loads stay fast), updates per row. Keys are
 * locked in one order (sorted), so two transactions moving jobs between the same keys cannot deadlock.
 */
async function postgresTriggers(db: Kysely<unknown>): Promise<void> {
  const upsert = sql`ON CONFLICT (printer_id, status, is_business) DO UPDATE SET jobs = t.jobs + EXCLUDED.jobs,
    print_time = t.print_time + EXCLUDED.print_time, used_grams = t.used_grams + EXCLUDED.used_grams`;
  const fromTable = (table: string, sign: 1 | -1) => {
    const s = sql.raw(String(sign));
    return sql`INSERT INTO job_tallies AS t (printer_id, status, is_business, jobs, print_time, used_grams)
      SELECT printer_id, status, is_business, ${s} * count(*), ${s} * coalesce(sum(actual_duration), 0), ${s} * coalesce(sum(${used('')}), 0)
      FROM ${sql.raw(table)} GROUP BY printer_id, status, is_business ORDER BY printer_id, status, is_business
      ${upsert};`;
  };
  await onPostgres(
    db,
    sql`CREATE FUNCTION printfarm_job_tallies_statement() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'INSERT' THEN ${fromTable('new_jobs', 1)}
        ELSE ${fromTable('old_jobs', -1)}
        END IF;
        RETURN NULL;
      END $$`,
  );
  const add = (row: 'OLD.' | 'NEW.', sign: 1 | -1) => {
    const r = sql.raw(row);
    const s = sql.raw(String(sign));
    return sql`INSERT INTO job_tallies AS t (printer_id, status, is_business, jobs, print_time, used_grams)
      VALUES (${r}printer_id, ${r}status, ${r}is_business, ${s}, ${s} * coalesce(${r}actual_duration, 0), ${s} * ${used(row)})
      ${upsert};`;
  };
  await onPostgres(
    db,
    sql`CREATE FUNCTION printfarm_job_tallies_row() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF (OLD.printer_id, OLD.status, OLD.is_business) <= (NEW.printer_id, NEW.status, NEW.is_business) THEN
          ${add('OLD.', -1)} ${add('NEW.', 1)}
        ELSE
          ${add('NEW.', 1)} ${add('OLD.', -1)}
        END IF;
        RETURN NULL;
      END $$`,
  );
  const changed = sql.raw(COUNTED.map((c) => `OLD.${c} IS DISTINCT FROM NEW.${c}`).join(' OR '));
  await onPostgres(db, sql`CREATE TRIGGER jobs_tally_insert AFTER INSERT ON jobs REFERENCING NEW TABLE AS new_jobs FOR EACH STATEMENT EXECUTE FUNCTION printfarm_job_tallies_statement()`);
  await onPostgres(db, sql`CREATE TRIGGER jobs_tally_delete AFTER DELETE ON jobs REFERENCING OLD TABLE AS old_jobs FOR EACH STATEMENT EXECUTE FUNCTION printfarm_job_tallies_statement()`);
  await onPostgres(
    db,
    sql`CREATE TRIGGER jobs_tally_update AFTER UPDATE OF ${sql.raw(COUNTED.join(', '))} ON jobs FOR EACH ROW WHEN (${changed}) EXECUTE FUNCTION printfarm_job_tallies_row()`,
  );
}
