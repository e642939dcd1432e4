/**
 * Senders name their error codes and features, so /stats/errors, /stats/features and /stats/feature-trends
 * count them in SQL and list the 50 largest only, with what the rest add up to.
 */
import { randomUUID } from 'node:crypto';
import { HOUR_MS } from '../../service/aggregator/repository';
import { TOP_NAMES } from '../../service/aggregator/stats';
import { describeDialects } from '../helpers/dialects';
import { NOW, submission } from '../helpers/aggregator-data';
import { startAggregator, type AggregatorHarness } from '../helpers/usage';

const pad = (i: number) => String(i).padStart(2, '0');

describeDialects('aggregator: bounded error and feature views', (db) => {
  let a: AggregatorHarness;
  beforeAll(async () => {
    a = await startAggregator({ now: () => NOW, databaseUrl: await db.url() });
    // Two installations report 60 error codes (code_NN counted NN + 1 times each) and 60 features:
    // the first enables f00 to f29, the second f00 to f09.
    for (const enabledUpTo of [30, 10]) {
      const event_counts: Record<string, number> = { error: 0 };
      for (let i = 0; i < 60; i++) {
        event_counts[`error_code_${pad(i)}`] = i + 1;
        event_counts.error += i + 1;
      }
      const feature_usage = Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`f${pad(i)}`, i < enabledUpTo]));
      const res = await a.call('POST', '/submit', submission({ installation_id: randomUUID(), submitted_at: new Date(NOW - HOUR_MS).toISOString(), event_counts, feature_usage }));
      expect(res.status).toBe(201);
    }
  });
  afterAll(() => a.close());

  test('GET /stats/errors lists the 50 most frequent codes and sums the rest in by_type_other', async () => {
    const body = (await a.call('GET', '/stats/errors?days=7&interval=day')).body;
    expect(TOP_NAMES).toBe(50);
    expect(body.by_type).toHaveLength(50);
    expect(body.by_type[0]).toEqual({ type: 'code_59', count: 120 });
    expect(body.by_type.at(-1)).toEqual({ type: 'code_10', count: 22 });
    // code_00 to code_09: 2 x (1 + ... + 10).
    expect(body.by_type_other).toEqual({ types: 10, count: 110 });
    expect(body.total_errors).toBe(2 * ((60 * 61) / 2));
  });

  test('GET /stats/features lists the 50 features most often enabled and sums the rest in features_other', async () => {
    const body = (await a.call('GET', '/stats/features?days=7')).body;
    expect(body.total_installations).toBe(2);
    expect(body.features).toHaveLength(50);
    expect(body.features.slice(0, 2)).toEqual([
      { feature: 'f00', enabled: 2, disabled: 0, adoption: 100 },
      { feature: 'f01', enabled: 2, disabled: 0, adoption: 100 },
    ]);
    expect(body.features[10]).toEqual({ feature: 'f10', enabled: 1, disabled: 1, adoption: 50 });
    // Never enabled: f30 to f49 listed by name, f50 to f59 summed.
    expect(body.features.at(-1)).toEqual({ feature: 'f49', enabled: 0, disabled: 2, adoption: 0 });
    expect(body.features_other).toEqual({ features: 10, enabled: 0, disabled: 20 });
    expect((await a.call('GET', '/stats/overview?days=7')).body.features.features_other).toEqual({ features: 10, enabled: 0, disabled: 20 });
  });

  test('GET /stats/feature-trends follows the same 50 features in every bucket and says how many it left out', async () => {
    const body = (await a.call('GET', '/stats/feature-trends?days=3&interval=day')).body;
    expect(body.features).toEqual(Array.from({ length: 50 }, (_, i) => `f${pad(i)}`));
    expect(body.features_omitted).toBe(10);
    const newest = body.timeline.at(-1);
    expect(newest.total_installations).toBe(2);
    expect(newest.features).toHaveLength(50);
    expect(newest.features.find((f: { feature: string }) => f.feature === 'f20')).toEqual({ feature: 'f20', enabled: 1, disabled: 1, adoption: 50 });
    expect(body.timeline[0]).toMatchObject({ total_installations: 0, features: expect.arrayContaining([{ feature: 'f00', enabled: 0, disabled: 0, adoption: 0 }]) });
  });
});
