/**
 * The two databases Printfarm runs on, and the few SQL spellings that differ
 * between them. Everything else is written once, in SQL both understand
 * (e.g. `sum(CASE WHEN ... THEN 1 ELSE 0 END)` instead of SQLite's sum of a
 * comparison). Times are stored as ISO 8601 text in both, booleans as 0/1
 * integers, JSON as text: the repositories see the same values either way.
 */
import { PostgresAdapter, sql, type Kysely, type RawBuilder, type Transaction } from 'kysely';

export type DialectName = 'sqlite' | 'postgres';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function dialectOf(db: Kysely<any>): DialectName {
  return db.getExecutor().adapter instanceof PostgresAdapter ? 'postgres' : 'sqlite';
}

/**
 * Runs several reads on one snapshot of the database, so that a page, its total and its summary agree
 * while a printer's catalog or a job is written meanwhile: on PostgreSQL a read-only REPEATABLE READ
 * transaction (each statement of a plain one sees its own snapshot); on SQLite a transaction on its one
 * connection, which other statements wait for.
 */
export function readSnapshot<DB, T>(db: Kysely<DB>, reads: (trx: Transaction<DB>) => Promise<T>): Promise<T> {
  const trx = db.transaction();
  return (dialectOf(db) === 'postgres' ? trx.setIsolationLevel('repeatable read').setAccessMode('read only') : trx).execute(reads);
}

/** True for a postgres:// (or postgresql://) connection string. */
export function isPostgresUrl(url: string): boolean {
  return /^postgres(ql)?:\/\//i.test(url);
}

/** A connection string with its password replaced, for logs and messages. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(unparsable database URL)';
  }
}

type Expr = RawBuilder<unknown>;

/** The dialect's spelling of what SQLite and PostgreSQL write differently. */
export interface SqlFlavour {
  name: DialectName;
  /** The largest of the values (SQLite's scalar max(), PostgreSQL's greatest()). */
  greatest(...values: Expr[]): Expr;
  /** The smallest of the values (SQLite's scalar min(), PostgreSQL's least()). */
  least(...values: Expr[]): Expr;
  /** Seconds from `from` to `to`, two ISO timestamps (negative when `to` is earlier). */
  secondsBetween(from: Expr, to: Expr): RawBuilder<number>;
  /** The JSON text column as JSON, NULL when it does not parse. */
  json(column: Expr): Expr;
  /** A value of a JSON object (from `json()`) as text, NULL when missing. */
  jsonText(json: Expr, key: string): Expr;
  /** A value of a JSON object (from `json()`) as a number, NULL when missing or not a number. */
  jsonNumber(json: Expr, key: string): Expr;
  /** True when the JSON text array `column` holds `value`, case ignored. */
  jsonArrayHasCi(column: Expr, value: string): RawBuilder<boolean>;
  /** `column LIKE pattern` with backslash escapes, case ignored for ASCII (SQLite's LIKE). */
  likeCi(column: Expr, pattern: string): RawBuilder<boolean>;
  /** Text with its ASCII letters in lower case, to sort by: ordered by code point (SQLite's BINARY). */
  sortKeyCi(text: Expr): Expr;
  /** Text to sort by, ordered by code point (SQLite's BINARY). */
  sortKey(text: Expr): Expr;
}

const SQLITE: SqlFlavour = {
  name: 'sqlite',
  greatest: (...v) => sql`max(${sql.join(v)})`,
  least: (...v) => sql`min(${sql.join(v)})`,
  secondsBetween: (from, to) => sql<number>`((julianday(${to}) - julianday(${from})) * 86400.0)`,
  json: (column) => sql`(CASE WHEN json_valid(${column}) THEN ${column} END)`,
  jsonText: (json, key) => sql`CAST(json_extract(${json}, ${sql.lit(`$.${key}`)}) AS TEXT)`,
  jsonNumber: (json, key) =>
    sql`(CASE WHEN json_type(${json}, ${sql.lit(`$.${key}`)}) IN ('integer', 'real') THEN json_extract(${json}, ${sql.lit(`$.${key}`)}) END)`,
  jsonArrayHasCi: (column, value) => sql<boolean>`exists (select 1 from json_each(${column}) as t where lower(t.value) = lower(${value}))`,
  likeCi: (column, pattern) => sql<boolean>`${column} LIKE ${pattern} ESCAPE '\\'`,
  sortKeyCi: (text) => sql`lower(${text})`,
  sortKey: (text) => text,
};

// Cast to text: a bare parameter's type is otherwise unknown to PostgreSQL in an IS NULL test.
const anyNull = (values: Expr[]) => sql.join(values.map((v) => sql`CAST(${v} AS text) IS NULL`), sql` OR `);

const POSTGRES: SqlFlavour = {
  name: 'postgres',
  // SQLite's scalar max() and min() are NULL when any value is: PostgreSQL's greatest() and least() skip NULLs.
  greatest: (...v) => sql`(CASE WHEN ${anyNull(v)} THEN NULL ELSE greatest(${sql.join(v)}) END)`,
  least: (...v) => sql`(CASE WHEN ${anyNull(v)} THEN NULL ELSE least(${sql.join(v)}) END)`,
  secondsBetween: (from, to) => sql<number>`extract(epoch FROM (CAST(${to} AS timestamptz) - CAST(${from} AS timestamptz)))::float8`,
  // printfarm_try_jsonb: created by migration 001 on PostgreSQL (a cast that answers NULL instead of failing).
  json: (column) => sql`printfarm_try_jsonb(${column})`,
  jsonText: (json, key) => sql`(${json} ->> ${sql.lit(key)})`,
  jsonNumber: (json, key) => sql`(CASE WHEN jsonb_typeof(${json} -> ${sql.lit(key)}) = 'number' THEN (${json} ->> ${sql.lit(key)})::float8 END)`,
  // Under the database's own locale (en_US, ICU: how servers are installed; only --locale=C ones agree with
  // SQLite) lower() and ILIKE fold every letter and ORDER BY follows the language's rules. The C collation
  // gives SQLite's answers whatever the server: ASCII-only folding, order by code point.
  jsonArrayHasCi: (column, value) =>
    sql<boolean>`exists (select 1 from jsonb_array_elements_text(CAST(${column} AS jsonb)) as t(value) where lower(t.value COLLATE "C") = lower(CAST(${value} AS text) COLLATE "C"))`,
  likeCi: (column, pattern) => sql<boolean>`(${column} COLLATE "C") ILIKE ${pattern} ESCAPE '\\'`,
  sortKeyCi: (text) => sql`lower(${text} COLLATE "C")`,
  sortKey: (text) => sql`(${text} COLLATE "C")`,
};

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function flavourOf(db: Kysely<any>): SqlFlavour {
  return dialectOf(db) === 'postgres' ? POSTGRES : SQLITE;
}
