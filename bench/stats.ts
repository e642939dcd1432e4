/**
 * bench/stats: latency of GET /api/v1/statistics/overview with 10^4 to 10^7 jobs, on SQLite (default) or
 * PostgreSQL (`--db postgres`), against a baseline measured in the same run on the same database: the
 * very same SQL (the CompiledQuery list of StatisticsRepository.overviewQueries) run straight on a
 * connection of the bench's own. The ratio endpoint / raw is what the endpoint adds: HTTP, routing,
 * validation, kysely, the hop to the statistics reader, the arithmetic and JSON. Then the requests a
 * dashboard makes all day (GET /jobs, a printer's detail, ...), p50 and p99.
 *
 * Data (bench/stats-data.ts): 8 active printers, 2000 catalogued files, jobs spread over the last 730
 * days, written by the database itself (INSERT ... SELECT), the same rows on both databases. Sizes
 * grow by topping up the same database. Period `week` reads about 1% of the jobs, `year` about half.
 *
 * Exits non-zero, with one line per miss, when a target of bench/stats-report.ts is missed.
 *
 * Options: --sizes 10000,100000,1000000  --periods week,year  --runs 15 (per cell, fewer when a run is slow)
 *   --budget 20 (s per cell)  --everyday-runs 21  --db sqlite|postgres
 *   --database-url postgres://... (with --db postgres: an admin URL of a server to create the database on;
 *   default a throwaway server from the Debian binaries, see test/support/postgres-server.ts)
 */
import os from 'node:os';
import type { PeriodName } from '../service/statistics/period';
import { postgresBackend, sqliteBackend, type StatsBackend } from './stats-backends';
import { measureEveryday, measureOverview, type Cell, type EverydayRow } from './stats-measure';
import { everydayTable, fmt, missedTargets, overviewTable } from './stats-report';

// Kept importable from here (test/api/statistics-load.test.ts seeds with them).
export { addJobs, seedFleet } from './stats-data';
export { InertDriver } from './stats-backends';

interface Options {
  db: 'sqlite' | 'postgres';
  databaseUrl?: string;
  sizes: number[];
  periods: PeriodName[];
  runs: number;
  budgetS: number;
  everydayRuns: number;
}

function parseArgs(argv: string[]): Options {
  const o: Options = { db: 'sqlite', sizes: [10_000, 100_000, 1_000_000], periods: ['week', 'year'], runs: 15, budgetS: 20, everydayRuns: 21 };
  const count = (flag: string, value: string, min: number) => {
    const v = Number(value);
    if (!Number.isInteger(v) || v < min) throw new Error(`${flag} needs an integer >= ${min}`);
    return v;
  };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1] ?? ''];
    switch (flag) {
      case '--db':
        if (value !== 'sqlite' && value !== 'postgres') throw new Error('--db takes sqlite or postgres');
        o.db = value;
        break;
      case '--database-url':
        o.databaseUrl = value;
        break;
      case '--sizes':
        o.sizes = value.split(',').map((s) => Number(s.trim()));
        if (!o.sizes.length || o.sizes.some((s) => !Number.isInteger(s) || s <= 0)) throw new Error('--sizes needs e.g. 10000,100000');
        o.sizes.sort((a, b) => a - b);
        break;
      case '--periods':
        o.periods = value.split(',').map((s) => s.trim()) as PeriodName[];
        if (o.periods.some((p) => !['day', 'week', 'month', 'year'].includes(p))) throw new Error('--periods takes day, week, month, year');
        break;
      case '--runs':
        o.runs = count(flag, value, 3);
        break;
      case '--everyday-runs':
        o.everydayRuns = count(flag, value, 3);
        break;
      case '--budget':
        o.budgetS = Number(value);
        if (!(o.budgetS > 0)) throw new Error('--budget needs seconds > 0');
        break;
      default:
        throw new Error(`unknown option ${flag}`);
    }
  }
  if (o.databaseUrl && o.db !== 'postgres') throw new Error('--database-url goes with --db postgres');
  return o;
}

const load = () => os.loadavg()[0].toFixed(2);

/** Grows the farm to `size` jobs and says how long that took. */
async function grow(backend: StatsBackend, size: number, have: number): Promise<void> {
  const t0 = Date.now();
  let last = t0;
  const bytes = await backend.grow(size, (jobs) => {
    // A line every 30 s: 10^7 jobs take minutes.
    if (Date.now() - last < 30_000) return;
    last = Date.now();
    process.stdout.write(`  ... ${jobs.toLocaleString('en-US')} jobs written (${((last - t0) / 1000).toFixed(0)} s)\n`);
  });
  const s = (Date.now() - t0) / 1000;
  process.stdout.write(
    `${size.toLocaleString('en-US')} jobs: ${(size - have).toLocaleString('en-US')} written in ${s.toFixed(1)} s ` +
      `(${Math.round((size - have) / Math.max(s, 0.001)).toLocaleString('en-US')} rows/s; database ${(bytes / 1024 / 1024).toFixed(0)} MB; load average ${load()})\n`,
  );
}

export async function main(argv: string[]): Promise<number> {
  const o = parseArgs(argv);
  const backend = o.db === 'postgres' ? await postgresBackend(o.databaseUrl) : await sqliteBackend();
  process.stdout.write(
    `bench/stats on ${backend.name}: GET /statistics/overview vs the same SQL on the bench's own connection; sizes ${o.sizes.join(', ')}; ` +
      `periods ${o.periods.join(', ')}; node ${process.version}, ${os.cpus().length} CPUs, load average ${load()}\n`,
  );
  const cells: Cell[] = [];
  const everyday: EverydayRow[] = [];
  try {
    let have = 0;
    for (const size of o.sizes) {
      await grow(backend, size, have);
      have = size;
      for (const period of o.periods) {
        const c = await measureOverview(backend, size, period, o.runs, o.budgetS);
        cells.push(c);
        process.stdout.write(
          `  ${period}: ${c.inPeriod} jobs in period; endpoint p50 ${fmt(c.endpointMs)} ms, raw p50 ${fmt(c.rawMs)} ms, ratio ${(c.endpointMs / c.rawMs).toFixed(2)} (${c.runs} runs)\n`,
        );
      }
      const row = await measureEveryday(backend, size, o.everydayRuns);
      everyday.push(row);
      process.stdout.write(
        `  GET /jobs p50 ${fmt(row.p50['/api/v1/jobs'])} ms (p99 ${fmt(row.p99['/api/v1/jobs'])}), GET /printers/bench-1 p50 ${fmt(row.p50['/api/v1/printers/bench-1'])} ms ` +
          `(p99 ${fmt(row.p99['/api/v1/printers/bench-1'])}); load average ${load()}\n`,
      );
    }
  } finally {
    await backend.close();
  }
  process.stdout.write(`\n${backend.name}\n\n${overviewTable(cells)}\n\n${everydayTable(everyday)}\n\n`);
  const missed = missedTargets(cells, everyday);
  for (const line of missed) process.stdout.write(`stats: TARGET MISSED (${backend.name}): ${line}\n`);
  if (!missed.length) process.stdout.write(`stats: all targets met on ${backend.name} (${cells.length} overview cells, ${everyday.length} sizes of everyday requests)\n`);
  return missed.length ? 1 : 0;
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err) => {
      process.stderr.write(`bench/stats: ${(err as Error).stack ?? err}\n`);
      process.exit(1);
    },
  );
}
