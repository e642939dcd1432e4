/**
 * The aggregation service on its own, over HTTPS with a test CA: API keys,
 * submission validation, the per-installation rate limit, deletion, every
 * /stats view with known data, the anomaly rules, and the mail reports read
 * from a real SMTP server running in this process.
 */
import { randomUUID } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { SMTPServer } from 'smtp-server';
import { DAY_MS, HOUR_MS } from '../../service/aggregator/repository';
import { compareVersions } from '../../service/aggregator/stats';
import type { UsageSubmission } from '../../service/schemas/usage';
import { aggregatorOptions } from '../../service/aggregator/config';
import { describeDialects } from '../helpers/dialects';
import { API_KEY, httpsJson, startAggregator, type AggregatorHarness, type JsonReply } from '../helpers/usage';

const NOW = Date.parse('2026-03-01T12:00:00.000Z');

function submission(overrides: Partial<UsageSubmission> = {}): UsageSubmission {
  return {
    installation_id: randomUUID(),
    submitted_at: new Date(NOW).toISOString(),
    schema_version: '1.0',
    period_start: new Date(NOW - 7 * DAY_MS).toISOString(),
    period_end: new Date(NOW).toISOString(),
    app_version: '1.2.0',
    platform: 'linux',
    deployment_mode: 'standalone',
    country_code: 'DE',
    printer_count: 0,
    printer_types: [],
    printer_type_counts: {},
    total_jobs_created: 0,
    total_jobs_completed: 0,
    total_jobs_failed: 0,
    total_files_downloaded: 0,
    total_files_uploaded: 0,
    uptime_hours: 0,
    feature_usage: {},
    event_counts: {},
    ...overrides,
  };
}

function expectErrorBody(res: JsonReply, status: number, code: string) {
  expect([res.status, res.body?.error?.code]).toEqual([status, code]);
  expect(res.body.error).toEqual({ code, message: expect.any(String), details: expect.any(Object), timestamp: expect.any(String), request_id: expect.any(String) });
  expect(res.headers['x-request-id']).toBe(res.body.error.request_id);
  return res.body.error;
}

