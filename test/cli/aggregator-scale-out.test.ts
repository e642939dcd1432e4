/**
 * Several `printfarm aggregator` processes on one PostgreSQL database answer
 * like one: 50 installations submit concurrently to two instances (each
 * submission and its retries spread over both), and the counts are exact, the
 * hourly limit holds across both, and a retry is a duplicate wherever it lands.
 * Needs dist/ (npm run build) and PostgreSQL (see test/helpers/postgres.ts).
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import pg from 'pg';
import { startAggregatorProcess, type AggregatorProcess } from '../helpers/aggregator-process';
import { postgresUnavailable, usePostgres } from '../helpers/postgres';
import { tempDir } from '../helpers/service';

const KEY = 'scale-out-key';
const ADMIN_KEY = 'scale-out-admin-key';
const INSTALLATIONS = 50;
const LIMIT = 10;
/** Distinct submissions per installation: two more than the hourly limit. */
const PER_INSTALLATION = LIMIT + 2;

/** One `printfarm aggregator` process on the shared database. */
const startAggregator = (databaseUrl: string, dataDir: string): Promise<AggregatorProcess> =>
  startAggregatorProcess(['--data-dir', dataDir, '--database-url', databaseUrl], {
    AGGREGATOR_SUBMIT_KEY: KEY,
    AGGREGATOR_ADMIN_KEY: ADMIN_KEY,
    AGGREGATOR_RATE_LIMIT_PER_HOUR: String(LIMIT),
    // Every installation submits from 127.0.0.1 here: the per-address limit is not what this test is about.
    AGGREGATOR_RATE_LIMIT_PER_ADDRESS: '1000000',
    DATABASE_POOL_MAX: '10',
  });

function submission(installationId: string, n: number) {
  const at = Date.parse('2026-03-01T12:00:00.000Z') + n * 60_000;
  return {
    installation_id: installationId,
    submitted_at: new Date(at).toISOString(),
    schema_version: '1.0',
    // The minute before: one installation's periods must not overlap, or the later replaces the earlier.
    period_start: new Date(at - 60_000).toISOString(),
    period_end: new Date(at).toISOString(),
    app_version: '1.2.0',
    platform: 'linux',
    deployment_mode: 'standalone',
    country_code: 'DE',
    printer_count: 3,
    printer_types: ['bambu_lab'],
    printer_type_counts: { bambu_lab: 3 },
    total_jobs_created: 7,
    total_jobs_completed: 5,
    total_jobs_failed: 1,
    total_files_downloaded: 2,
    total_files_uploaded: 0,
    uptime_hours: 1.5,
    feature_usage: { queue: true },
    event_counts: { error: 1 },
  };
}

