/**
 * bench/stats: latency of GET /api/v1/statistics/overview with 10^4, 10^5
 * and 10^6 jobs, against a baseline measured in the same run on the same db
 * file: the very same SQL (the CompiledQuery list of
 * StatisticsRepository.overviewQueries, statements prepared once) run
 * straight on a second better-sqlite3 connection. The ratio endpoint / raw
 * is what the endpoint adds: HTTP, routing, validation, kysely, the
 * arithmetic and JSON.
 *
 * Data: 8 active printers, 2000 catalogued files, jobs spread evenly over the
 * last 730 days (inserted in time order per batch, as a farm writes them),
 * mostly completed, 5 materials, a third business. Sizes grow by topping up
 * the same file. Period `week` reads about 1% of the jobs, `year` about half.
 *
 * Options: --sizes 10000,100000,1000000  --periods week,year  --runs 15 (per cell, fewer when a run is slow)  --budget 20 (s per cell)
 */
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { createService, type Service } from '../service/app';
import { DB_FILENAME } from '../service/db';
import { DriverError, type DriverConfig, type PrinterDriver } from '../service/printers/driver';
import { resolvePeriod, type PeriodName } from '../service/statistics/period';
import { addJobs, seedFleet } from './stats-data';

// Kept importable from here (test/api/statistics-load.test.ts seeds with them).
export { addJobs, seedFleet };

interface Options {
  sizes: number[];
  periods: PeriodName[];
  runs: number;
  budgetS: number;
}

const TIME_ZONE = 'Europe/Berlin';

function parseArgs(argv: string[]): Options {
  const options: Options = { sizes: [10_000, 100_000, 1_000_000], periods: ['week', 'year'], runs: 15, budgetS: 20 };
  for (let i = 0; i < argv.length; i++) {
    const value = argv[i + 1] ?? '';
    switch (argv[i]) {
      case '--sizes':
        options.sizes = value.split(',').map((s) => Number(s.trim()));
        if (!options.sizes.length || options.sizes.some((n) => !Number.isInteger(n) || n <= 0)) throw new Error('--sizes needs e.g. 10000,100000');
        options.sizes.sort((a, b) => a - b);
        i++;
        break;
      case '--periods':
        options.periods = value.split(',').map((s) => s.trim()) as PeriodName[];
        if (options.periods.some((p) => !['day', 'week', 'month', 'year'].includes(p))) throw new Error('--periods takes day, week, month, year');
        i++;
        break;
      case '--runs':
        options.runs = Number(value);
        if (!Number.isInteger(options.runs) || options.runs < 3) throw new Error('--runs needs an integer >= 3');
        i++;
        break;
      case '--budget':
        options.budgetS = Number(value);
        if (!(options.budgetS > 0)) throw new Error('--budget needs seconds > 0');
        i++;
        break;
      default:
        throw new Error(`unknown option ${argv[i]}`);
    }
  }
  return options;
}

/** A printer that is never reached: the bench measures the database, not the network. */
export class InertDriver extends EventEmitter implements PrinterDriver {
  readonly state = null;
  readonly connection = 'disconnected' as const;
  constructor(readonly config: DriverConfig) {
    super();
  }
  connect = () => new Promise<void>(() => {});
  close = async () => {};
  private none = async (): Promise<never> => {
    throw new DriverError('OFFLINE', 'bench');
  };
  listFiles = this.none;
  download = this.none;
  pause = this.none;
  resume = this.none;
  stop = this.none;
  startPrint = this.none;
}

interface Cell {
  jobs: number;
  period: PeriodName;
  inPeriod: number;
  runs: number;
  endpointMs: number;
  rawMs: number;
  endpointP90: number;
  rawP90: number;
  /** GET /health p50 in the same cell: what any request costs (HTTP, express, logging) before its own work. */
  floorMs: number;
  /** The slowest GET /health sent while one overview ran (the event loop stays free: near floorMs). */
  healthDuringMax: number;
}

const median = (xs: number[]) => percentile(xs, 50);
function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
}