describeDialects('aggregation service', (db) => {
  let clock = NOW;
  let a: AggregatorHarness;
  beforeAll(async () => {
    a = await startAggregator({ now: () => clock, rateLimitPerHour: 3, databaseUrl: await db.url() });
  });
  afterAll(() => a.close());

  /** Posts a submission as received at `at`. */
  async function submitAt(at: number, s: UsageSubmission) {
    clock = at;
    const res = await a.call('POST', '/submit', { ...s, submitted_at: new Date(at).toISOString(), period_start: new Date(at - DAY_MS).toISOString(), period_end: new Date(at).toISOString() });
    clock = NOW;
    return res;
  }

  describe('access', () => {
    test('health and documentation are open; everything else needs a valid X-API-Key (401)', async () => {
      const health = await a.call('GET', '/health', undefined, null);
      expect(health.status).toBe(200);
      expect(health.body).toMatchObject({ status: 'healthy', service: 'printfarm-aggregator', database: 'ok', email_configured: false });
      expect((await a.call('GET', '/health/ready', undefined, null)).body).toMatchObject({ ready: true, database: 'ok' });
      expect((await a.call('GET', '/health/live', undefined, null)).body.status).toBe('alive');
      for (const [method, p, body] of [
        ['POST', '/submit', submission()],
        ['DELETE', `/installation/${randomUUID()}`],
        ['GET', '/stats/summary'],
        ['GET', '/stats/overview'],
        ['GET', '/reports/email-status'],
        ['POST', '/reports/weekly', {}],
      ] as const) {
        const none = await a.call(method, p, body, null);
        expect(expectErrorBody(none, 401, 'UNAUTHORIZED').message).toMatch(/X-API-Key/);
        expectErrorBody(await a.call(method, p, body, 'wrong-key'), 401, 'UNAUTHORIZED');
      }
      // Every configured key is accepted (AGGREGATOR_API_KEY takes several).
      expect((await a.call('GET', '/stats/summary', undefined, 'second-key')).status).toBe(200);
    });

    test('has its own OpenAPI document (lint-clean, API-key security) with /docs; every route is documented', async () => {
      const doc = (await a.call('GET', '/openapi.json', undefined, null)).body;
      expect(doc.openapi).toBe('3.1.0');
      expect(doc.info.title).toBe('Printfarm aggregation service');
      expect(doc.components.securitySchemes.ApiKeyAuth).toEqual({ type: 'apiKey', in: 'header', name: 'X-API-Key' });
      const expected = [
        'post /submit', 'delete /installation/{id}', 'get /stats/summary', 'get /stats/overview', 'get /stats/installations', 'get /stats/deployment-modes',
        'get /stats/versions', 'get /stats/geography', 'get /stats/printers', 'get /stats/features', 'get /stats/version-migration', 'get /stats/anomalies',
        'get /stats/export', 'get /stats/feature-trends', 'get /stats/errors', 'get /reports/email-status', 'post /reports/test-email', 'post /reports/weekly',
        'post /reports/monthly', 'get /health', 'get /health/live', 'get /health/ready', 'get /openapi.json',
      ];
      const documented = Object.entries(doc.paths as Record<string, Record<string, { security?: unknown; responses: Record<string, unknown> }>>).flatMap(([p, ops]) =>
        Object.entries(ops).map(([m, op]) => ({ key: `${m} ${p}`, op })),
      );
      expect(documented.map((d) => d.key).sort()).toEqual(expected.sort());
      for (const { key, op } of documented) {
        const open = key.includes('/health') || key.endsWith('/openapi.json');
        expect([key, op.security]).toEqual([key, open ? undefined : [{ ApiKeyAuth: [] }]]);
        if (!open) expect([key, op.responses]).toEqual([key, expect.objectContaining({ '401': expect.anything() })]);
      }
      expect(doc.paths['/submit'].post.responses).toHaveProperty('429');
      expect(doc.paths['/submit'].post.requestBody.content['application/json'].schema.required).toEqual(
        expect.arrayContaining(['installation_id', 'total_jobs_created', 'total_files_uploaded', 'printer_type_counts', 'event_counts']),
      );

      const file = path.join(a.dataDir, 'openapi.json');
      fs.writeFileSync(file, JSON.stringify(doc));
      const run = spawnSync(process.execPath, [path.join(__dirname, '../support/lint-openapi.mjs'), file], { encoding: 'utf8' });
      expect(run.stderr).toBe('');
      const problems: { rule: string; severity: string; where: string }[] = JSON.parse(run.stdout);
      expect(problems.filter((p) => p.severity === 'error')).toEqual([]);
      // The one accepted warning, as for the main service: read-only GETs without client errors (health, this document).
      expect(problems.filter((p) => !(p.rule === 'operation-4xx-response' && p.where.endsWith('/get/responses')))).toEqual([]);

      const docs = await a.call('GET', '/docs/', undefined, null);
      expect(docs.status).toBe(200);
      expect(docs.text).toContain('swagger-ui');
      expect((await a.call('GET', '/redoc', undefined, null)).text).toContain('spec-url="api/v1/openapi.json"');
      expect((await a.call('GET', '/api/v1/openapi.json', undefined, null)).body.info.title).toBe('Printfarm aggregation service');
      expectErrorBody(await a.call('GET', '/nothing-here', undefined, null), 404, 'NOT_FOUND');
    });
  });

  describe('POST /submit', () => {
    test('stores a valid submission (201) and answers a repeat of it as a duplicate that changes nothing', async () => {
      const s = submission({ printer_count: 2, printer_types: ['bambu_lab'], printer_type_counts: { bambu_lab: 2 } });
      const first = await a.call('POST', '/submit', s);
      expect(first.status).toBe(201);
      expect(first.body).toEqual({
        status: 'accepted',
        installation_id: s.installation_id,
        submission_id: expect.any(Number),
        received_at: new Date(NOW).toISOString(),
        rate_limit: { limit: 3, remaining: 2, window_start: new Date(NOW).toISOString(), reset_at: new Date(NOW + HOUR_MS).toISOString() },
      });
      expect(first.headers['x-ratelimit-limit']).toBe('3');
      expect(first.headers['x-ratelimit-remaining']).toBe('2');
      const again = await a.call('POST', '/submit', s);
      expect(again.status).toBe(200);
      expect(again.body).toMatchObject({ status: 'duplicate', submission_id: first.body.submission_id, rate_limit: { remaining: 2 } });
      const exported = (await a.call('GET', '/stats/export')).body;
      expect(exported.submissions.filter((x: { installation_id: string }) => x.installation_id === s.installation_id)).toHaveLength(1);
      await a.call('DELETE', `/installation/${s.installation_id}`);
    });

    test.each([
      ['a missing body', undefined, ['installation_id', 'total_jobs_created']],
      ['an installation id that is no UUID', { installation_id: 'printer-01' }, ['installation_id']],
      ['a country that is no ISO code', { country_code: 'Germany' }, ['country_code']],
      ['negative counters', { total_jobs_failed: -1, printer_count: -3 }, ['total_jobs_failed', 'printer_count']],
      ['a string where a number belongs', { uptime_hours: '12' }, ['uptime_hours']],
      ['free text as map keys', { event_counts: { 'My Printer in the Garage': 1 } }, ['event_counts']],
      ['a period that ends before it starts', { period_start: '2026-03-02T00:00:00Z', period_end: '2026-03-01T00:00:00Z' }, ['period_start']],
      ['a feature flag that is no boolean', { feature_usage: { business_mode: 'yes' } }, ['feature_usage.business_mode']],
    ])('refuses %s with 422 VALIDATION_ERROR naming the fields, and stores nothing', async (_label, patch, fields) => {
      const before = (await a.call('GET', '/stats/summary')).body.total_submissions;
      const body = patch === undefined ? undefined : { ...submission(), ...patch };
      const err = expectErrorBody(await a.call('POST', '/submit', body), 422, 'VALIDATION_ERROR');
      const named = err.details.fields.map((f: { field: string }) => f.field);
      for (const f of fields) expect(named.some((n: string) => n === f || n.startsWith(`${f}.`))).toBe(true);
      expect((await a.call('GET', '/stats/summary')).body.total_submissions).toBe(before);
    });

    test('ignores unknown fields (newer clients) and never stores them', async () => {
      const s = { ...submission(), hostname: 'workshop-pc', future_counter: 3 };
      expect((await a.call('POST', '/submit', s)).status).toBe(201);
      const exported = await a.call('GET', '/stats/export');
      expect(exported.text).not.toContain('workshop-pc');
      await a.call('DELETE', `/installation/${s.installation_id}`);
    });

    test('limits each installation to the configured submissions per hour: 429 with Retry-After, other installations unaffected, a new window after the hour', async () => {
      const id = randomUUID();
      for (let i = 0; i < 3; i++) expect((await submitAt(NOW + i * 60_000, submission({ installation_id: id }))).status).toBe(201);
      const limited = await submitAt(NOW + 10 * 60_000, submission({ installation_id: id }));
      const err = expectErrorBody(limited, 429, 'RATE_LIMIT_EXCEEDED');
      expect(limited.headers['retry-after']).toBe(String(50 * 60));
      expect(err.details).toEqual({ installation_id: id, limit: 3, submission_count: 3, window_start: new Date(NOW).toISOString(), retry_after_seconds: 3000 });
      expect(limited.headers['x-ratelimit-remaining']).toBe('0');
      // The rate-limit record: installation_id, last_submission_at, submission_count, window_start.
      expect(await a.agg.repo.rateLimit(id)).toEqual({
        installation_id: id,
        last_submission_at: new Date(NOW + 2 * 60_000).toISOString(),
        submission_count: 3,
        window_start: new Date(NOW).toISOString(),
        window_start_ms: NOW,
      });
      // Another installation has its own budget.
      expect((await submitAt(NOW + 10 * 60_000, submission())).status).toBe(201);
      // One hour after the window started, a new one begins.
      const later = await submitAt(NOW + HOUR_MS, submission({ installation_id: id }));
      expect(later.status).toBe(201);
      expect(later.body.rate_limit).toEqual({ limit: 3, remaining: 2, window_start: new Date(NOW + HOUR_MS).toISOString(), reset_at: new Date(NOW + 2 * HOUR_MS).toISOString() });
      expect((await a.call('GET', '/stats/export')).body.submissions.filter((x: { installation_id: string }) => x.installation_id === id)).toHaveLength(4);
    });
  });

  describe('DELETE /installation/{id}', () => {
    test('removes the submissions, the installation and its rate-limit record; a second delete is 404', async () => {
      const s = submission({ country_code: 'NZ' });
      await a.call('POST', '/submit', s);
      await submitAt(NOW + 1000, { ...s });
      const deleted = await a.call('DELETE', `/installation/${s.installation_id}`);
      expect(deleted.status).toBe(200);
      expect(deleted.body).toEqual({ installation_id: s.installation_id, deleted: true, submissions_deleted: 2 });
      const exported = (await a.call('GET', '/stats/export')).text;
      expect(exported).not.toContain(s.installation_id);
      expect(await a.agg.repo.rateLimit(s.installation_id)).toBeUndefined();
      expect((await a.call('GET', '/stats/geography')).body.countries.map((c: { country_code: string }) => c.country_code)).not.toContain('NZ');
      expectErrorBody(await a.call('DELETE', `/installation/${s.installation_id}`), 404, 'INSTALLATION_NOT_FOUND');
      expectErrorBody(await a.call('DELETE', '/installation/..%2Fetc'), 400, 'VALIDATION_ERROR');
    });
  });
});

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
      },
      {
        period_start: new Date(NOW - 7 * DAY_MS).toISOString(),
        period_end: new Date(NOW).toISOString(),
        total_installations: 2,
        versions: [
          { version: '1.2.0', installations: 1, percentage: 50 },
          { version: '1.1.0', installations: 1, percentage: 50 },
        ],
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

describe('aggregation service anomaly rules', () => {
  let clock = NOW;
  let a: AggregatorHarness;
  beforeEach(async () => {
    clock = NOW;
    a = await startAggregator({ now: () => clock });
  });
  afterEach(() => a.close());

  /** Stores a submission received at `at` (straight through the repository: same code as POST /submit). */
  const seed = (at: number, s: Partial<UsageSubmission> = {}) =>
    a.agg.repo.accept(submission({ ...s, submitted_at: new Date(at).toISOString(), period_start: new Date(at - DAY_MS).toISOString(), period_end: new Date(at).toISOString() }), at, 1000, HOUR_MS);

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

describe('aggregation service mail reports', () => {
  interface Mail {
    from: string;
    to: string[];
    raw: string;
  }
  let smtp: SMTPServer;
  let smtpPort: number;
  const mails: Mail[] = [];
  let refuse = false;
  let a: AggregatorHarness;

  beforeAll(async () => {
    smtp = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS'],
      logger: false,
      onRcptTo(address, _session, cb) {
        cb(refuse ? Object.assign(new Error('mailbox unavailable'), { responseCode: 550 }) : null);
        void address;
      },
      onData(stream, session, cb) {
        let raw = '';
        stream.setEncoding('utf8');
        stream.on('data', (d) => (raw += d));
        stream.on('end', () => {
          mails.push({ from: String(session.envelope.mailFrom && session.envelope.mailFrom.address), to: session.envelope.rcptTo.map((r) => r.address), raw });
          cb();
        });
      },
    });
    await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
    smtpPort = (smtp.server.address() as AddressInfo).port;
    a = await startAggregator({
      now: () => NOW,
      smtp: { host: '127.0.0.1', port: smtpPort, ignoreTLS: true, from: 'stats@printfarm.test', to: ['ops@printfarm.test', 'lead@printfarm.test'] },
    });
    const id = randomUUID();
    await a.agg.repo.accept(submission({ installation_id: id, submitted_at: new Date(NOW - 3 * DAY_MS).toISOString(), app_version: '2.0.0', country_code: 'FR', total_jobs_created: 12, total_jobs_completed: 9, total_jobs_failed: 3, printer_count: 4 }), NOW - 3 * DAY_MS, 10, HOUR_MS);
    await a.agg.repo.accept(submission({ submitted_at: new Date(NOW - 20 * DAY_MS).toISOString(), app_version: '1.9.0', country_code: 'IT', deployment_mode: 'docker' }), NOW - 20 * DAY_MS, 10, HOUR_MS);
  });
  afterAll(async () => {
    await a.close();
    await new Promise<void>((resolve) => smtp.close(() => resolve()));
  });

  /** Decodes quoted-printable soft breaks and escapes, enough to read the text. */
  const readable = (raw: string) => raw.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16)));

  test('reports the mail configuration without the password', async () => {
    const res = await a.call('GET', '/reports/email-status');
    expect(res.body).toEqual({
      configured: true,
      host: '127.0.0.1',
      port: smtpPort,
      secure: false,
      auth: false,
      from: 'stats@printfarm.test',
      recipients: ['ops@printfarm.test', 'lead@printfarm.test'],
      reports_sent: 0,
      last_sent_at: null,
      last_error: null,
    });
  });

  test('sends a test mail to the configured recipients, or to the ones given', async () => {
    const res = await a.call('POST', '/reports/test-email', {});
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ sent: true, recipients: ['ops@printfarm.test', 'lead@printfarm.test'], subject: 'Printfarm aggregator: test mail', report: null });
    const mail = mails.at(-1)!;
    expect(mail.from).toBe('stats@printfarm.test');
    expect(mail.to).toEqual(['ops@printfarm.test', 'lead@printfarm.test']);
    expect(mail.raw).toMatch(/^Subject: Printfarm aggregator: test mail\r?$/m);
    expect(readable(mail.raw)).toContain('This is a test mail of the Printfarm aggregation service');
    expect(mail.raw).toContain(res.body.message_id);

    await a.call('POST', '/reports/test-email', { to: ['someone@printfarm.test'] });
    expect(mails.at(-1)!.to).toEqual(['someone@printfarm.test']);
    expectErrorBody(await a.call('POST', '/reports/test-email', { to: ['not an address'] }), 422, 'VALIDATION_ERROR');
  });

  test('the weekly and monthly reports carry the figures of their period', async () => {
    const weekly = await a.call('POST', '/reports/weekly', {});
    expect(weekly.status).toBe(200);
    expect(weekly.body.report).toMatchObject({
      kind: 'weekly',
      period_start: new Date(NOW - 7 * DAY_MS).toISOString(),
      period_end: new Date(NOW).toISOString(),
      active_installations: 1,
      previous_active_installations: 0,
      active_change_percent: null,
      new_installations: 1,
      submissions: 1,
      jobs_created: 12,
      jobs_completed: 9,
      jobs_failed: 3,
      job_success_rate: 75,
      total_printers: 4,
      top_versions: [{ version: '2.0.0', installations: 1 }],
      top_countries: [{ country_code: 'FR', installations: 1 }],
    });
    const mail = readable(mails.at(-1)!.raw);
    expect(mail).toContain('Subject: Printfarm usage report (weekly): 2026-02-22 to 2026-03-01');
    expect(mail).toContain('Active installations: 1 (previous period 0, no previous data)');
    expect(mail).toContain('Jobs: 12 created, 9 completed, 3 failed (success rate 75 %)');
    expect(mail).toContain('  FR: 1');
    expect(mail).toMatch(/Content-Type: text\/html/);

    const monthly = await a.call('POST', '/reports/monthly', {});
    expect(monthly.body.report).toMatchObject({ kind: 'monthly', active_installations: 2, submissions: 2, top_versions: [{ version: '1.9.0', installations: 1 }, { version: '2.0.0', installations: 1 }] });
    const monthlyMail = readable(mails.at(-1)!.raw);
    expect(monthlyMail).toContain('Subject: Printfarm usage report (monthly): 2026-01-30 to 2026-03-01');
    expect(monthlyMail).toContain('  IT: 1');
    expect(monthlyMail).toContain('  docker: 1');

    const status = (await a.call('GET', '/reports/email-status')).body;
    expect(status.reports_sent).toBe(4);
    expect(status.last_sent_at).not.toBeNull();
  });

  test('a refusing mail server gives 502 EMAIL_SEND_FAILED and shows in the status', async () => {
    refuse = true;
    try {
      const err = expectErrorBody(await a.call('POST', '/reports/weekly', {}), 502, 'EMAIL_SEND_FAILED');
      expect(err.message).toMatch(/mailbox unavailable/);
      expect((await a.call('GET', '/reports/email-status')).body.last_error).toMatch(/mailbox unavailable/);
    } finally {
      refuse = false;
    }
  });

  test('without an SMTP server, reports answer 503 EMAIL_NOT_CONFIGURED', async () => {
    const bare = await startAggregator();
    try {
      expect((await bare.call('GET', '/reports/email-status')).body).toMatchObject({ configured: false, host: null, recipients: [] });
      for (const p of ['/reports/test-email', '/reports/weekly', '/reports/monthly']) expectErrorBody(await bare.call('POST', p, {}), 503, 'EMAIL_NOT_CONFIGURED');
    } finally {
      await bare.close();
    }
  });
});

