/**
 * After DELETE /installation/{id} a replay of a submission made before the deletion (or one still on its
 * way then) must not bring the data back: 409 INSTALLATION_DELETED; a period that starts after the
 * deletion counts again.
 */
import { randomUUID } from 'node:crypto';
import { HOUR_MS } from '../../service/aggregator/repository';
import { describeDialects } from '../helpers/dialects';
import { NOW, submission, expectErrorBody } from '../helpers/aggregator-data';
import { startAggregator, type AggregatorHarness } from '../helpers/usage';

const iso = (ms: number) => new Date(ms).toISOString();

describeDialects('aggregator: deleted installations stay deleted', (db) => {
  let clock = NOW;
  let a: AggregatorHarness;
  beforeAll(async () => {
    a = await startAggregator({ now: () => clock, databaseUrl: await db.url() });
  });
  afterAll(() => a.close());
  afterEach(() => {
    clock = NOW;
  });

  const take = (id: string, startMs: number, endMs: number) =>
    submission({ installation_id: id, period_start: iso(startMs), period_end: iso(endMs), submitted_at: iso(endMs), total_jobs_created: 4, country_code: 'IS' });
  const stored = async (id: string) => (await a.call('GET', '/stats/export')).body.submissions.filter((s: { installation_id: string }) => s.installation_id === id).length;

  test('a replay of a submission stored before the deletion is refused with 409 INSTALLATION_DELETED and stores nothing', async () => {
    const id = randomUUID();
    const s = take(id, NOW - 7 * 24 * HOUR_MS, NOW - HOUR_MS);
    expect((await a.call('POST', '/submit', s)).status).toBe(201);
    expect((await a.call('DELETE', `/installation/${id}`)).status).toBe(200);
    const before = (await a.call('GET', '/stats/summary')).body;
    clock = NOW + HOUR_MS;
    const err = expectErrorBody(await a.call('POST', '/submit', s), 409, 'INSTALLATION_DELETED');
    expect(err.details).toEqual({ installation_id: id, deleted_at: iso(NOW), submitted_at: s.submitted_at, period_start: s.period_start });
    expect(await stored(id)).toBe(0);
    const after = (await a.call('GET', '/stats/summary')).body;
    expect([after.total_installations, after.total_submissions, after.totals.jobs_created]).toEqual([before.total_installations, before.total_submissions, before.totals.jobs_created]);
    // No rate-limit record either: the deletion removed it, the refusal made none.
    expect(await a.agg.repo.rateLimit(id)).toBeUndefined();
    // The deletion itself found nothing the second time.
    expectErrorBody(await a.call('DELETE', `/installation/${id}`), 404, 'INSTALLATION_NOT_FOUND');
  });

  test('a submission on its way while nothing was stored yet is refused after the deletion too (404 still remembers it)', async () => {
    const id = randomUUID();
    expectErrorBody(await a.call('DELETE', `/installation/${id}`), 404, 'INSTALLATION_NOT_FOUND');
    clock = NOW + 60_000;
    expectErrorBody(await a.call('POST', '/submit', take(id, NOW - 24 * HOUR_MS, NOW - 1000)), 409, 'INSTALLATION_DELETED');
    expect(await stored(id)).toBe(0);
  });

  test('a period that starts after the deletion counts again', async () => {
    const id = randomUUID();
    await a.call('POST', '/submit', take(id, NOW - 48 * HOUR_MS, NOW - HOUR_MS));
    await a.call('DELETE', `/installation/${id}`);
    clock = NOW + 3 * HOUR_MS;
    const res = await a.call('POST', '/submit', take(id, NOW + HOUR_MS, NOW + 2 * HOUR_MS));
    expect(res.status).toBe(201);
    expect(await stored(id)).toBe(1);
    // One that straddles the deletion covers deleted time: refused.
    expectErrorBody(await a.call('POST', '/submit', take(id, NOW - HOUR_MS, NOW + 3 * HOUR_MS)), 409, 'INSTALLATION_DELETED');
    expect(await stored(id)).toBe(1);
  });
});
