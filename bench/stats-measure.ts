/**
 * bench/stats's measurements on one backend at one size: the statistics overview against the same SQL
 * run straight on the database (a cell per period), and the requests a dashboard makes all day.
 */
import http from 'node:http';
import { resolvePeriod, type PeriodName } from '../service/statistics/period';
import { TIME_ZONE, type StatsBackend } from './stats-backends';

export interface Cell {
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
  /** The slowest GET /health sent while one overview ran (the overview runs off the event loop: near floorMs). */
  healthDuringMax: number;
}

export const percentile = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
};
const median = (xs: number[]) => percentile(xs, 50);
const elapsedMs = (t: bigint) => Number(process.hrtime.bigint() - t) / 1e6;

/** GETs on a keep-alive connection of their own. */
function client() {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const get = (url: string) =>
    new Promise<{ status: number; text: string }>((resolve, reject) => {
      http
        .get(url, { agent }, (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (text += chunk));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
          res.on('error', reject);
        })
        .on('error', reject);
    });
  const timed = async (url: string) => {
    const t = process.hrtime.bigint();
    const res = await get(url);
    const ms = elapsedMs(t);
    if (res.status !== 200) throw new Error(`${url} answered ${res.status}: ${res.text.slice(0, 300)}`);
    return { ms, text: res.text };
  };
  return { get, timed, close: () => agent.destroy() };
}

const baseOf = (backend: StatsBackend) => backend.service.url.replace('localhost', '127.0.0.1');

export async function measureOverview(backend: StatsBackend, jobs: number, period: PeriodName, runs: number, budgetS: number): Promise<Cell> {
  const base = baseOf(backend);
  const repo = backend.service.context.store.statistics;
  // A connection of its own per cell: one opened before a long seeding could be closed by the server meanwhile.
  const http1 = client();
  const endpoint = async () => {
    const { ms, text } = await http1.timed(`${base}/api/v1/statistics/overview?period=${period}`);
    return { ms, total: (JSON.parse(text) as { jobs: { total_jobs: number } }).jobs.total_jobs };
  };
  // The same period the service resolves (same time zone, same clock), the same SQL, on the bench's own
  // connection. Only the statements are timed: resolving the period and compiling the queries happen before.
  const direct = async () => {
    const clock = new Date();
    const p = resolvePeriod({ period }, TIME_ZONE, clock);
    const { ms, firstRows } = await backend.raw(repo.overviewQueries({ from: p.from, to: p.to, now: clock.toISOString() }));
    // The first query sums the jobs per material type.
    return { ms, total: firstRows.reduce((n, row) => n + Number(row.total_jobs), 0) };
  };
  try {
    // Warm-up: statement caches, page cache, JIT.
    for (let i = 0; i < 2; i++) {
      await endpoint();
      await direct();
    }
    // The two must count the same jobs. A pair may straddle a day boundary (the period moves by a day between
    // them), so one mismatch is measured again and reported; a second one is a real disagreement.
    let first = [await endpoint(), await direct()];
    if (first[0].total !== first[1].total) {
      process.stdout.write(`  (${period}: endpoint counted ${first[0].total} jobs, the raw query ${first[1].total}; measuring again)\n`);
      first = [await endpoint(), await direct()];
      if (first[0].total !== first[1].total) throw new Error(`endpoint counted ${first[0].total} jobs, the raw query ${first[1].total} (period ${period}, ${jobs} jobs)`);
    }
    const pairMs = first[0].ms + first[1].ms;
    const n = Math.max(3, Math.min(runs, Math.floor((budgetS * 1000) / Math.max(pairMs, 1))));
    const e: number[] = [first[0].ms];
    const r: number[] = [first[1].ms];
    for (let i = 1; i < n; i++) {
      // Alternate which goes first, so that drift and cache effects hit both alike.
      if (i % 2) {
        r.push((await direct()).ms);
        e.push((await endpoint()).ms);
      } else {
        e.push((await endpoint()).ms);
        r.push((await direct()).ms);
      }
    }
    const floor: number[] = [];
    for (let i = 0; i < 20; i++) {
      const { ms } = await http1.timed(`${base}/api/v1/health`);
      if (i >= 5) floor.push(ms);
    }
    // GET /health on a second connection while one overview runs: what every other request waits meanwhile.
    const side = client();
    const healthDuring: number[] = [];
    try {
      let running = true;
      const overview = endpoint().finally(() => (running = false));
      while (running) healthDuring.push((await side.timed(`${base}/api/v1/health`)).ms);
      await overview;
    } finally {
      side.close();
    }
    return {
      jobs,
      period,
      inPeriod: first[0].total,
      healthDuringMax: Math.max(...healthDuring),
      runs: n,
      endpointMs: median(e),
      rawMs: median(r),
      endpointP90: percentile(e, 90),
      rawP90: percentile(r, 90),
      floorMs: median(floor),
    };
  } finally {
    http1.close();
  }
}

/** The requests a dashboard makes all day, which run on the main thread: their cost must not grow with the history. */
export const EVERYDAY = ['/api/v1/jobs', '/api/v1/jobs?status=completed', '/api/v1/jobs?printer_id=bench-1', '/api/v1/printers/bench-1', '/api/v1/printers'];

export interface EverydayRow {
  jobs: number;
  p50: Record<string, number>;
  p99: Record<string, number>;
  /** GET /health's p50, measured in between: the floor of any request. */
  floorMs: number;
}

export async function measureEveryday(backend: StatsBackend, jobs: number, runs: number): Promise<EverydayRow> {
  const base = baseOf(backend);
  const http1 = client();
  const p50: Record<string, number> = {};
  const p99: Record<string, number> = {};
  const floor: number[] = [];
  try {
    for (const url of EVERYDAY) {
      await http1.timed(base + url); // warm-up
      const times: number[] = [];
      for (let i = 0; i < runs; i++) {
        times.push((await http1.timed(base + url)).ms);
        floor.push((await http1.timed(`${base}/api/v1/health`)).ms);
      }
      p50[url] = median(times);
      p99[url] = percentile(times, 99);
    }
  } finally {
    http1.close();
  }
  return { jobs, p50, p99, floorMs: median(floor) };
}
