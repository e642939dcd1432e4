/**
 * `printfarm db copy --from ./data/printfarm.db --to postgres://...`: moves a
 * farm's SQLite database (or an aggregator's) into an empty PostgreSQL
 * database. Both are first brought to the current schema by the same
 * migrations the services run; then every table is copied in foreign-key
 * order, in batches, one transaction per table, ids kept. Identity sequences
 * are moved past the copied ids (new rows continue after them), and the row
 * counts of both sides are compared at the end. A target with data in it is
 * refused before anything is written.
 */
import fs from 'node:fs';
import BetterSqlite3 from 'better-sqlite3';
import { sql, type Kysely, type Migration } from 'kysely';
import type * as AggregatorDb from '../aggregator/db';
import { openPostgres, openSqlite, type PostgresConnection, type SqliteConnection } from './connection';
import { MIGRATIONS } from './migrations';

/** Kysely's own bookkeeping: each side has its own (the migrations ran on both). */
const SKIPPED = new Set(['kysely_migration', 'kysely_migration_lock']);
/** Kept by the target's own triggers from the rows copied into it (migration 016): copying them too would count twice. */
const DERIVED = new Set(['job_tallies']);
/** PostgreSQL takes at most 65535 parameters per statement. */
const MAX_PARAMETERS = 60_000;

export interface CopyOptions {
  /** Rows per INSERT (default 1000; fewer for wide tables, to stay under PostgreSQL's parameter limit). */
  batchSize?: number;
  /** Told after each batch: table, rows copied so far, rows in the table. */
  onProgress?: (table: string, copied: number, total: number) => void;
}

export interface CopyResult {
  schema: 'service' | 'aggregator';
  tables: { table: string; rows: number }[];
}

export class CopyError extends Error {}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/** The migrations the source was made with: the aggregator's database has its own. */
function schemaOf(file: string): { schema: CopyResult['schema']; migrations: Record<string, Migration> } {
  const probe = new BetterSqlite3(file, { readonly: true, fileMustExist: true });
  try {
    const hasTable = (name: string) => probe.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?`).get(name) !== undefined;
    if (!(hasTable('submissions') && hasTable('rate_limits'))) return { schema: 'service', migrations: MIGRATIONS };
    // Loaded only for an aggregator database: the published Node-RED package leaves the aggregation service out.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { AGGREGATOR_MIGRATIONS } = require('../aggregator/db') as typeof AggregatorDb;
    return { schema: 'aggregator', migrations: AGGREGATOR_MIGRATIONS };
  } finally {
    probe.close();
  }
}

/** The source's tables, parents before children (by their foreign keys), and each one's columns. */
function tablesInOrder(source: SqliteConnection<unknown>): { table: string; columns: string[] }[] {
  const db = source.sqlite;
  const names = (db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`).all() as { name: string }[])
    .map((r) => r.name)
    .filter((n) => !SKIPPED.has(n) && !DERIVED.has(n));
  const parents = new Map(names.map((n) => [n, (db.pragma(`foreign_key_list("${n}")`) as { table: string }[]).map((fk) => fk.table).filter((t) => t !== n)]));
  const ordered: string[] = [];
  const visit = (name: string, path: Set<string>) => {
    if (ordered.includes(name) || path.has(name)) return;
    path.add(name);
    for (const parent of parents.get(name) ?? []) if (names.includes(parent)) visit(parent, path);
    ordered.push(name);
  };
  for (const name of names) visit(name, new Set());
  return ordered.map((table) => ({ table, columns: (db.pragma(`table_info("${table}")`) as { name: string }[]).map((c) => c.name) }));
}

/**
 * Rows a fresh target holds by itself: those its migrations insert (usage_state's single row). Anything else
 * means the target is in use.
 */
async function targetRows(db: AnyDb, table: string): Promise<number> {
  if (table === 'usage_state') {
    const { rows } = await sql<{ n: number }>`SELECT count(*) AS n FROM usage_state WHERE NOT (id = 1 AND opted_in = 0 AND installation_id IS NULL AND submission_count = 0)`.execute(db);
    return Number(rows[0].n);
  }
  const { rows } = await sql<{ n: number }>`SELECT count(*) AS n FROM ${sql.table(table)}`.execute(db);
  return Number(rows[0].n);
}