test('versions compare numerically', () => {
  expect(['1.9.0', '1.10.0', '1.2.0-beta.1', '1.2.0', 'v0.9'].sort(compareVersions)).toEqual(['v0.9', '1.2.0-beta.1', '1.2.0', '1.9.0', '1.10.0']);
});

test('the aggregator refuses to start without an API key', async () => {
  await expect(startAggregator({ apiKeys: [' '] })).rejects.toThrow(/API key/);
  void httpsJson;
  void API_KEY;
});

test('aggregator options: --database-url (or DATABASE_URL) and DATABASE_POOL_MAX; a non-PostgreSQL URL is refused without echoing it', () => {
  const env = { AGGREGATOR_API_KEY: 'k', DATABASE_URL: 'postgres://agg:pw@db:5432/aggregator', DATABASE_POOL_MAX: '20' };
  expect(aggregatorOptions({}, env)).toMatchObject({ databaseUrl: 'postgres://agg:pw@db:5432/aggregator', poolMax: 20 });
  expect(aggregatorOptions({ 'database-url': 'postgresql://other/db' }, env)).toMatchObject({ databaseUrl: 'postgresql://other/db' });
  expect(aggregatorOptions({}, { AGGREGATOR_API_KEY: 'k' })).not.toHaveProperty('databaseUrl');
  expect(() => aggregatorOptions({ 'database-url': 'sqlite://secret-pw' }, env)).toThrow(/must be a postgres:\/\/ URL$/);
  expect(() => aggregatorOptions({}, { ...env, DATABASE_POOL_MAX: '0' })).toThrow(/DATABASE_POOL_MAX/);
});
