/**
 * bench/aggregator: the aggregation service on PostgreSQL.
 *
 * 1. Submissions per second into 1 and 2 `printfarm aggregator` processes on
 *    one database that already holds `--installations` installations (10^5),
 *    a load of `--concurrency` clients in round robin over the instances for
 *    `--seconds`. The ratio 2 / 1 is what the second instance adds on this
 *    machine (on 2 cores the load generator and PostgreSQL share them).
 * 2. The /stats views' latency at `--submissions` (10^6) stored submissions,
 *    against GET /health of the same instance in the same run.
 * 3. Migration 003 on those submissions (bench/aggregator-migration.ts).
 *
 * PostgreSQL: `--database-url` (an empty database, emptied per phase), or a
 * throwaway server of the Debian package's binaries (test/support).
 *
 * Options: --installations 100000 --submissions 1000000 --seconds 10 --concurrency 32 --runs 5 --database-url postgres://...
 * --db sqlite: parts 2 and 3 only, on one instance's SQLite file (bench/aggregator-sqlite.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { Kysely, PostgresDialect } from 'kysely';
import { backfillDerived } from '../service/aggregator/derived-schema';
import { seedSqlite, timeSqliteMigration003 } from './aggregator-sqlite';
import { migrationReport, timeMigration003 } from './aggregator-migration';
import { startPostgres, type PostgresServer } from '../test/support/postgres-server';

interface Options {
  installations: number;
  submissions: number;
  seconds: number;
  concurrency: number;
  runs: number;
  databaseUrl?: string;
  db: 'postgres' | 'sqlite';
}

const KEY = 'bench-key';
const ADMIN_KEY = 'bench-admin-key';
const DAY_MS = 86_400_000;

function parseArgs(argv: string[]): Options {
  const o: Options = { installations: 100_000, submissions: 1_000_000, seconds: 10, concurrency: 32, runs: 5, db: 'postgres' };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1] ?? ''];
    const int = () => {
      const n = Number(value);
      if (!Number.isInteger(n) || n <= 0) throw new Error(`${flag} needs a positive whole number`);
      return n;
    };
    if (flag === '--installations') o.installations = int();
    else if (flag === '--submissions') o.submissions = int();
    else if (flag === '--seconds') o.seconds = int();
    else if (flag === '--concurrency') o.concurrency = int();
    else if (flag === '--runs') o.runs = int();
    else if (flag === '--database-url') o.databaseUrl = value;
    else if (flag === '--db' && (value === 'postgres' || value === 'sqlite')) o.db = value;
    else throw new Error(`unknown option ${flag}`);
  }
  return o;
}

/** One `printfarm aggregator` process (the compiled CLI of this bench build). */
function startInstance(databaseUrl: string | null, dataDir: string): Promise<{ url: string; child: ChildProcess; stop(): Promise<void> }> {
  const cli = path.join(__dirname, '..', 'service', 'cli.js');
  const child = spawn(
    process.execPath,
    ['-e', `require(${JSON.stringify(cli)}).main(process.argv.slice(1))`, 'aggregator', '--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir, ...(databaseUrl ? ['--database-url', databaseUrl] : [])],
    { env: { PATH: process.env.PATH, AGGREGATOR_SUBMIT_KEY: KEY, AGGREGATOR_ADMIN_KEY: ADMIN_KEY, AGGREGATOR_RATE_LIMIT_PER_HOUR: '100000', AGGREGATOR_RATE_LIMIT_PER_ADDRESS: '10000000', AGGREGATOR_RATE_LIMIT_PER_KEY: '10000000' }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return new Promise((resolve, reject) => {
    child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      const m = out.match(/Health\s+(http:\/\/\S+)\/health/);
      if (m) resolve({ url: m[1], child, stop: async () => (child.kill('SIGTERM'), exited) });
    });
    exited.then(() => reject(new Error(`aggregator exited:\n${out}`)));
  });
}

/** Installation i's id: a valid UUID (v4 layout) that SQL and the load generator both derive from i. */
const uuidOf = (i: number) => `00000000-0000-4000-8000-${i.toString(16).padStart(12, '0')}`;
const uuidSql = (expr: string) => `'00000000-0000-4000-8000-' || lpad(to_hex(${expr}), 12, '0')`;
const iso = (expr: string) => `to_char(to_timestamp((${expr}) / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** Installations and their submissions, written by PostgreSQL itself (generate_series), spread over 90 days, and what the service derives from them. */
async function seed(client: pg.Client, url: string, installations: number, submissions: number, nowMs: number): Promise<void> {
  const span = 90 * DAY_MS;
  // Each period ends where the installation's next one starts (the rows of one installation are this far
  // apart at least): periods that overlap would count once (migration 003), so the seeded data has none.
  const period = Math.floor((installations * span) / Math.max(1, submissions));
  await client.query(`
    INSERT INTO submissions (installation_id, received_at, received_ms, submitted_at, schema_version, period_start, period_end, app_version, platform,
      deployment_mode, country_code, printer_count, printer_types, printer_type_counts, total_jobs_created, total_jobs_completed, total_jobs_failed,
      total_files_downloaded, total_files_uploaded, uptime_hours, feature_usage, event_counts, error_count, submitted_ms, period_start_ms, period_end_ms)
    SELECT ${uuidSql(`s % ${installations}`)}, ${iso('t')}, t, ${iso('t')}, '1.0', ${iso(`t - ${period}`)}, ${iso('t')},
      (ARRAY['1.0.0', '1.1.0', '1.2.0'])[1 + s % 3], (ARRAY['linux', 'darwin', 'win32'])[1 + s % 3], (ARRAY['standalone', 'node-red', 'docker'])[1 + s % 3],
      (ARRAY['DE', 'US', 'FR', 'XX'])[1 + s % 4], 1 + s % 20, '["bambu_lab","prusa_core"]', '{"bambu_lab":1,"prusa_core":1}', 10, 8, 1, 3, 0, 24.5,
      '{"queue":true,"previews":false}', CASE WHEN s % 10 = 0 THEN '{"error":2,"error_download_failed":2}' ELSE '{}' END, CASE WHEN s % 10 = 0 THEN 2 ELSE 0 END,
      t, t - ${period}, t
    FROM (SELECT s, ${nowMs} - ((s::bigint * ${span}) / ${Math.max(1, submissions)}) AS t FROM generate_series(0, ${submissions - 1}) AS s) AS g`);
  await client.query(`
    INSERT INTO installations (installation_id, first_seen_at, first_seen_ms, last_seen_at, last_seen_ms, submissions, app_version, platform, deployment_mode, country_code, printer_count)
    SELECT installation_id, min(received_at), min(received_ms), max(received_at), max(received_ms), count(*), max(app_version), max(platform), max(deployment_mode), max(country_code), max(printer_count)
    FROM submissions GROUP BY installation_id`);
  await client.query(`
    INSERT INTO installations (installation_id, first_seen_at, first_seen_ms, last_seen_at, last_seen_ms, submissions, app_version, platform, deployment_mode, country_code, printer_count)
    SELECT ${uuidSql('i')}, ${iso(String(nowMs - span))}, ${nowMs - span}, ${iso(String(nowMs - span))}, ${nowMs - span}, 0, '1.0.0', 'linux', 'standalone', 'DE', 1
    FROM generate_series(0, ${installations - 1}) AS i ON CONFLICT DO NOTHING`);
  // What the service derives on submit (migration 002), derived here from the seeded rows the same way its migration backfills.
  await client.query('DELETE FROM latest_submissions; DELETE FROM daily_totals');
  const kysely = new Kysely<unknown>({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: url, max: 1 }) }) });
  try {
    await backfillDerived(kysely);
  } finally {
    await kysely.destroy();
  }
  // A database that lives has been vacuumed by autovacuum: the visibility map lets the cover index answer alone.
  await client.query('VACUUM ANALYZE');
}

async function resetDatabase(client: pg.Client): Promise<void> {
  await client.query('DROP SCHEMA public CASCADE; CREATE SCHEMA public');
}

function body(installation: string, n: number, nowMs: number) {
  const at = new Date(nowMs + n).toISOString();
  return JSON.stringify({
    installation_id: installation,
    submitted_at: at,
    schema_version: '1.0',
    // The millisecond before: one installation's submissions must not overlap, or each would replace the one before.
    period_start: new Date(nowMs + n - 1).toISOString(),
    period_end: at,
    app_version: '1.2.0',
    platform: 'linux',
    deployment_mode: 'docker',
    country_code: 'DE',
    printer_count: 4,
    printer_types: ['bambu_lab'],
    printer_type_counts: { bambu_lab: 4 },
    total_jobs_created: 12,
    total_jobs_completed: 10,
    total_jobs_failed: 1,
    total_files_downloaded: 2,
    total_files_uploaded: 1,
    uptime_hours: 168,
    feature_usage: { queue: true },
    event_counts: {},
  });
}

/** Submissions per second into `urls` in round robin, `concurrency` clients for `seconds`. */
async function throughput(urls: string[], o: Options): Promise<{ rate: number; errors: number }> {
  const nowMs = Date.now();
  const until = Date.now() + o.seconds * 1000;
  let sent = 0;
  let ok = 0;
  let errors = 0;
  const client = async (c: number) => {
    while (Date.now() < until) {
      const n = sent++;
      const installation = uuidOf((n * 7919 + c) % o.installations);
      const res = await fetch(`${urls[n % urls.length]}/submit`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': KEY }, body: body(installation, n, nowMs) });
      const text = await res.text();
      if (res.status === 201) ok++;
      else if (errors++ === 0) process.stderr.write(`bench/aggregator: first refusal ${res.status} ${text.slice(0, 300)}\n`);
    }
  };
  const started = Date.now();
  await Promise.all(Array.from({ length: o.concurrency }, (_, c) => client(c)));
  return { rate: ok / ((Date.now() - started) / 1000), errors };
}

async function timeGet(url: string, runs: number): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = process.hrtime.bigint();
    const res = await fetch(url, { headers: { 'x-api-key': ADMIN_KEY } });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`${url}: ${res.status}`);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  return times.sort((a, b) => a - b)[Math.floor(times.length / 2)];
}

const VIEWS = ['summary', 'installations', 'versions', 'printers', 'features', 'errors', 'anomalies', 'overview', 'version-migration', 'feature-trends'];

/** The views' median latency against GET /health of the same instance. */
async function timeViews(url: string, o: Options): Promise<void> {
  const health = await timeGet(`${url}/health`, o.runs * 3);
  process.stdout.write('| View (days=30) | Median ms | Ratio to GET /health |\n|---|---|---|\n');
  for (const view of VIEWS) {
    const ms = await timeGet(`${url}/stats/${view}?days=30`, o.runs);
    process.stdout.write(`| /stats/${view} | ${ms.toFixed(0)} | ${(ms / health).toFixed(0)} |\n`);
  }
  process.stdout.write(`| GET /health | ${health.toFixed(1)} | 1 |\n`);
}

/** --db sqlite: the views of one instance on its SQLite file (scale-out needs PostgreSQL). */
async function mainSqlite(o: Options): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'printfarm-bench-agg-'));
  try {
    process.stdout.write(`bench/aggregator: SQLite; ${o.installations} installations; stats at ${o.submissions} submissions\n\n`);
    const instance = await startInstance(null, dir); // migrates the empty file
    try {
      const t0 = Date.now();
      await seedSqlite(dir, o.installations, o.submissions, Date.now());
      process.stdout.write(`seeded ${o.submissions} submissions in ${((Date.now() - t0) / 1000).toFixed(1)} s\n\n`);
      await timeViews(instance.url, o);
    } finally {
      await instance.stop();
    }
    process.stdout.write(migrationReport(await timeSqliteMigration003(dir)));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  if (o.db === 'sqlite') return mainSqlite(o);
  let server: PostgresServer | null = null;
  const url = o.databaseUrl ?? (await (server = await startPostgres()).createDatabase('bench_aggregator'));
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const dirs = [0, 1].map(() => fs.mkdtempSync(path.join(os.tmpdir(), 'printfarm-bench-agg-')));
  try {
    process.stdout.write(`bench/aggregator: PostgreSQL; ${o.installations} installations, ${o.concurrency} clients for ${o.seconds} s per cell; stats at ${o.submissions} submissions\n\n`);
    const rates: { instances: number; rate: number; errors: number }[] = [];
    for (const count of [1, 2]) {
      await resetDatabase(client);
      const first = await startInstance(url, dirs[0]); // migrates the empty database
      const instances = [first, ...(count === 2 ? [await startInstance(url, dirs[1])] : [])];
      try {
        await seed(client, url, o.installations, o.installations, Date.now());
        rates.push({ instances: count, ...(await throughput(instances.map((i) => i.url), o)) });
      } finally {
        await Promise.all(instances.map((i) => i.stop()));
      }
    }
    process.stdout.write('| Instances | Submissions/s | Refused or failed | Ratio to 1 instance |\n|---|---|---|---|\n');
    for (const r of rates) process.stdout.write(`| ${r.instances} | ${r.rate.toFixed(0)} | ${r.errors} | ${(r.rate / rates[0].rate).toFixed(2)} |\n`);

    await resetDatabase(client);
    const instance = await startInstance(url, dirs[0]);
    try {
      const t0 = Date.now();
      await seed(client, url, o.installations, o.submissions, Date.now());
      process.stdout.write(`\nseeded ${o.submissions} submissions in ${((Date.now() - t0) / 1000).toFixed(1)} s\n\n`);
      await timeViews(instance.url, o);
    } finally {
      await instance.stop();
    }
    const kysely = new Kysely<unknown>({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: url, max: 1 }) }) });
    try {
      process.stdout.write(migrationReport(await timeMigration003(kysely)));
    } finally {
      await kysely.destroy();
    }
  } finally {
    await client.end();
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
    await server?.stop();
  }
}

main().catch((err) => {
  process.stderr.write(`bench/aggregator: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