async function measure(service: Service, raw: BetterSqlite3.Database, jobs: number, period: PeriodName, options: Options): Promise<Cell> {
  const base = service.url.replace('localhost', '127.0.0.1');
  const url = `${base}/api/v1/statistics/overview?period=${period}`;
  const statements = new Map<string, BetterSqlite3.Statement>();
  const repo = service.context.store.statistics;

  // A keep-alive connection of its own per cell: one opened before a long seeding could be closed by the server meanwhile.
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const get = (target = url) =>
    new Promise<{ status: number; text: string }>((resolve, reject) => {
      http
        .get(target, { agent }, (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (text += chunk));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
          res.on('error', reject);
        })
        .on('error', reject);
    });
  const endpoint = async () => {
    const t = process.hrtime.bigint();
    const res = await get();
    const ms = Number(process.hrtime.bigint() - t) / 1e6;
    if (res.status !== 200) throw new Error(`overview answered ${res.status}: ${res.text}`);
    return { ms, total: (JSON.parse(res.text) as { jobs: { total_jobs: number } }).jobs.total_jobs };
  };
  // The same period the service resolves (same time zone, same clock), the same SQL, on its own connection.
  // Only the statements are timed: resolving the period and compiling the queries happen before.
  const direct = () => {
    const clock = new Date();
    const p = resolvePeriod({ period }, TIME_ZONE, clock);
    const queries = repo.overviewQueries({ from: p.from, to: p.to, now: clock.toISOString() });
    let total = 0;
    const t = process.hrtime.bigint();
    for (const [i, q] of queries.entries()) {
      let stmt = statements.get(q.sql);
      if (!stmt) statements.set(q.sql, (stmt = raw.prepare(q.sql)));
      const rows = stmt.all(...(q.parameters as unknown[])) as Array<Record<string, number>>;
      // The first query sums the jobs per material type.
      if (i === 0) total = rows.reduce((n, row) => n + Number(row.total_jobs), 0);
    }
    return { ms: Number(process.hrtime.bigint() - t) / 1e6, total };
  };

  try {
    // Warm-up: statement caches, page cache, JIT.
    for (let i = 0; i < 2; i++) {
      await endpoint();
      direct();
    }
    // The two must count the same jobs. A pair may straddle a day boundary (the period moves by a day between
    // them), so one mismatch is measured again and reported; a second one is a real disagreement.
    let first = [await endpoint(), direct()];
    if (first[0].total !== first[1].total) {
      process.stdout.write(`  (${period}: endpoint counted ${first[0].total} jobs, the raw query ${first[1].total}; measuring again)\n`);
      first = [await endpoint(), direct()];
      if (first[0].total !== first[1].total) throw new Error(`endpoint counted ${first[0].total} jobs, the raw query ${first[1].total} (period ${period}, ${jobs} jobs)`);
    }
    const pairMs = first[0].ms + first[1].ms;
    const runs = Math.max(3, Math.min(options.runs, Math.floor((options.budgetS * 1000) / Math.max(pairMs, 1))));
    const e: number[] = [first[0].ms];
    const r: number[] = [first[1].ms];
    for (let i = 1; i < runs; i++) {
      // Alternate which goes first, so that drift and cache effects hit both alike.
      if (i % 2) {
        r.push(direct().ms);
        e.push((await endpoint()).ms);
      } else {
        e.push((await endpoint()).ms);
        r.push(direct().ms);
      }
    }
    const floor: number[] = [];
    for (let i = 0; i < 20; i++) {
      const t = process.hrtime.bigint();
      await get(`${base}/api/v1/health`);
      if (i >= 5) floor.push(Number(process.hrtime.bigint() - t) / 1e6);
    }
    // GET /health on a second connection while one overview runs: what every other request waits meanwhile.
    // The overview runs in the read worker, so this should stay near the floor above.
    const side = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const healthDuring: number[] = [];
    try {
      let running = true;
      const overview = endpoint().finally(() => (running = false));
      while (running) {
        const t = process.hrtime.bigint();
        await new Promise<void>((resolve, reject) => http.get(`${base}/api/v1/health`, { agent: side }, (res) => res.resume().on('end', resolve)).on('error', reject));
        healthDuring.push(Number(process.hrtime.bigint() - t) / 1e6);
      }
      await overview;
    } finally {
      side.destroy();
    }
    return {
      jobs,
      period,
      inPeriod: first[0].total,
      healthDuringMax: Math.max(...healthDuring),
      runs,
      endpointMs: median(e),
      rawMs: median(r),
      endpointP90: percentile(e, 90),
      rawP90: percentile(r, 90),
      floorMs: median(floor),
    };
  } finally {
    agent.destroy();
  }
}

const fmt = (ms: number) => (ms < 10 ? ms.toFixed(2) : ms.toFixed(1));

/** The requests a dashboard makes all day, which run on the main thread: their cost must not grow with the history. */
const EVERYDAY = ['/api/v1/jobs', '/api/v1/jobs?status=completed', '/api/v1/jobs?printer_id=bench-1', '/api/v1/printers/bench-1', '/api/v1/printers'];

interface EverydayRow {
  jobs: number;
  /** p50 per path, and GET /health's p50 measured in between (the floor of any request). */
  p50: Record<string, number>;
  floorMs: number;
}

async function measureEveryday(service: Service, jobs: number, runs = 9): Promise<EverydayRow> {
  const base = service.url.replace('localhost', '127.0.0.1');
  const timed = async (url: string) => {
    const t = process.hrtime.bigint();
    const res = await fetch(base + url);
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`${url} answered ${res.status}`);
    return Number(process.hrtime.bigint() - t) / 1e6;
  };
  const p50: Record<string, number> = {};
  const floor: number[] = [];
  for (const url of EVERYDAY) {
    const times: number[] = [];
    for (let i = 0; i < runs; i++) {
      times.push(await timed(url));
      floor.push(await timed('/api/v1/health'));
    }
    p50[url] = median(times);
  }
  return { jobs, p50, floorMs: median(floor) };
}

