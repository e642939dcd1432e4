/**
 * The tables the /stats views read instead of rescanning the submissions (latest_submissions,
 * daily_totals; migration 002) stay equal to what the migration's backfill derives from the raw
 * submissions: after concurrent submissions through two instances (PostgreSQL; one instance with
 * parallel requests on SQLite), duplicates, rate-limited submissions, out-of-order clocks and deletion.
 * The repository's windowed answers agree with a computation over every stored submission.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { openTarget } from '../../service/db/connection';
import { DAY_MS, HOUR_MS, type AggregatorRepository, type StoredSubmission } from '../../service/aggregator/repository';
import { AGGREGATOR_DB_FILENAME, AGGREGATOR_MIGRATIONS, openAggregatorDatabase, type AggregatorConnection, type AggregatorDB } from '../../service/aggregator/db';
import { backfillDerived } from '../../service/aggregator/derived-schema';
import { compareVersions } from '../../service/aggregator/stats';
import { describeDialects } from '../helpers/dialects';
import { NOW, submission } from '../helpers/aggregator-data';
import { tempDir } from '../helpers/service';
import { startAggregator, type AggregatorHarness } from '../helpers/usage';

const LIMIT = 3;

/** The latest submission of each installation in (start, end], from every stored submission: the reference the SQL is checked against. */
function latestPerInstallation(all: StoredSubmission[], start: number, end: number): StoredSubmission[] {
  const latest = new Map<string, StoredSubmission>();
  for (const s of all) {
    if (s.received_ms <= start || s.received_ms > end) continue;
    const seen = latest.get(s.installation_id);
    if (!seen || s.received_ms > seen.received_ms || (s.received_ms === seen.received_ms && s.id > seen.id)) latest.set(s.installation_id, s);
  }
  return [...latest.values()];
}

