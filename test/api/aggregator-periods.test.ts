/**
 * Each period of an installation counts once: a later submission over the same or an overlapping period
 * replaces the stored one (the farm rebuilt it from its still open counters), an earlier one arriving after
 * it is refused (409 SUBMISSION_SUPERSEDED), a resend of the stored one stays a duplicate, and migration
 * 003 removes the double counts a database already holds.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { sql } from 'kysely';
import { openTarget } from '../../service/db/connection';
import { DAY_MS, HOUR_MS } from '../../service/aggregator/repository';
import { AGGREGATOR_DB_FILENAME, AGGREGATOR_MIGRATIONS, openAggregatorDatabase, type AggregatorDB } from '../../service/aggregator/db';
import { backfillDerived } from '../../service/aggregator/derived-schema';
import type { UsageSubmission } from '../../service/schemas/usage';
import { describeDialects } from '../helpers/dialects';
import { NOW, submission, expectErrorBody } from '../helpers/aggregator-data';
import { tempDir } from '../helpers/service';
import { startAggregator, type AggregatorHarness } from '../helpers/usage';

const iso = (ms: number) => new Date(ms).toISOString();

describeDialects('aggregator: one count per period', (db) => {
  let a: AggregatorHarness;
  let url: string | undefined;
  beforeAll(async () => {
    url = await db.url();
    a = await startAggregator({ now: () => NOW, rateLimitPerHour: 10, databaseUrl: url });
  });
  afterAll(() => a.close());

  /** A submission of `id` over [start, end] (hours before NOW), sent at `sent` hours before NOW, with `jobs` jobs created. */
  const take = (id: string, start: number, end: number, sent: number, jobs: number): UsageSubmission =>
    submission({ installation_id: id, period_start: iso(NOW - start * HOUR_MS), period_end: iso(NOW - end * HOUR_MS), submitted_at: iso(NOW - sent * HOUR_MS), total_jobs_created: jobs, event_counts: { error: jobs } });

  async function figures(id: string) {
    const summary = (await a.call('GET', '/stats/summary')).body;
    const exported = (await a.call('GET', '/stats/export')).body;
    return {
      jobs: summary.totals.jobs_created,
      errors: (await a.call('GET', '/stats/errors?days=30')).body.total_errors,
      stored: exported.submissions.filter((s: { installation_id: string }) => s.installation_id === id).map((s: { total_jobs_created: number }) => s.total_jobs_created),
      counted: exported.installations.find((i: { installation_id: string }) => i.installation_id === id)?.submissions,
    };
  }

  test('a later submission over the same period replaces the stored one; a resend of either is a duplicate', async () => {
    const id = randomUUID();
    const base = await figures(id);
    const first = take(id, 48, 2, 2, 5);
    expect((await a.call('POST', '/submit', first)).status).toBe(201);
    // The farm built it again from the same period start (its counters stayed open): 5 jobs plus 2 since.
    const second = await a.call('POST', '/submit', take(id, 48, 1, 1, 7));
    expect(second.status).toBe(201);
    // Counted once: without the rule both were (12 jobs, two stored).
    expect(await figures(id)).toEqual({ jobs: base.jobs + 7, errors: base.errors + 7, stored: [7], counted: 1 });
    expect(second.body.replaced).toEqual([{ submission_id: expect.any(Number), submitted_at: first.submitted_at, period_start: first.period_start, period_end: first.period_end }]);
    // A client retry whose answer was lost changes nothing, whichever it is.
    expect((await a.call('POST', '/submit', take(id, 48, 1, 1, 7))).body).toMatchObject({ status: 'duplicate', submission_id: second.body.submission_id, replaced: [] });
    expect(await figures(id)).toEqual({ jobs: base.jobs + 7, errors: base.errors + 7, stored: [7], counted: 1 });
  });

  test('an earlier submission overlapping a stored later one is refused with 409 SUBMISSION_SUPERSEDED and uses no quota', async () => {
    const id = randomUUID();
    const later = take(id, 48, 1, 1, 7);
    await a.call('POST', '/submit', later);
    const quota = (await a.agg.repo.rateLimit(id))?.submission_count;
    const base = await figures(id);
    const err = expectErrorBody(await a.call('POST', '/submit', take(id, 30, 2, 2, 5)), 409, 'SUBMISSION_SUPERSEDED');
    expect(err.details).toMatchObject({ installation_id: id, superseded_by: { submitted_at: later.submitted_at, period_start: later.period_start, period_end: later.period_end } });
    expect(await figures(id)).toEqual(base);
    expect((await a.agg.repo.rateLimit(id))?.submission_count).toBe(quota);
  });

  test('partly overlapping periods count once (the later), periods that only touch count apart', async () => {
    const id = randomUUID();
    const base = await figures(id);
    await a.call('POST', '/submit', take(id, 72, 48, 48, 1));
    await a.call('POST', '/submit', take(id, 48, 24, 24, 2));
    expect(await figures(id)).toEqual({ jobs: base.jobs + 3, errors: base.errors + 3, stored: [1, 2], counted: 2 });
    // Overlaps the second only: it goes, the first (which only touches) stays.
    const res = await a.call('POST', '/submit', take(id, 30, 3, 3, 4));
    expect(res.body.replaced.map((r: { period_end: string }) => r.period_end)).toEqual([iso(NOW - 24 * HOUR_MS)]);
    expect(await figures(id)).toEqual({ jobs: base.jobs + 5, errors: base.errors + 5, stored: [1, 4], counted: 2 });
    // Offsets are compared as moments: the same instant in +02:00 is the stored submission.
    const same = { ...take(id, 30, 3, 3, 4), submitted_at: '2026-03-01T11:00:00.000+02:00' };
    expect((await a.call('POST', '/submit', same)).status).toBe(200);
    expect(await figures(id)).toEqual({ jobs: base.jobs + 5, errors: base.errors + 5, stored: [1, 4], counted: 2 });
  });

  test('after the replacements the derived tables are what the submissions left derive', async () => {
    const conn = await openAggregatorDatabase(a.dataDir, { url });
    try {
      const read = async () => ({
        latest: await conn.db.selectFrom('latest_submissions').selectAll().orderBy('installation_id').execute(),
        daily: await conn.db.selectFrom('daily_totals').selectAll().orderBy('day').execute(),
        counts: await conn.db.selectFrom('installations').select(['installation_id', 'submissions']).orderBy('installation_id').execute(),
      });
      const stored = await read();
      await conn.db.transaction().execute(async (trx) => {
        await trx.deleteFrom('latest_submissions').execute();
        await trx.deleteFrom('daily_totals').execute();
        await backfillDerived(trx);
        await sql`UPDATE installations SET submissions = (SELECT COUNT(*) FROM submissions s WHERE s.installation_id = installations.installation_id)`.execute(trx);
      });
      expect(stored).toEqual(await read());
    } finally {
      await conn.close();
    }
  });
});

