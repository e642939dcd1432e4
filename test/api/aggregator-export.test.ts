/**
 * GET /stats/export is written a page at a time (never built whole in memory): sent chunked, complete
 * and in order across page boundaries, also when many installations were first seen at the same moment.
 */
import { randomUUID } from 'node:crypto';
import { HOUR_MS } from '../../service/aggregator/repository';
import { describeDialects } from '../helpers/dialects';
import { NOW, submission } from '../helpers/aggregator-data';
import { startAggregator, type AggregatorHarness } from '../helpers/usage';

describeDialects('aggregator export', (db) => {
  let a: AggregatorHarness;
  const ids: string[] = [];
  beforeAll(async () => {
    a = await startAggregator({ now: () => NOW, databaseUrl: await db.url() });
    // 1200 installations: more than two pages of each; many share a first-seen time, so pages split ties.
    for (let i = 0; i < 1200; i++) {
      const id = randomUUID();
      ids.push(id);
      const at = NOW - (i % 3) * 1000;
      await a.agg.repo.accept(submission({ installation_id: id, submitted_at: new Date(at).toISOString(), total_jobs_created: i }), at, 10, HOUR_MS);
    }
  }, 120_000);
  afterAll(() => a.close());

  test('is sent chunked, page by page, with every installation and submission once and in order', async () => {
    const res = await a.call('GET', '/stats/export');
    expect(res.status).toBe(200);
    expect(res.headers['content-length']).toBeUndefined();
    expect(res.headers['transfer-encoding']).toBe('chunked');
    expect(res.headers['content-disposition']).toBe('attachment; filename="printfarm-aggregator-export-2026-03-01.json"');
    const { installations, submissions } = res.body as { installations: { installation_id: string; first_seen_at: string }[]; submissions: { id: number; installation_id: string; total_jobs_created: number }[] };
    expect(installations.map((i) => i.installation_id).sort()).toEqual([...ids].sort());
    const order = installations.map((i) => [i.first_seen_at, i.installation_id].join(' '));
    expect(order).toEqual([...order].sort());
    expect(submissions.map((s) => s.total_jobs_created)).toEqual(ids.map((_, i) => i));
    expect(submissions.map((s) => s.installation_id)).toEqual(ids);
    expect(submissions[0]).not.toHaveProperty('received_ms');
  });
});
