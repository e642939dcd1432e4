/**
 * bench/stats on PostgreSQL (`npm run bench -- stats --db postgres`): the
 * statistics overview of the same farm on both databases, in one run. The
 * farm is seeded in SQLite exactly as bench/stats seeds it, then moved with
 * `printfarm db copy`'s copyDatabase into a fresh PostgreSQL database per
 * size; one service runs on each. Per cell: the SQLite endpoint, the
 * PostgreSQL endpoint, and the very same SQL (the PostgreSQL compilation of
 * StatisticsRepository.overviewQueries) run straight on a pg connection as
 * the baseline.
 *
 * Options: --sizes 10000,100000 --periods week,year --runs 9 --database-url postgres://... (an empty server's admin URL: databases are created on it)
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import { createService, type Service } from '../service/app';
import { DB_FILENAME } from '../service/db';
import { copyDatabase } from '../service/db/copy';
import { resolvePeriod, type PeriodName } from '../service/statistics/period';
import { startPostgres, type PostgresServer } from '../test/support/postgres-server';
import { addJobs, InertDriver, seedFleet } from './stats';

const TIME_ZONE = 'Europe/Berlin';

interface Options {
  sizes: number[];
  periods: PeriodName[];
  runs: number;
  adminUrl?: string;
}

function parseArgs(argv: string[]): Options {
  const o: Options = { sizes: [10_000, 100_000], periods: ['week', 'year'], runs: 9 };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1] ?? ''];
    if (flag === '--db') {
      if (value !== 'postgres') throw new Error('--db takes postgres');
    } else if (flag === '--sizes') o.sizes = value.split(',').map(Number).sort((a, b) => a - b);
    else if (flag === '--periods') o.periods = value.split(',') as PeriodName[];
    else if (flag === '--runs') o.runs = Number(value);
    else if (flag === '--database-url') o.adminUrl = value;
    else throw new Error(`unknown option ${flag}`);
  }
  if (o.sizes.some((n) => !Number.isInteger(n) || n <= 0) || !(o.runs >= 3)) throw new Error('--sizes needs e.g. 10000,100000; --runs at least 3');
  return o;
}

const startOn = (dataDir: string, databaseUrl?: string): Promise<Service> =>
  createService({
    host: '127.0.0.1',
    port: 0,
    dataDir,
    databaseUrl,
    env: { TIMEZONE: TIME_ZONE },
    logLevel: 'silent',
    updateCheckUrl: 'http://127.0.0.1:9/unreachable',
    driverFactory: (_type, config) => new InertDriver(config),
  });

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - t) / 1e6;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmt = (ms: number) => (ms < 10 ? ms.toFixed(2) : ms.toFixed(1));

async function overview(service: Service, period: PeriodName): Promise<number> {
  const res = await fetch(`${service.url.replace('localhost', '127.0.0.1')}/api/v1/statistics/overview?period=${period}`);
  const body = (await res.json()) as { jobs: { total_jobs: number } };
  if (res.status !== 200) throw new Error(`overview answered ${res.status}`);
  return body.jobs.total_jobs;
}

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  let server: PostgresServer | null = null;
  const admin = o.adminUrl ?? (server = await startPostgres()).adminUrl;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'printfarm-bench-stats-pg-'));
  const rows: string[] = [];
  process.stdout.write(`bench/stats --db postgres: sizes ${o.sizes.join(', ')}; periods ${o.periods.join(', ')}; ${os.cpus().length} CPUs, load average ${os.loadavg()[0].toFixed(2)}\n`);
  try {
    const sqliteService = await startOn(dir);
    const raw = new BetterSqlite3(path.join(dir, DB_FILENAME));
    let have = 0;
    try {
      seedFleet(raw);
      for (const size of o.sizes) {
        addJobs(raw, size - have, size);
        have = size;
        raw.pragma('wal_checkpoint(TRUNCATE)');
        const name = `bench_stats_${size}`;
        const adminClient = new pg.Client({ connectionString: admin });
        await adminClient.connect();
        await adminClient.query(`DROP DATABASE IF EXISTS ${name}`);
        await adminClient.query(`CREATE DATABASE ${name}`);
        await adminClient.end();
        const url = Object.assign(new URL(admin), { pathname: `/${name}` }).toString();
        const t0 = Date.now();
        await copyDatabase(path.join(dir, DB_FILENAME), url, { batchSize: 2000 });
        process.stdout.write(`${size} jobs: copied to PostgreSQL in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
        const pgDir = fs.mkdtempSync(path.join(os.tmpdir(), 'printfarm-bench-stats-pgdata-'));
        const pgService = await startOn(pgDir, url);
        const direct = new pg.Client({ connectionString: url });
        await direct.connect();
        await direct.query('ANALYZE');
        try {
          for (const period of o.periods) {
            const baseline = async () => {
              const clock = new Date();
              const p = resolvePeriod({ period }, TIME_ZONE, clock);
              const queries = pgService.context.store.statistics.overviewQueries({ from: p.from, to: p.to, now: clock.toISOString() });
              return timed(async () => {
                for (const q of queries) await direct.query(q.sql, q.parameters as unknown[]);
              });
            };
            const [a, b] = [await overview(sqliteService, period), await overview(pgService, period)];
            if (a !== b) process.stdout.write(`  (${period}: SQLite counted ${a} jobs, PostgreSQL ${b})\n`);
            const s: number[] = [];
            const e: number[] = [];
            const r: number[] = [];
            for (let i = 0; i < o.runs; i++) {
              s.push(await timed(() => overview(sqliteService, period)));
              e.push(await timed(() => overview(pgService, period)));
              r.push(await baseline());
            }
            const row = `| ${size.toLocaleString('en-US')} | ${period} | ${b.toLocaleString('en-US')} | ${fmt(median(s))} | ${fmt(median(e))} | ${fmt(median(r))} | ${(median(e) / median(r)).toFixed(2)} | ${(median(e) / median(s)).toFixed(2)} |`;
            rows.push(row);
            process.stdout.write(`  ${row}\n`);
          }
        } finally {
          await direct.end();
          await pgService.close();
          fs.rmSync(pgDir, { recursive: true, force: true });
        }
      }
    } finally {
      raw.close();
      await sqliteService.close();
    }
    process.stdout.write(
      '\n| jobs | period | jobs in period | SQLite endpoint p50 (ms) | PostgreSQL endpoint p50 (ms) | PostgreSQL raw SQL p50 (ms) | PostgreSQL endpoint / raw | PostgreSQL / SQLite endpoint |\n' +
        '|---:|---|---:|---:|---:|---:|---:|---:|\n' +
        rows.join('\n') +
        '\n',
    );
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
    await server?.stop();
  }
}

main().catch((err) => {
  process.stderr.write(`bench/stats --db postgres: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
