
import { describeDialects } from '../helpers/dialects';
import fs from 'node:fs';
import { ConfigError } from '../../service/config';
import { expectError, startService, tempDir, type Harness } from '../helpers/service';

const DEFAULTS = {
  job_creation_auto_create: true,
  monitoring_interval: 30,
  gcode_optimize_print_only: true,
  gcode_optimization_max_lines: 1000,
  gcode_render_max_lines: 10000,
  usage_stats_endpoint: expect.stringMatching(/^https?:\/\//),
  usage_stats_api_key: '',
  usage_stats_timeout: 10,
  usage_stats_retry_count: 3,
  usage_stats_submission_interval_days: 7,
};

/** The fields an error names (a body that is left empty once unknown keys are dropped may add a "(root)" entry). */
const fieldsOf = (err: { details: { fields: { field: string }[] } }) =>
  [...new Set(err.details.fields.map((f) => f.field).filter((f) => f !== '(root)'))].sort();

describeDialects('settings API', (db) => {
  let h: Harness;
  afterEach(async () => {
    await h?.close();
    h = undefined as unknown as Harness;
  });

  describe('with the built-in defaults', () => {
    beforeEach(async () => {
      h = await startService(await db.options());
    });

    test('GET /settings has the spec keys with their defaults', async () => {
      const res = await h.get('/api/v1/settings');
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject(DEFAULTS);
      expect(typeof res.body.timezone).toBe('string');
    });

    test('PUT /settings answers 200 {status, message} and the change is visible and persists across a restart', async () => {
      const put = await h.put('/api/v1/settings', { job_creation_auto_create: false, monitoring_interval: 60, usage_stats_timeout: 5 });
      expect(put.status).toBe(200);
      expect(put.body).toMatchObject({ status: 'success', message: expect.any(String) });
      expect(put.body.updated.sort()).toEqual(['job_creation_auto_create', 'monitoring_interval', 'usage_stats_timeout']);

      const expected = { ...DEFAULTS, job_creation_auto_create: false, monitoring_interval: 60, usage_stats_timeout: 5 };
      expect((await h.get('/api/v1/settings')).body).toMatchObject(expected);
      h = await h.restart();
      expect((await h.get('/api/v1/settings')).body).toMatchObject(expected);
    });

    test('range limits are inclusive', async () => {
      const ok = await h.put('/api/v1/settings', {
        usage_stats_timeout: 60,
        usage_stats_retry_count: 0,
        usage_stats_submission_interval_days: 30,
      });
      expect(ok.status).toBe(200);
      expect((await h.put('/api/v1/settings', { usage_stats_retry_count: 10, usage_stats_submission_interval_days: 1 })).status).toBe(200);
      expect((await h.get('/api/v1/settings')).body).toMatchObject({
        usage_stats_timeout: 60,
        usage_stats_retry_count: 10,
        usage_stats_submission_interval_days: 1,
      });
    });

    test.each([
      ['a string for a boolean', { job_creation_auto_create: 'false' }, ['job_creation_auto_create']],
      ['a number for a boolean', { gcode_optimize_print_only: 0 }, ['gcode_optimize_print_only']],
      ['null', { monitoring_interval: null }, ['monitoring_interval']],
      ['a string for an integer', { monitoring_interval: '30' }, ['monitoring_interval']],
      ['a fraction', { monitoring_interval: 30.5 }, ['monitoring_interval']],
      ['monitoring_interval 0', { monitoring_interval: 0 }, ['monitoring_interval']],
      ['usage_stats_timeout 4', { usage_stats_timeout: 4 }, ['usage_stats_timeout']],
      ['usage_stats_timeout 61', { usage_stats_timeout: 61 }, ['usage_stats_timeout']],
      ['usage_stats_retry_count -1', { usage_stats_retry_count: -1 }, ['usage_stats_retry_count']],
      ['usage_stats_retry_count 11', { usage_stats_retry_count: 11 }, ['usage_stats_retry_count']],
      ['usage_stats_submission_interval_days 0', { usage_stats_submission_interval_days: 0 }, ['usage_stats_submission_interval_days']],
      ['usage_stats_submission_interval_days 31', { usage_stats_submission_interval_days: 31 }, ['usage_stats_submission_interval_days']],
      ['a huge number', { gcode_render_max_lines: 1e300 }, ['gcode_render_max_lines']],
      ['a non-http endpoint', { usage_stats_endpoint: 'javascript:alert(1)' }, ['usage_stats_endpoint']],
      ['an endpoint that is no URL', { usage_stats_endpoint: 'stats server' }, ['usage_stats_endpoint']],
      ['an unknown language', { language: 'xx' }, ['language']],
      ['an unknown key', { no_such_setting: true }, ['no_such_setting']],
      ['an object', { job_creation_auto_create: { value: false } }, ['job_creation_auto_create']],
      ['a __proto__ key', JSON.parse('{"__proto__": {"job_creation_auto_create": false}}'), ['__proto__']],
    ])('%s is 422 VALIDATION_ERROR naming the field, and nothing changes', async (_name, body, fields) => {
      const before = (await h.get('/api/v1/settings')).body;
      const err = expectError(await h.put('/api/v1/settings', body), 422, 'VALIDATION_ERROR');
      expect(err.details.location).toBe('body');
      expect(fieldsOf(err)).toEqual(fields);
      expect((await h.get('/api/v1/settings')).body).toEqual(before);
    });

    test('an empty body is 422', async () => {
      const err = expectError(await h.put('/api/v1/settings', {}), 422, 'VALIDATION_ERROR');
      expect(err.details.fields.length).toBeGreaterThan(0);
    });

    test('one bad key in a multi-key PUT changes nothing', async () => {
      const before = (await h.get('/api/v1/settings')).body;
      const err = expectError(
        await h.put('/api/v1/settings', { job_creation_auto_create: false, monitoring_interval: 45, usage_stats_timeout: 61 }),
        422,
        'VALIDATION_ERROR',
      );
      expect(fieldsOf(err)).toEqual(['usage_stats_timeout']);
      const unknown = expectError(await h.put('/api/v1/settings', { gcode_render_max_lines: 500, colour: 'red' }), 422, 'VALIDATION_ERROR');
      expect(unknown.details.fields).toEqual([{ field: 'colour', message: 'unknown field', code: 'unknown_field' }]);
      const tz = expectError(await h.put('/api/v1/settings', { monitoring_interval: 45, timezone: 'Mars/Olympus_Mons' }), 422, 'VALIDATION_ERROR');
      expect(fieldsOf(tz)).toEqual(['timezone']);

      expect((await h.get('/api/v1/settings')).body).toEqual(before);
      h = await h.restart();
      expect((await h.get('/api/v1/settings')).body).toEqual(before);
    });

    test('a bad time zone is 422; a real one is stored', async () => {
      for (const timezone of ['Mars/Olympus_Mons', '', 'Europe/Berlin; DROP TABLE settings']) {
        const err = expectError(await h.put('/api/v1/settings', { timezone }), 422, 'VALIDATION_ERROR');
        expect(fieldsOf(err)).toEqual(['timezone']);
      }
      expect((await h.put('/api/v1/settings', { timezone: 'Pacific/Auckland' })).status).toBe(200);
      expect((await h.get('/api/v1/settings')).body.timezone).toBe('Pacific/Auckland');
      expect((await h.get('/api/v1/system/info')).body.system.timezone).toBe('Pacific/Auckland');
    });

    test('GET /settings/application has the application settings and the G-code trio', async () => {
      const res = await h.get('/api/v1/settings/application');
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        job_creation_auto_create: true,
        monitoring_interval: 30,
        gcode_optimize_print_only: true,
        gcode_optimization_max_lines: 1000,
        gcode_render_max_lines: 10000,
        timezone: expect.any(String),
        language: 'en',
        business_mode: false,
      });
      await h.put('/api/v1/settings', { gcode_render_max_lines: 20000, business_mode: true });
      expect((await h.get('/api/v1/settings/application')).body).toMatchObject({ gcode_render_max_lines: 20000, business_mode: true });
    });

    test('GET/PUT /settings/gcode-optimization use the short names and share the values of /settings', async () => {
      const get = await h.get('/api/v1/settings/gcode-optimization');
      expect(get.status).toBe(200);
      expect(get.body).toEqual({ optimize_print_only: true, optimization_max_lines: 1000, render_max_lines: 10000 });

      const put = await h.put('/api/v1/settings/gcode-optimization', { optimize_print_only: false, render_max_lines: 5000 });
      expect(put.status).toBe(200);
      expect(put.body).toMatchObject({ status: 'success', optimize_print_only: false, optimization_max_lines: 1000, render_max_lines: 5000 });
      expect((await h.get('/api/v1/settings/gcode-optimization')).body).toEqual({
        optimize_print_only: false,
        optimization_max_lines: 1000,
        render_max_lines: 5000,
      });
      expect((await h.get('/api/v1/settings')).body).toMatchObject({
        gcode_optimize_print_only: false,
        gcode_optimization_max_lines: 1000,
        gcode_render_max_lines: 5000,
      });

      // And the other way round.
      await h.put('/api/v1/settings', { gcode_optimization_max_lines: 2500 });
      expect((await h.get('/api/v1/settings/gcode-optimization')).body.optimization_max_lines).toBe(2500);

      h = await h.restart();
      expect((await h.get('/api/v1/settings/gcode-optimization')).body).toEqual({
        optimize_print_only: false,
        optimization_max_lines: 2500,
        render_max_lines: 5000,
      });
    });

    test('PUT /settings/gcode-optimization refuses long names, wrong types, out-of-range values and empty bodies', async () => {
      const before = (await h.get('/api/v1/settings')).body;
      const long = expectError(await h.put('/api/v1/settings/gcode-optimization', { gcode_render_max_lines: 5000 }), 422, 'VALIDATION_ERROR');
      expect(fieldsOf(long)).toEqual(['gcode_render_max_lines']);
      const types = expectError(
        await h.put('/api/v1/settings/gcode-optimization', { optimize_print_only: 'no', optimization_max_lines: 1.5 }),
        422,
        'VALIDATION_ERROR',
      );
      expect(fieldsOf(types)).toEqual(['optimization_max_lines', 'optimize_print_only']);
      const range = expectError(
        await h.put('/api/v1/settings/gcode-optimization', { optimize_print_only: false, render_max_lines: -1 }),
        422,
        'VALIDATION_ERROR',
      );
      expect(fieldsOf(range)).toEqual(['render_max_lines']);
      expectError(await h.put('/api/v1/settings/gcode-optimization', {}), 422, 'VALIDATION_ERROR');
      expect((await h.get('/api/v1/settings')).body).toEqual(before);
    });

    test('usage_stats_api_key is masked once set; writing the mask back keeps the real key', async () => {
      expect((await h.get('/api/v1/settings')).body.usage_stats_api_key).toBe('');
      expect((await h.put('/api/v1/settings', { usage_stats_api_key: 'sk-very-secret-123' })).status).toBe(200);
      const masked = await h.get('/api/v1/settings');
      expect(masked.body.usage_stats_api_key).toBe('********');
      expect(masked.text).not.toContain('sk-very-secret-123');

      // A client that PUTs back what it read (mask included) must not overwrite the key.
      const roundTrip = await h.put('/api/v1/settings', { ...masked.body, monitoring_interval: 90 });
      expect(roundTrip.status).toBe(200);
      expect(roundTrip.body.updated).not.toContain('usage_stats_api_key');
      expect(h.service.context.settings.get('usage_stats_api_key')).toBe('sk-very-secret-123');
      expect(JSON.stringify(h.logs)).not.toContain('sk-very-secret-123');

      h = await h.restart();
      expect((await h.get('/api/v1/settings')).body).toMatchObject({ usage_stats_api_key: '********', monitoring_interval: 90 });
      expect(h.service.context.settings.get('usage_stats_api_key')).toBe('sk-very-secret-123');
    });
  });

  describe('environment variables', () => {
    const env = {
      JOB_CREATION_AUTO_CREATE: 'false',
      GCODE_OPTIMIZE_PRINT_ONLY: 'false',
      GCODE_OPTIMIZATION_MAX_LINES: '2000',
      GCODE_RENDER_MAX_LINES: '50000',
      MONITORING_INTERVAL: '15',
      USAGE_STATS_TIMEOUT: '20',
      USAGE_STATS_RETRY_COUNT: '5',
      USAGE_STATS_SUBMISSION_INTERVAL_DAYS: '14',
      USAGE_STATS_ENDPOINT: 'https://stats.example.test/api/submit',
      USAGE_STATS_API_KEY: 'env-secret-key',
      TIMEZONE: 'America/New_York',
    };

    test('are the defaults of the settings', async () => {
      h = await startService({ env, ...(await db.options()) });
      const res = await h.get('/api/v1/settings');
      expect(res.body).toMatchObject({
        job_creation_auto_create: false,
        gcode_optimize_print_only: false,
        gcode_optimization_max_lines: 2000,
        gcode_render_max_lines: 50000,
        monitoring_interval: 15,
        usage_stats_timeout: 20,
        usage_stats_retry_count: 5,
        usage_stats_submission_interval_days: 14,
        usage_stats_endpoint: 'https://stats.example.test/api/submit',
        usage_stats_api_key: '********',
        timezone: 'America/New_York',
      });
      expect(res.text).not.toContain('env-secret-key');
      expect((await h.get('/api/v1/settings/gcode-optimization')).body).toEqual({
        optimize_print_only: false,
        optimization_max_lines: 2000,
        render_max_lines: 50000,
      });
      expect((await h.get('/api/v1/settings/application')).body).toMatchObject({
        job_creation_auto_create: false,
        gcode_optimize_print_only: false,
        gcode_optimization_max_lines: 2000,
        gcode_render_max_lines: 50000,
      });
      expect((await h.get('/api/v1/system/info')).body.features.job_monitoring).toBe(false);
    });

    test('boolean variables accept the usual spellings; an empty variable means the default', async () => {
      h = await startService({ env: { JOB_CREATION_AUTO_CREATE: 'OFF', GCODE_OPTIMIZE_PRINT_ONLY: '0', GCODE_RENDER_MAX_LINES: '' } });
      expect((await h.get('/api/v1/settings')).body).toMatchObject({
        job_creation_auto_create: false,
        gcode_optimize_print_only: false,
        gcode_render_max_lines: 10000,
      });
    });

    test('values set through the API win over the environment, also after a restart', async () => {
      h = await startService({ env });
      await h.put('/api/v1/settings', { job_creation_auto_create: true, gcode_render_max_lines: 7777 });
      await h.put('/api/v1/settings/gcode-optimization', { optimization_max_lines: 333 });
      h = await h.restart(); // same env
      expect((await h.get('/api/v1/settings')).body).toMatchObject({
        job_creation_auto_create: true,
        gcode_render_max_lines: 7777,
        gcode_optimization_max_lines: 333,
        // Untouched settings still follow the environment.
        gcode_optimize_print_only: false,
        monitoring_interval: 15,
      });
      // A different environment on the next start changes the untouched ones only.
      h = await h.restart({ env: { ...env, MONITORING_INTERVAL: '120', JOB_CREATION_AUTO_CREATE: 'false' } });
      expect((await h.get('/api/v1/settings')).body).toMatchObject({ job_creation_auto_create: true, monitoring_interval: 120 });
    });

    test.each([
      ['JOB_CREATION_AUTO_CREATE', 'maybe', /JOB_CREATION_AUTO_CREATE.*true or false.*maybe/],
      ['GCODE_OPTIMIZE_PRINT_ONLY', '2', /GCODE_OPTIMIZE_PRINT_ONLY/],
      ['GCODE_OPTIMIZATION_MAX_LINES', 'lots', /GCODE_OPTIMIZATION_MAX_LINES.*whole number.*lots/],
      ['GCODE_RENDER_MAX_LINES', '1.5', /GCODE_RENDER_MAX_LINES.*whole number/],
      ['GCODE_RENDER_MAX_LINES', '0', /GCODE_RENDER_MAX_LINES.*between/],
      ['USAGE_STATS_TIMEOUT', '4', /USAGE_STATS_TIMEOUT.*between 5 and 60/],
      ['USAGE_STATS_TIMEOUT', '61', /USAGE_STATS_TIMEOUT.*between 5 and 60/],
      ['USAGE_STATS_ENDPOINT', 'ftp://stats.example.test', /USAGE_STATS_ENDPOINT.*http/],
      ['MONITORING_INTERVAL', '0', /MONITORING_INTERVAL.*between/],
      ['TIMEZONE', 'Mars/Olympus_Mons', /TIMEZONE.*Mars\/Olympus_Mons/],
      ['PRINTFARM_LANGUAGE', 'xx', /PRINTFARM_LANGUAGE/],
    ])('%s=%s makes the start fail with a ConfigError', async (name, value, message) => {
      const dir = tempDir();
      try {
        const start = startService({ env: { [name]: value } }, dir);
        await expect(start).rejects.toBeInstanceOf(ConfigError);
        await expect(start).rejects.toThrow(message);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });
  });
});
