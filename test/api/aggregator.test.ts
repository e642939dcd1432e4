/**
 * The aggregation service on its own, over HTTPS with a test CA: API keys, submission validation, the
 * per-installation rate limit, deletion, options. The /stats views: aggregator-stats.test.ts; anomaly
 * rules: aggregator-anomalies.test.ts; mail reports: aggregator-reports.test.ts; derived tables:
 * aggregator-derived.test.ts.
 */
import { randomUUID } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { DAY_MS, HOUR_MS } from '../../service/aggregator/repository';
import { compareVersions } from '../../service/aggregator/stats';
import type { UsageSubmission } from '../../service/schemas/usage';
import { aggregatorOptions } from '../../service/aggregator/config';
import { describeDialects } from '../helpers/dialects';
import { NOW, submission, expectErrorBody } from '../helpers/aggregator-data';
import { API_KEY, httpsJson, startAggregator, type AggregatorHarness } from '../helpers/usage';

describeDialects('aggregation service', (db) => {
  let clock = NOW;
  let a: AggregatorHarness;
  beforeAll(async () => {
    a = await startAggregator({ now: () => clock, rateLimitPerHour: 3, databaseUrl: await db.url() });
  });
  afterAll(() => a.close());

  /** Posts a submission as received at `at`, covering the second before it (periods of one installation must not overlap to count apart). */
  async function submitAt(at: number, s: UsageSubmission) {
    clock = at;
    const res = await a.call('POST', '/submit', { ...s, submitted_at: new Date(at).toISOString(), period_start: new Date(at - 1000).toISOString(), period_end: new Date(at).toISOString() });
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
      // Every configured submit key is accepted (AGGREGATOR_SUBMIT_KEY takes several).
      expect((await a.call('POST', '/submit', submission(), 'second-key')).status).toBe(201);
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
        replaced: [],
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
      ['a schema version of 60 000 digits', { schema_version: `1.${'0'.repeat(60_000)}` }, ['schema_version']],
      ['a version that is markup', { app_version: '<script>alert(1)</script>' }, ['app_version']],
      ['a version with a line break', { app_version: '1.2.0\nTop versions: 9.9.9' }, ['app_version']],
      ['a feature flag that is no boolean', { feature_usage: { business_mode: 'yes' } }, ['feature_usage.business_mode']],
      ['printers per type that do not add up to the printer count', { printer_count: 1, printer_types: ['bambu_lab'], printer_type_counts: { bambu_lab: 1_000_000 } }, ['printer_type_counts']],
      ['printer types that are not those counted', { printer_count: 2, printer_types: ['bambu_lab', 'bambu_lab'], printer_type_counts: { bambu_lab: 1, prusa_core: 1 } }, ['printer_types']],
    ])('refuses %s with 422 VALIDATION_ERROR naming the fields, and stores nothing', async (_label, patch, fields) => {
      const before = (await a.call('GET', '/stats/summary')).body.total_submissions;
      const body = patch === undefined ? undefined : { ...submission(), ...patch };
      const err = expectErrorBody(await a.call('POST', '/submit', body), 422, 'VALIDATION_ERROR');
      const named = err.details.fields.map((f: { field: string }) => f.field);
      for (const f of fields) expect(named.some((n: string) => n === f || n.startsWith(`${f}.`))).toBe(true);
      expect((await a.call('GET', '/stats/summary')).body.total_submissions).toBe(before);
    });

    test.each([
      ['a submission time in the future', { submitted_at: '9999-12-31T00:00:00Z', period_start: new Date(NOW - DAY_MS).toISOString(), period_end: '9999-12-31T00:00:00Z' }, ['submitted_at', 'period_end']],
      ['a period that ends two days after the receiving clock', { period_end: new Date(NOW + 2 * DAY_MS).toISOString() }, ['period_end']],
      ['times before Printfarm existed', { submitted_at: '0001-01-01T00:00:00Z', period_start: '0001-01-01T00:00:00Z', period_end: '0001-01-01T00:00:00Z' }, ['submitted_at', 'period_start', 'period_end']],
    ])('refuses %s with 422 VALIDATION_ERROR naming the times, and uses no quota', async (_label, patch, fields) => {
      const s = submission(patch);
      const err = expectErrorBody(await a.call('POST', '/submit', s), 422, 'VALIDATION_ERROR');
      expect(err.details.fields.map((f: { field: string }) => f.field)).toEqual(fields);
      expect(await a.agg.repo.rateLimit(s.installation_id)).toBeUndefined();
    });

    test('takes a farm clock up to 24 hours ahead of its own', async () => {
      const s = submission({ submitted_at: new Date(NOW + 23 * HOUR_MS).toISOString(), period_end: new Date(NOW + 23 * HOUR_MS).toISOString() });
      expect((await a.call('POST', '/submit', s)).status).toBe(201);
      await a.call('DELETE', `/installation/${s.installation_id}`);
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



test('versions compare numerically', () => {
  expect(['1.9.0', '1.10.0', '1.2.0-beta.1', '1.2.0', 'v0.9'].sort(compareVersions)).toEqual(['v0.9', '1.2.0-beta.1', '1.2.0', '1.9.0', '1.10.0']);
});

test('the aggregator refuses to start without a submit key', async () => {
  await expect(startAggregator({ submitKeys: [' '] })).rejects.toThrow(/submit key/);
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