async function countRows(db: AnyDb, table: string): Promise<number> {
  const { rows } = await sql<{ n: number }>`SELECT count(*) AS n FROM ${sql.table(table)}`.execute(db);
  return Number(rows[0].n);
}

/** Moves each identity column's sequence past the largest copied id. */
async function advanceSequences(db: AnyDb, tables: string[]): Promise<void> {
  const { rows } = await sql<{ table_name: string; column_name: string }>`
    SELECT table_name, column_name FROM information_schema.columns
    WHERE table_schema = current_schema() AND (is_identity = 'YES' OR column_default LIKE 'nextval(%')`.execute(db);
  for (const { table_name: table, column_name: column } of rows) {
    if (!tables.includes(table)) continue;
    await sql`SELECT setval(pg_get_serial_sequence(${table}, ${column}), coalesce((SELECT max(${sql.ref(column)}) FROM ${sql.table(table)}), 0) + 1, false)`.execute(db);
  }
}

async function copyTable(source: SqliteConnection<unknown>, target: PostgresConnection<unknown>, table: string, columns: string[], options: CopyOptions): Promise<number> {
  const total = (source.sqlite.prepare(`SELECT count(*) AS n FROM "${table}"`).get() as { n: number }).n;
  const batchSize = Math.max(1, Math.min(options.batchSize ?? 1000, Math.floor(MAX_PARAMETERS / columns.length)));
  const list = columns.map((c) => `"${c}"`).join(', ');
  // In rowid order (id order where the table has an integer id), a batch after the last one's rowid.
  const read = source.sqlite.prepare(`SELECT rowid AS "__rowid", ${list} FROM "${table}" WHERE rowid > ? ORDER BY rowid LIMIT ?`);
  let copied = 0;
  let after = Number.MIN_SAFE_INTEGER;
  await target.db.transaction().execute(async (trx) => {
    // The target's own seed row (usage_state) gives way to the farm's.
    if (table === 'usage_state') await sql`DELETE FROM usage_state`.execute(trx);
    for (;;) {
      const rows = read.all(after, batchSize) as ({ __rowid: number } & Record<string, unknown>)[];
      if (rows.length === 0) break;
      after = rows[rows.length - 1].__rowid;
      await (trx as AnyDb)
        .insertInto(table)
        .values(rows.map(({ __rowid: _rowid, ...row }) => row))
        .execute();
      copied += rows.length;
      options.onProgress?.(table, copied, total);
      if (rows.length < batchSize) break;
    }
  });
  return copied;
}

export async function copyDatabase(fromFile: string, toUrl: string, options: CopyOptions = {}): Promise<CopyResult> {
  if (!fs.existsSync(fromFile)) throw new CopyError(`${fromFile}: no such database file`);
  const { schema, migrations } = schemaOf(fromFile);
  // The source gets the current schema first (as the service would at its next start), so both sides match.
  const source = await openSqlite<unknown>(fromFile, migrations);
  try {
    const target = await openPostgres<unknown>(toUrl, migrations, 2);
    try {
      const tables = tablesInOrder(source);
      for (const { table } of tables) {
        const n = await targetRows(target.db, table);
        if (n > 0) throw new CopyError(`the target database is not empty (${table} has ${n} rows): db copy only fills an empty database`);
      }
      const result: CopyResult = { schema, tables: [] };
      for (const { table, columns } of tables) result.tables.push({ table, rows: await copyTable(source, target, table, columns, options) });
      await advanceSequences(
        target.db,
        tables.map((t) => t.table),
      );
      for (const { table } of tables) {
        const [from, to] = [await countRows(source.db, table), await countRows(target.db, table)];
        if (from !== to) throw new CopyError(`row counts differ after the copy: ${table} has ${from} rows in the source, ${to} in the target`);
      }
      return result;
    } finally {
      await target.close();
    }
  } finally {
    await source.close();
  }
}