describeDialects('aggregator migration 003', (db) => {
  test('removes the submissions a later one of the same installation overlaps, and derives the rest again', async () => {
    const url = await db.url();
    const dir = tempDir('printfarm-agg-migration3-');
    const target = { file: path.join(dir, AGGREGATOR_DB_FILENAME), url };
    const { '003_aggregator_periods': _m003, ...before } = AGGREGATOR_MIGRATIONS;
    const old = await openTarget<AggregatorDB>(target, before);
    const [x, y] = [randomUUID(), randomUUID()];
    // x: a take over [-9d, -2d] sent twice (the second later, with more jobs), then one that only touches it;
    // y: two periods apart, the first written with an offset.
    const rows = [
      [x, NOW - 9 * DAY_MS, NOW - 2 * DAY_MS, NOW - 2 * DAY_MS, 5],
      [x, NOW - 9 * DAY_MS, NOW - 2 * DAY_MS + HOUR_MS, NOW - 2 * DAY_MS + HOUR_MS, 6],
      [x, NOW - 2 * DAY_MS + HOUR_MS, NOW - DAY_MS, NOW - DAY_MS, 1],
      [y, NOW - 5 * DAY_MS, NOW - 3 * DAY_MS, NOW - 3 * DAY_MS, 2],
      [y, NOW - 3 * DAY_MS, NOW - DAY_MS, NOW - DAY_MS, 3],
    ] as const;
    for (const [id, start, end, sent, jobs] of rows) {
      const s = submission({ installation_id: id, submitted_at: iso(sent), period_start: iso(start), period_end: iso(end), total_jobs_created: jobs });
      const row = { ...s, received_at: iso(sent), received_ms: sent, printer_types: '[]', printer_type_counts: '{}', feature_usage: '{}', event_counts: '{}', error_count: 0 };
      if (id === y && jobs === 2) row.period_end = '2026-02-26T14:00:00+02:00';
      await old.db.insertInto('submissions').values(row).execute();
      await old.db
        .insertInto('installations')
        .values({ installation_id: id, first_seen_at: iso(sent), first_seen_ms: sent, last_seen_at: iso(sent), last_seen_ms: sent, submissions: 1, app_version: '1.2.0', platform: 'linux', deployment_mode: 'standalone', country_code: 'DE', printer_count: 0 })
        .onConflict((oc) => oc.column('installation_id').doUpdateSet({ submissions: sql`installations.submissions + 1` }))
        .execute();
    }
    await old.db.deleteFrom('latest_submissions').execute();
    await old.db.deleteFrom('daily_totals').execute();
    await backfillDerived(old.db);
    await old.close();

    const conn = await openAggregatorDatabase(dir, { url });
    try {
      const left = await conn.db.selectFrom('submissions').select(['installation_id', 'total_jobs_created', 'period_end_ms']).orderBy('id').execute();
      expect(left.map((r) => [r.installation_id, Number(r.total_jobs_created)])).toEqual([[x, 6], [x, 1], [y, 2], [y, 3]]);
      expect(Number(left[2].period_end_ms)).toBe(NOW - 3 * DAY_MS);
      const counts = await conn.db.selectFrom('installations').select(['installation_id', 'submissions']).orderBy('installation_id').execute();
      expect(counts.map((c) => [c.installation_id, Number(c.submissions)])).toEqual([[x, 2], [y, 2]].sort());
      const daily = await conn.db.selectFrom('daily_totals').select((eb) => [eb.fn.sum<number>('submissions').as('n'), eb.fn.sum<number>('jobs_created').as('jobs')]).executeTakeFirstOrThrow();
      expect([Number(daily.n), Number(daily.jobs)]).toEqual([4, 12]);
    } finally {
      await conn.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