describeDialects('aggregation service derived tables', (db) => {
  let a: AggregatorHarness;
  let b: AggregatorHarness;
  let conn: AggregatorConnection;
  let repo: AggregatorRepository;

  beforeAll(async () => {
    const databaseUrl = await db.url();
    a = await startAggregator({ now: () => NOW, rateLimitPerHour: LIMIT, databaseUrl });
    // A second instance on the same PostgreSQL database; SQLite serves one instance per file.
    b = databaseUrl ? await startAggregator({ now: () => NOW, rateLimitPerHour: LIMIT, databaseUrl }) : a;
    conn = await openAggregatorDatabase(a.dataDir, { url: databaseUrl });
    repo = a.agg.repo;
  });
  afterAll(async () => {
    await conn?.close();
    if (b !== a) await b?.close();
    await a?.close();
  });

  /** Both derived tables as stored, with numbers as numbers. */
  async function derived() {
    const normal = <T extends object>(rows: T[]) => rows.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, typeof v === 'string' && /^-?\d+(\.\d+)?$/.test(v) ? Number(v) : v])));
    const latest = await conn.db.selectFrom('latest_submissions').selectAll().orderBy('installation_id').execute();
    const daily = await conn.db.selectFrom('daily_totals').selectAll().orderBy('day').execute();
    return { latest: normal(latest), daily: normal(daily) };
  }

  /** The derived tables equal the backfill's derivation from the submissions (then restored as they were). */
  async function expectDerivedExact() {
    const stored = await derived();
    await conn.db.transaction().execute(async (trx) => {
      await trx.deleteFrom('latest_submissions').execute();
      await trx.deleteFrom('daily_totals').execute();
      await backfillDerived(trx);
    });
    expect(stored).toEqual(await derived());
    return stored;
  }

  /**
   * Stores a submission received at `at` through instance `via` (the code POST /submit runs); the quota is
   * LIMIT an hour where a test is about it, else out of the way (concurrent arrivals need not be in clock order).
   */
  const accept = (via: AggregatorHarness, at: number, s: Parameters<AggregatorRepository['accept']>[0], limit = 1000) => via.agg.repo.accept(s, at, limit, HOUR_MS);
  const at = (ms: number, overrides: Partial<Parameters<typeof submission>[0]> = {}) => submission({ submitted_at: new Date(ms).toISOString(), ...overrides });

  const ids = Array.from({ length: 8 }, () => randomUUID());

  test('concurrent submissions through two instances, with duplicates and rate-limited ones, leave the derived tables exact', async () => {
    const jobs: Promise<{ kind: string }>[] = [];
    ids.forEach((id, i) => {
      // Four submissions per installation over the last 12 days, each sent to both instances at once (one is a duplicate).
      for (let k = 0; k < 4; k++) {
        const ms = NOW - (12 - 3 * k) * DAY_MS - i * 7 * HOUR_MS;
        const s = at(ms, { installation_id: id, app_version: `1.${(i + k) % 3}.0`, printer_count: i + k, printer_type_counts: { bambu_lab: i, prusa_core: k }, feature_usage: { queue: k % 2 === 0 }, total_jobs_created: 10 * i + k, uptime_hours: 1.25 * k, event_counts: i % 3 === 0 ? { error: k + 1, error_download_failed: k + 1 } : {} });
        jobs.push(accept(a, ms, s), accept(b, ms, s));
      }
    });
    // One installation sends five within an hour: the quota (3) refuses two, on whichever instance.
    const busy = randomUUID();
    for (let k = 0; k < 5; k++) jobs.push(accept(k % 2 ? a : b, NOW - 2 * HOUR_MS + k, at(NOW - 2 * HOUR_MS + k, { installation_id: busy, printer_count: k }), LIMIT));
    const outcomes = (await Promise.all(jobs)).map((o) => o.kind);
    expect(outcomes.filter((k) => k === 'accepted')).toHaveLength(ids.length * 4 + LIMIT);
    expect(outcomes.filter((k) => k === 'duplicate')).toHaveLength(ids.length * 4);
    expect(outcomes.filter((k) => k === 'limited')).toHaveLength(5 - LIMIT);

    const { latest, daily } = await expectDerivedExact();
    expect(latest).toHaveLength(ids.length + 1);
    expect(daily.reduce((sum, d) => sum + Number(d.submissions), 0)).toBe(ids.length * 4 + LIMIT);
  });

  test('a submission received with an older clock (another instance) does not replace the latest; a tie goes to the later id', async () => {
    const id = randomUUID();
    await accept(a, NOW - HOUR_MS, at(NOW - 10 * HOUR_MS, { installation_id: id, app_version: '2.0.0' }));
    await accept(b, NOW - 3 * HOUR_MS, at(NOW - 9 * HOUR_MS, { installation_id: id, app_version: '1.9.0' }));
    let row = (await derived()).latest.find((r) => r.installation_id === id);
    expect(row).toMatchObject({ app_version: '2.0.0', received_ms: NOW - HOUR_MS });
    await accept(b, NOW - HOUR_MS, at(NOW - 8 * HOUR_MS, { installation_id: id, app_version: '2.1.0' }));
    row = (await derived()).latest.find((r) => r.installation_id === id);
    expect(row).toMatchObject({ app_version: '2.1.0', received_ms: NOW - HOUR_MS });
    await expectDerivedExact();
  });

  test('deleting an installation takes its share out of both tables', async () => {
    const before = await derived();
    const res = await a.call('DELETE', `/installation/${ids[0]}`);
    expect(res.status).toBe(200);
    const after = await expectDerivedExact();
    expect(after.latest.map((r) => r.installation_id)).toEqual(before.latest.map((r) => r.installation_id).filter((id) => id !== ids[0]));
    expect(after.daily.reduce((sum, d) => sum + Number(d.submissions), 0)).toBe(before.daily.reduce((sum, d) => sum + Number(d.submissions), 0) - 4);
  });

  test('windowed answers equal a computation over every stored submission, whole days, ragged ends and windows before the newest submission', async () => {
    const all = await repo.allSubmissions();
    const windows: [number, number][] = [
      [NOW - 30 * DAY_MS, NOW],
      [NOW - 7 * DAY_MS, NOW],
      [NOW - 14 * DAY_MS, NOW - 7 * DAY_MS],
      [NOW - 5 * DAY_MS - 5 * HOUR_MS, NOW - 2 * DAY_MS + 3 * HOUR_MS],
      [NOW - 6 * HOUR_MS, NOW - HOUR_MS],
      [NOW - 9 * DAY_MS - 1, NOW - 9 * DAY_MS + 1],
    ];
    for (const [start, end] of windows) {
      const inWindow = all.filter((s) => s.received_ms > start && s.received_ms <= end);
      const sum = (pick: (s: (typeof all)[number]) => number) => inWindow.reduce((n, s) => n + pick(s), 0);
      expect([start, end, await repo.totals(start, end)]).toEqual([
        start,
        end,
        {
          submissions: inWindow.length,
          jobs_created: sum((s) => s.total_jobs_created),
          jobs_completed: sum((s) => s.total_jobs_completed),
          jobs_failed: sum((s) => s.total_jobs_failed),
          files_downloaded: sum((s) => s.total_files_downloaded),
          files_uploaded: sum((s) => s.total_files_uploaded),
          uptime_hours: expect.closeTo(sum((s) => s.uptime_hours), 9),
          errors: sum((s) => s.error_count),
        },
      ]);
      expect(await repo.activeCount(start, end)).toBe(new Set(inWindow.map((s) => s.installation_id)).size);
      // The latest submission inside the window, per installation, tallied by version and fleet size.
      const latest = latestPerInstallation(all, start, end);
      const groups = await repo.latestGroups(start, end, ['app_version', 'printer_count']);
      const key = (v: string, p: number) => `${v}/${p}`;
      const expected = new Map<string, number>();
      for (const s of latest) expected.set(key(s.app_version, s.printer_count), (expected.get(key(s.app_version, s.printer_count)) ?? 0) + 1);
      expect(new Map(groups.map((g) => [key(g.app_version, g.printer_count), g.installations]))).toEqual(expected);
      expect(groups.reduce((n, g) => n + g.printers, 0)).toBe(latest.reduce((n, s) => n + s.printer_count, 0));
    }
    expect(await repo.totals()).toMatchObject({ submissions: all.length, jobs_created: all.reduce((n, s) => n + s.total_jobs_created, 0) });
  });

  test('per-bucket counts equal a computation over every stored submission, split per bucket or grouped in one scan', async () => {
    const all = await repo.allSubmissions();
    // 3 and 13 buckets: one query part each; 90 daily buckets: the grouped scan.
    for (const [end, size, count] of [[NOW, DAY_MS, 3], [NOW - 5 * HOUR_MS, 7 * DAY_MS, 13], [NOW, DAY_MS, 90]]) {
      const expected = new Map<number, { active: Set<string>; submissions: number; errors: number; withErrors: Set<string> }>();
      for (const s of all.filter((x) => x.received_ms > end - count * size && x.received_ms <= end)) {
        const bucket = Math.floor((end - s.received_ms) / size);
        const e = expected.get(bucket) ?? { active: new Set(), submissions: 0, errors: 0, withErrors: new Set() };
        e.active.add(s.installation_id);
        e.submissions++;
        e.errors += s.error_count;
        if (s.error_count > 0) e.withErrors.add(s.installation_id);
        expected.set(bucket, e);
      }
      const rows = (await repo.buckets(end, size, count)).sort((x, y) => x.bucket - y.bucket);
      expect(rows).toEqual(
        [...expected]
          .sort(([x], [y]) => x - y)
          .map(([bucket, e]) => ({ bucket, active: e.active.size, submissions: e.submissions, errors: e.errors, with_errors: e.withErrors.size })),
      );
    }
  });

  test('the latest submission per bucket and installation, counted by version and by features, equals the latest within each bucket', async () => {
    const all = await repo.allSubmissions();
    for (const [end, size, count] of [[NOW, DAY_MS, 14], [NOW - 5 * HOUR_MS, 7 * DAY_MS, 3]]) {
      const [versions, features] = await Promise.all([repo.latestPerBucketGroups(end, size, count, 'app_version'), repo.latestPerBucketGroups(end, size, count, 'feature_usage')]);
      for (let bucket = 0; bucket < count; bucket++) {
        const latest = latestPerInstallation(all, end - (bucket + 1) * size, end - bucket * size);
        const tallyOf = (keyOf: (s: (typeof latest)[number]) => string) => {
          const m = new Map<string, number>();
          for (const s of latest) m.set(keyOf(s), (m.get(keyOf(s)) ?? 0) + 1);
          return m;
        };
        expect([bucket, new Map(versions.filter((g) => g.bucket === bucket).map((g) => [g.app_version, g.installations]))]).toEqual([bucket, tallyOf((s) => s.app_version)]);
        expect([bucket, new Map(features.filter((g) => g.bucket === bucket).map((g) => [g.feature_usage, g.installations]))]).toEqual([bucket, tallyOf((s) => JSON.stringify(s.feature_usage))]);
      }
    }
  });

  test('the version view lists what the latest submissions say', async () => {
    const res = await a.call('GET', '/stats/versions?days=30');
    const latest = latestPerInstallation(await repo.allSubmissions(), NOW - 30 * DAY_MS, NOW);
    const versions = [...new Set(latest.map((s) => s.app_version))].sort((x, y) => compareVersions(y, x));
    expect(res.body.versions.map((v: { version: string; installations: number }) => [v.version, v.installations])).toEqual(versions.map((v) => [v, latest.filter((s) => s.app_version === v).length]));
    expect(res.body.total_installations).toBe(latest.length);
  });
});