function everydayTable(rows: EverydayRow[]): string {
  const lines = [
    `| jobs | ${EVERYDAY.map((u) => `GET ${u.replace('/api/v1', '')} p50 (ms) / x health`).join(' | ')} | GET /health p50 (ms) |`,
    `|---:|${EVERYDAY.map(() => '---:').join('|')}|---:|`,
  ];
  for (const r of rows) {
    lines.push(`| ${r.jobs.toLocaleString('en-US')} | ${EVERYDAY.map((u) => `${fmt(r.p50[u])} / ${(r.p50[u] / r.floorMs).toFixed(1)}`).join(' | ')} | ${fmt(r.floorMs)} |`);
  }
  return lines.join('\n');
}

function table(cells: Cell[]): string {
  const lines = [
    '| jobs | period | jobs in period | endpoint p50 / p90 (ms) | raw SQL p50 / p90 (ms) | ratio endpoint / raw (p50) | GET /health p50 (ms) | GET /health max during an overview (ms) | runs |',
    '|---:|---|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const c of cells) {
    lines.push(
      `| ${c.jobs.toLocaleString('en-US')} | ${c.period} | ${c.inPeriod.toLocaleString('en-US')} | ${fmt(c.endpointMs)} / ${fmt(c.endpointP90)} | ${fmt(c.rawMs)} / ${fmt(c.rawP90)} | ${(c.endpointMs / c.rawMs).toFixed(2)} | ${fmt(c.floorMs)} | ${fmt(c.healthDuringMax)} | ${c.runs} |`,
    );
  }
  return lines.join('\n');
}

export async function main(argv: string[]): Promise<void> {
  const options = parseArgs(argv);
  process.stdout.write(
    `bench/stats: GET /statistics/overview vs the same SQL on better-sqlite3; sizes ${options.sizes.join(', ')}; periods ${options.periods.join(', ')}; ` +
      `node ${process.version}, ${os.cpus().length} CPUs, load average ${os.loadavg()[0].toFixed(2)}\n`,
  );
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'printfarm-bench-stats-'));
  const service = await createService({
    host: '127.0.0.1',
    port: 0,
    dataDir,
    env: { TIMEZONE: TIME_ZONE },
    logLevel: 'silent',
    updateCheckUrl: 'http://127.0.0.1:9/unreachable',
    driverFactory: (_type, config) => new InertDriver(config),
  });
  // The raw baseline runs in this process and blocks it for seconds at 10^6 jobs: keep idle connections
  // open across that, or the server's 5 s keep-alive timeout races the next request (ECONNRESET).
  service.server.keepAliveTimeout = 10 * 60_000;
  const raw = new BetterSqlite3(path.join(dataDir, DB_FILENAME));
  raw.pragma('journal_mode = WAL');
  const cells: Cell[] = [];
  const everyday: EverydayRow[] = [];
  try {
    seedFleet(raw);
    let have = 0;
    for (const size of options.sizes) {
      const t0 = Date.now();
      addJobs(raw, size - have, size);
      have = size;
      // As a long-running service's automatic checkpoints would have: the jobs in the db file, not the WAL.
      raw.pragma('wal_checkpoint(TRUNCATE)');
      const mb = fs.statSync(path.join(dataDir, DB_FILENAME)).size / 1024 / 1024;
      process.stdout.write(`${size} jobs: seeded in ${((Date.now() - t0) / 1000).toFixed(1)} s (db ${mb.toFixed(0)} MB)\n`);
      for (const period of options.periods) {
        const cell = await measure(service, raw, size, period, options);
        cells.push(cell);
        process.stdout.write(
          `  ${period}: ${cell.inPeriod} jobs in period; endpoint p50 ${fmt(cell.endpointMs)} ms, raw p50 ${fmt(cell.rawMs)} ms, ratio ${(cell.endpointMs / cell.rawMs).toFixed(2)} (${cell.runs} runs)\n`,
        );
      }
      everyday.push(await measureEveryday(service, size));
    }
  } finally {
    raw.close();
    await service.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
  process.stdout.write(`\n${table(cells)}\n\n${everydayTable(everyday)}\n`);
  const missed = cells.filter((c) => c.endpointMs / c.rawMs > 2);
  process.stdout.write(
    `\nTarget (endpoint within 2x of the raw SQL): met in ${cells.length - missed.length} of ${cells.length} cells` +
      missed.map((c) => `; missed at ${c.jobs} jobs/${c.period}: raw SQL ${fmt(c.rawMs)} ms, endpoint ${fmt(c.endpointMs)} ms, GET /health ${fmt(c.floorMs)} ms`).join('') +
      '\n',
  );
}

if (require.main === module) {
  main(process.argv.slice(2)).catch((err) => {
    process.stderr.write(`${(err as Error).stack ?? err}\n`);
    process.exit(1);
  });
}
