/**
 * Every /stats view of the aggregation service with known data, on both dialects.
 */
import { randomUUID } from 'node:crypto';
import { DAY_MS, HOUR_MS } from '../../service/aggregator/repository';
import type { UsageSubmission } from '../../service/schemas/usage';
import { describeDialects } from '../helpers/dialects';
import { NOW, submission, expectErrorBody } from '../helpers/aggregator-data';
import { startAggregator, type AggregatorHarness } from '../helpers/usage';

describeDialects('aggregation service statistics', (db) => {
  let clock = NOW;
  let a: AggregatorHarness;
  const A = randomUUID();
  const B = randomUUID();
  const C = randomUUID();
  const D = randomUUID();

  beforeAll(async () => {
    a = await startAggregator({ now: () => clock, databaseUrl: await db.url() });
    const at = async (ms: number, s: UsageSubmission) => {
      clock = ms;
      const res = await a.call('POST', '/submit', { ...s, submitted_at: new Date(ms).toISOString(), period_start: new Date(ms - 7 * DAY_MS).toISOString(), period_end: new Date(ms).toISOString() });
      expect(res.status).toBe(201);
    };
    // D: only long ago (not active in 30 days).
    await at(NOW - 40 * DAY_MS, submission({ installation_id: D, app_version: '1.0.0', country_code: 'XX', total_jobs_created: 1 }));
    // C: 10 days ago; a node-red farm of six Prusa printers.
    await at(
      NOW - 10 * DAY_MS,
      submission({
        installation_id: C,
        app_version: '1.2.0',
        deployment_mode: 'node-red',
        country_code: 'DE',
        printer_count: 6,
        printer_types: ['prusa_core'],
        printer_type_counts: { prusa_core: 6 },
        total_jobs_created: 10,
        total_jobs_completed: 8,
        total_jobs_failed: 2,
        uptime_hours: 240,
        feature_usage: { job_creation_auto_create: true, business_mode: true },
      }),
    );
    // A: 8 days ago on 1.0.0, then 23 hours ago on 1.2.0.
    const a1 = {
      installation_id: A,
      deployment_mode: 'standalone',
      country_code: 'DE',
      printer_count: 3,
      printer_types: ['bambu_lab', 'prusa_core'],
      printer_type_counts: { bambu_lab: 2, prusa_core: 1 },
      feature_usage: { job_creation_auto_create: true, business_mode: false },
    };
    await at(NOW - 8 * DAY_MS, submission({ ...a1, app_version: '1.0.0', total_jobs_created: 5, total_jobs_completed: 5, total_files_uploaded: 2 }));
    // B: 2 days ago, docker in the US, with errors.
    await at(
      NOW - 2 * DAY_MS,
      submission({
        installation_id: B,
        app_version: '1.1.0',
        deployment_mode: 'docker',
        country_code: 'US',
        printer_count: 1,
        printer_types: ['bambu_lab'],
        printer_type_counts: { bambu_lab: 1 },
        total_jobs_created: 4,
        total_jobs_completed: 1,
        total_jobs_failed: 3,
        total_files_downloaded: 7,
        feature_usage: { job_creation_auto_create: false, business_mode: true },
        event_counts: { error: 3, error_download_failed: 2, error_printer_offline: 1, job_created: 4 },
      }),
    );
    await at(NOW - 23 * HOUR_MS, submission({ ...a1, app_version: '1.2.0', total_jobs_created: 2, total_jobs_completed: 2, uptime_hours: 10.5 }));
    clock = NOW;
  });
  afterAll(() => a.close());

  const get = async (p: string) => {
    const res = await a.call('GET', p);
    expect([p, res.status]).toEqual([p, 200]);
    return res.body;
  };

  test('summary', async () => {
    expect(await get('/stats/summary')).toEqual({
      generated_at: new Date(NOW).toISOString(),
      total_installations: 4,
      active_installations_7d: 2,
      active_installations_30d: 3,
      new_installations_7d: 1,
      total_submissions: 5,
      submissions_24h: 1,
      total_printers: 10,
      totals: { jobs_created: 22, jobs_completed: 16, jobs_failed: 5, files_downloaded: 7, files_uploaded: 2, uptime_hours: 250.5, errors: 3 },
      job_success_rate: 76.2,
      first_submission_at: new Date(NOW - 40 * DAY_MS).toISOString(),
      last_submission_at: new Date(NOW - 23 * HOUR_MS).toISOString(),
    });
  });

  test('installations with a weekly trend (oldest first) and the week-over-week change', async () => {
    const body = await get('/stats/installations?days=28');
    expect(body).toMatchObject({ days: 28, interval: 'week', total_installations: 4, active_installations_7d: 2, active_installations_30d: 3, new_installations_7d: 1, week_over_week_change: 0, trend_direction: 'stable' });
    expect(body.trend).toEqual([
      { period_start: new Date(NOW - 28 * DAY_MS).toISOString(), period_end: new Date(NOW - 21 * DAY_MS).toISOString(), active_installations: 0, new_installations: 0, submissions: 0 },
      { period_start: new Date(NOW - 21 * DAY_MS).toISOString(), period_end: new Date(NOW - 14 * DAY_MS).toISOString(), active_installations: 0, new_installations: 0, submissions: 0 },
      { period_start: new Date(NOW - 14 * DAY_MS).toISOString(), period_end: new Date(NOW - 7 * DAY_MS).toISOString(), active_installations: 2, new_installations: 2, submissions: 2 },
      { period_start: new Date(NOW - 7 * DAY_MS).toISOString(), period_end: new Date(NOW).toISOString(), active_installations: 2, new_installations: 1, submissions: 2 },
    ]);
    const daily = await get('/stats/installations?days=3&interval=day');
    // Buckets end now and go back a day at a time: B (2 days ago), nothing, A (23 hours ago).
    expect(daily.trend.map((t: { active_installations: number }) => t.active_installations)).toEqual([1, 0, 1]);
    const bad = await a.call('GET', '/stats/installations?interval=month');
    expectErrorBody(bad, 400, 'VALIDATION_ERROR');
    expectErrorBody(await a.call('GET', '/stats/versions?days=0'), 400, 'VALIDATION_ERROR');
  });

  test('deployment modes, versions and geography describe the installations active in the window by their latest submission', async () => {
    expect((await get('/stats/deployment-modes')).modes).toEqual([
      { mode: 'docker', installations: 1, percentage: 33.3 },
      { mode: 'node-red', installations: 1, percentage: 33.3 },
      { mode: 'standalone', installations: 1, percentage: 33.3 },
    ]);
    const versions = await get('/stats/versions');
    expect(versions).toMatchObject({ total_installations: 3, latest_version: '1.2.0', latest_version_adoption: 66.7 });
    expect(versions.versions).toEqual([
      { version: '1.2.0', installations: 2, percentage: 66.7 },
      { version: '1.1.0', installations: 1, percentage: 33.3 },
    ]);
    // A wider window takes in D (1.0.0, unknown country).
    expect((await get('/stats/versions?days=60')).versions.map((v: { version: string }) => v.version)).toEqual(['1.2.0', '1.1.0', '1.0.0']);
    const geo = await get('/stats/geography');
    expect(geo).toMatchObject({ total_installations: 3, country_count: 2 });
    expect(geo.countries).toEqual([
      { country_code: 'DE', installations: 2, percentage: 66.7, printers: 9 },
      { country_code: 'US', installations: 1, percentage: 33.3, printers: 1 },
    ]);
    expect((await get('/stats/geography?days=60')).country_count).toBe(2);
  });

  test('printers: totals, fleet sizes and types', async () => {
    expect(await get('/stats/printers')).toEqual({
      generated_at: new Date(NOW).toISOString(),
      days: 30,
      total_installations: 3,
      total_printers: 10,
      average_per_installation: 3.33,
      median_per_installation: 3,
      max_per_installation: 6,
      types: [
        { type: 'prusa_core', printers: 7, installations: 2, percentage: 70 },
        { type: 'bambu_lab', printers: 3, installations: 2, percentage: 30 },
      ],
      types_other: { types: 0, printers: 0, installations: 0 },
      fleet_sizes: [
        { size: '0', installations: 0 },
        { size: '1', installations: 1 },
        { size: '2-5', installations: 1 },
        { size: '6-10', installations: 1 },
        { size: '11-50', installations: 0 },
        { size: '51+', installations: 0 },
      ],
    });
  });

  test('features: enabled and disabled counts', async () => {
    expect((await get('/stats/features')).features).toEqual([
      { feature: 'business_mode', enabled: 2, disabled: 1, adoption: 66.7 },
      { feature: 'job_creation_auto_create', enabled: 2, disabled: 1, adoption: 66.7 },
    ]);
  });

  test('version migration and feature trends over weekly buckets', async () => {
    const migration = await get('/stats/version-migration?days=14');
    expect(migration.versions).toEqual(['1.2.0', '1.1.0', '1.0.0']);
    expect(migration.timeline).toEqual([
      {
        period_start: new Date(NOW - 14 * DAY_MS).toISOString(),
        period_end: new Date(NOW - 7 * DAY_MS).toISOString(),
        total_installations: 2,
        versions: [
          { version: '1.2.0', installations: 1, percentage: 50 },
          { version: '1.0.0', installations: 1, percentage: 50 },
        ],
        versions_other: { versions: 0, installations: 0 },
      },
      {
        period_start: new Date(NOW - 7 * DAY_MS).toISOString(),
        period_end: new Date(NOW).toISOString(),
        total_installations: 2,
        versions: [
          { version: '1.2.0', installations: 1, percentage: 50 },
          { version: '1.1.0', installations: 1, percentage: 50 },
        ],
        versions_other: { versions: 0, installations: 0 },
      },
    ]);
    const trends = await get('/stats/feature-trends?days=14');
    expect(trends.features).toEqual(['business_mode', 'job_creation_auto_create']);
    expect(trends.timeline.map((t: { features: unknown }) => t.features)).toEqual([
      [
        { feature: 'business_mode', enabled: 1, disabled: 1, adoption: 50 },
        { feature: 'job_creation_auto_create', enabled: 2, disabled: 0, adoption: 100 },
      ],
      [
        { feature: 'business_mode', enabled: 1, disabled: 1, adoption: 50 },
        { feature: 'job_creation_auto_create', enabled: 1, disabled: 1, adoption: 50 },
      ],
    ]);
  });

  test('errors with trend and by code', async () => {
    const body = await get('/stats/errors?days=14');
    expect(body).toMatchObject({
      total_errors: 3,
      installations_reporting: 3,
      installations_with_errors: 1,
      installations_with_errors_percentage: 33.3,
      errors_per_installation: 1,
      week_over_week_change: null,
      trend_direction: 'stable',
      by_type: [
        { type: 'download_failed', count: 2 },
        { type: 'printer_offline', count: 1 },
      ],
    });
    expect(body.trend.map((t: object) => ({ ...t, period_start: undefined, period_end: undefined }))).toEqual([
      { errors: 0, submissions: 2, installations_with_errors: 0 },
      { errors: 3, submissions: 2, installations_with_errors: 1 },
    ]);
  });

  test('anomalies of this data: half of the active installations report errors (high), a submission spike (medium)', async () => {
    const body = await get('/stats/anomalies');
    expect(body.anomalies.map((x: { type: string; severity: string }) => [x.type, x.severity])).toEqual([
      ['error_prevalence', 'high'],
      ['submission_spike', 'medium'],
    ]);
    expect(body.anomalies[0]).toMatchObject({ current_value: 50, baseline_value: 30 });
    // 3 submissions in the 30 days before the last 24 h: a mean of 0.1 a day; 1 today is above 3x.
    expect(body.anomalies[1]).toMatchObject({ current_value: 1, baseline_value: 0.1 });
    expect(body.counts).toEqual({ high: 1, medium: 1, low: 0 });
  });

  test('overview combines the views; export is a JSON download of everything', async () => {
    const overview = await get('/stats/overview');
    expect(Object.keys(overview).sort()).toEqual(['anomalies', 'deployment_modes', 'features', 'generated_at', 'geography', 'installations', 'printers', 'summary', 'versions'].sort());
    expect(overview.summary.total_installations).toBe(4);
    expect(overview.printers.total_printers).toBe(10);
    const res = await a.call('GET', '/stats/export');
    expect(res.headers['content-disposition']).toMatch(/^attachment; filename="printfarm-aggregator-export-2026-03-01\.json"$/);
    expect(res.body.installations.map((i: { installation_id: string }) => i.installation_id)).toEqual([D, C, A, B]);
    expect(res.body.installations.find((i: { installation_id: string }) => i.installation_id === A)).toMatchObject({ submissions: 2, app_version: '1.2.0', printer_count: 3 });
    expect(res.body.submissions).toHaveLength(5);
    expect(res.body.submissions[4]).toMatchObject({ installation_id: A, printer_type_counts: { bambu_lab: 2, prusa_core: 1 }, feature_usage: { business_mode: false } });
  });
});