async function submit(base: string, body: unknown): Promise<number> {
  const res = await fetch(`${base}/submit`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': KEY }, body: JSON.stringify(body) });
  await res.arrayBuffer();
  return res.status;
}

const missing = postgresUnavailable();
(missing ? describe.skip : describe)(`two aggregator processes on one PostgreSQL${missing ? ` (skipped: ${missing})` : ''}`, () => {
  const server = missing ? null : usePostgres();
  let dirs: string[] = [];
  let instances: AggregatorProcess[] = [];
  let databaseUrl: string;

  beforeAll(async () => {
    databaseUrl = await (await server!()).createDatabase('scale');
    dirs = [tempDir('printfarm-agg-a-'), tempDir('printfarm-agg-b-')];
    // Both start at once: the migrations run once, under the migration lock.
    instances = await Promise.all(dirs.map((dir) => startAggregator(databaseUrl, dir)));
  }, 60_000);
  afterAll(async () => {
    await Promise.all(instances.map((i) => i.stop()));
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  });

  test('50 installations submitting to both at once: exact counts, the hourly limit across both, retries are duplicates', async () => {
    const ids = Array.from({ length: INSTALLATIONS }, () => randomUUID());
    // Every submission goes to both instances at the same moment (a client retry landing on the other one).
    // Up to 50 pairs in flight at once (100 requests): concurrent, without queueing a thousand on a loaded machine.
    const pairs = Array.from({ length: PER_INSTALLATION }, (_, n) => ids.map((id) => ({ id, n }))).flat();
    const results: { id: string; n: number; status: number }[] = [];
    const worker = async () => {
      for (let pair = pairs.shift(); pair; pair = pairs.shift()) {
        const { id, n } = pair;
        results.push(...(await Promise.all(instances.map(async (instance) => ({ id, n, status: await submit(instance.url, submission(id, n)) })))));
      }
    };
    await Promise.all(Array.from({ length: 50 }, worker));

    const per = new Map<string, number[]>();
    for (const r of results) per.set(r.id, [...(per.get(r.id) ?? []), r.status]);
    for (const [id, statuses] of per) {
      const count = (s: number) => statuses.filter((x) => x === s).length;
      // Of each pair the copy taken first decides: 10 are accepted (their other copy is a duplicate, 200,
      // wherever it landed), the 2 past the hourly limit are refused on both instances.
      expect([id, count(201), count(200), count(429)]).toEqual([id, LIMIT, LIMIT, 2 * (PER_INSTALLATION - LIMIT)]);
    }

    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    try {
      const q = async (text: string) => (await client.query(text)).rows;
      expect(await q('SELECT count(*)::int AS n, count(DISTINCT installation_id)::int AS installations FROM submissions')).toEqual([
        { n: INSTALLATIONS * LIMIT, installations: INSTALLATIONS },
      ]);
      expect(await q('SELECT count(*)::int AS n FROM (SELECT installation_id FROM submissions GROUP BY installation_id HAVING count(*) <> 10) AS off')).toEqual([{ n: 0 }]);
      expect(await q('SELECT count(*)::int AS n, min(submissions)::int AS lo, max(submissions)::int AS hi FROM installations')).toEqual([{ n: INSTALLATIONS, lo: LIMIT, hi: LIMIT }]);
      expect(await q('SELECT min(submission_count)::int AS lo, max(submission_count)::int AS hi FROM rate_limits')).toEqual([{ lo: LIMIT, hi: LIMIT }]);
      // What both processes derived on submit (migration 002) equals a recomputation from the submissions.
      expect(await q('SELECT installation_id, submission_id::int AS id, app_version FROM latest_submissions ORDER BY installation_id')).toEqual(
        await q(`SELECT DISTINCT ON (installation_id) installation_id, id::int AS id, app_version FROM submissions ORDER BY installation_id, received_ms DESC, id DESC`),
      );
      expect(await q('SELECT day::text, submissions::int AS n, jobs_created::int AS jobs, errors::int AS errors, uptime_hours FROM daily_totals ORDER BY day')).toEqual(
        await q(`SELECT (received_ms / 86400000)::text AS day, count(*)::int AS n, sum(total_jobs_created)::int AS jobs, sum(error_count)::int AS errors, sum(uptime_hours) AS uptime_hours
          FROM submissions GROUP BY 1 ORDER BY 1`),
      );
    } finally {
      await client.end();
    }

    // Both instances show the same summary, with sums exact to the submission.
    const summaries = await Promise.all(
      instances.map(async (i) => (await (await fetch(`${i.url}/stats/summary`, { headers: { 'x-api-key': ADMIN_KEY } })).json()) as Record<string, unknown>),
    );
    const stored = INSTALLATIONS * LIMIT;
    for (const s of summaries) {
      expect(s).toMatchObject({
        total_installations: INSTALLATIONS,
        total_submissions: stored,
        totals: { jobs_created: 7 * stored, jobs_completed: 5 * stored, jobs_failed: stored, files_downloaded: 2 * stored, errors: stored, uptime_hours: 1.5 * stored },
      });
    }
    const { generated_at: _a, ...first } = summaries[0];
    const { generated_at: _b, ...second } = summaries[1];
    expect(second).toEqual(first);
  }, 180_000);
});