describeDialects('aggregator migration 002', (db) => {
  test('derives latest_submissions and daily_totals from the submissions a database already holds', async () => {
    const url = await db.url();
    const dir = tempDir('printfarm-agg-migration-');
    const target = { file: path.join(dir, AGGREGATOR_DB_FILENAME), url };
    // A database as migration 001 left it, with submissions of three installations over three days.
    const old = await openTarget<AggregatorDB>(target, { '001_aggregator': AGGREGATOR_MIGRATIONS['001_aggregator'] });
    const ids = [randomUUID(), randomUUID(), randomUUID()];
    const rows = ids.flatMap((id, i) =>
      [0, 1, 2, 3].map((k) => {
        const ms = NOW - k * 20 * HOUR_MS - i * HOUR_MS;
        const s = submission({ installation_id: id, submitted_at: new Date(ms).toISOString(), app_version: `1.${k}.0`, printer_count: i + k, total_jobs_created: i + k, uptime_hours: 0.5 * k, event_counts: k === 1 ? { error: i } : {} });
        return { ...s, received_at: new Date(ms).toISOString(), received_ms: ms, printer_types: JSON.stringify(s.printer_types), printer_type_counts: JSON.stringify(s.printer_type_counts), feature_usage: JSON.stringify(s.feature_usage), event_counts: JSON.stringify(s.event_counts), error_count: s.event_counts.error ?? 0 };
      }),
    );
    await old.db.insertInto('submissions').values(rows).execute();
    await old.close();

    const conn = await openAggregatorDatabase(dir, { url });
    try {
      const latest = await conn.db.selectFrom('latest_submissions').select(['installation_id', 'app_version', 'received_ms']).orderBy('installation_id').execute();
      // k = 0 is the newest of each installation.
      expect(latest.map((r) => ({ ...r, received_ms: Number(r.received_ms) }))).toEqual(
        [...ids].sort().map((id) => ({ installation_id: id, app_version: '1.0.0', received_ms: NOW - ids.indexOf(id) * HOUR_MS })),
      );
      const daily = await conn.db.selectFrom('daily_totals').selectAll().orderBy('day').execute();
      const expected = new Map<number, { submissions: number; jobs: number; errors: number }>();
      for (const r of rows) {
        const d = expected.get(Math.floor(r.received_ms / DAY_MS)) ?? { submissions: 0, jobs: 0, errors: 0 };
        expected.set(Math.floor(r.received_ms / DAY_MS), { submissions: d.submissions + 1, jobs: d.jobs + r.total_jobs_created, errors: d.errors + r.error_count });
      }
      expect(daily.map((d) => [Number(d.day), { submissions: Number(d.submissions), jobs: Number(d.jobs_created), errors: Number(d.errors) }])).toEqual([...expected].sort(([x], [y]) => x - y));
    } finally {
      await conn.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
