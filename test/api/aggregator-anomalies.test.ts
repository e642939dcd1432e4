/**
 * The anomaly rules of the aggregation service (GET /stats/anomalies).
 */
import { randomUUID } from 'node:crypto';
import { DAY_MS, HOUR_MS } from '../../service/aggregator/repository';
import type { UsageSubmission } from '../../service/schemas/usage';
import { NOW, submission } from '../helpers/aggregator-data';
import { startAggregator, type AggregatorHarness } from '../helpers/usage';

describe('aggregation service anomaly rules', () => {
  let clock = NOW;
  let a: AggregatorHarness;
  beforeEach(async () => {
    clock = NOW;
    a = await startAggregator({ now: () => clock });
  });
  afterEach(() => a.close());

  /**
   * Stores a submission received at `at` (straight through the repository: same code as POST /submit),
   * its period the millisecond before `at`: several of one installation at once must not overlap, or only the last would count.
   */
  const seed = (at: number, s: Partial<UsageSubmission> = {}) => a.agg.repo.accept(submission({ ...s, submitted_at: new Date(at).toISOString() }), at, 1000, HOUR_MS);

  /** Less than 7 days of history before the last 24 h: the submission-rate rule stays out of these cases. */
  const PREVIOUS_WEEK = NOW - 7 * DAY_MS - HOUR_MS;

  async function installations(previousWeek: number, thisWeek: number) {
    for (let i = 0; i < Math.max(previousWeek, thisWeek); i++) {
      const id = randomUUID();
      if (i < previousWeek) await seed(PREVIOUS_WEEK, { installation_id: id });
      if (i < thisWeek) await seed(NOW - 3 * DAY_MS, { installation_id: id });
    }
  }

  const found = async () => {
    const res = await a.call('GET', '/stats/anomalies');
    return res.body.anomalies.map((x: { type: string; severity: string; change_percent: number | null }) => [x.type, x.severity, x.change_percent]);
  };

  test.each([
    [10, 9, []],
    [10, 8, [['active_installations_drop', 'medium', -20]]],
    [10, 7, [['active_installations_drop', 'medium', -30]]],
    [10, 5, [['active_installations_drop', 'high', -50]]],
    [10, 14, []],
    [10, 15, [['active_installations_spike', 'medium', 50]]],
  ])('active installations %i -> %i week over week', async (previous, current, expected) => {
    await installations(previous, current);
    expect(await found()).toEqual(expected);
  });

  test('daily submissions above 3x the 30-day mean are a spike; below 0.2x a drop (high)', async () => {
    // 20 days with 2 submissions a day, from the same two installations (weekly activity stays flat).
    const pair = [randomUUID(), randomUUID()];
    for (let day = 2; day <= 21; day++) for (const id of pair) await seed(NOW - day * DAY_MS, { installation_id: id });
    // No submission in the last 24 h: 0 < 0.2 x 2.
    expect(await found()).toEqual([['submission_drop', 'high', -100]]);
    for (let k = 0; k < 7; k++) await seed(NOW - HOUR_MS - k, { installation_id: pair[0] });
    // 7 > 3 x 2 (the mean over the 20 days of history).
    expect(await found()).toEqual([['submission_spike', 'medium', 250]]);
  });

  test('a young service (under 7 days of history) raises no submission anomaly', async () => {
    for (let k = 0; k < 5; k++) await seed(NOW - 2 * DAY_MS, {});
    for (let k = 0; k < 20; k++) await seed(NOW - HOUR_MS, {});
    expect((await found()).filter(([type]: [string]) => type.startsWith('submission_'))).toEqual([]);
  });

  test('errors up 50 % week over week are medium, doubled are high; over 30 % of installations with errors is high', async () => {
    const ids = Array.from({ length: 10 }, () => randomUUID());
    for (const id of ids) await seed(PREVIOUS_WEEK, { installation_id: id, event_counts: id === ids[0] ? { error: 10 } : {} });
    for (const id of ids) await seed(NOW - 3 * DAY_MS, { installation_id: id, event_counts: id === ids[0] ? { error: 16 } : {} });
    expect(await found()).toEqual([['error_increase', 'medium', 60]]);
    await seed(NOW - 2 * DAY_MS, { installation_id: ids[1], event_counts: { error: 4 } });
    await seed(NOW - 2 * DAY_MS, { installation_id: ids[2], event_counts: { error: 1 } });
    await seed(NOW - 2 * DAY_MS, { installation_id: ids[3], event_counts: { error: 1 } });
    // 22 errors against 10 (+120 %), and 4 of 10 installations (40 %) reported errors.
    expect(await found()).toEqual([
      ['error_increase', 'high', 120],
      ['error_prevalence', 'high', null],
    ]);
  });
});
