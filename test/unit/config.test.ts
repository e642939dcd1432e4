import fs from 'node:fs';
import path from 'node:path';
import { ConfigError, parseSettingValue, RUNTIME_SETTINGS, runtimeDefaults, STARTUP_OPTIONS, startupOptions } from '../../service/config';

describe('configuration', () => {
  test('docs/configuration.md documents every setting with its environment variable, default and range', () => {
    const page = fs.readFileSync(path.join(__dirname, '../../docs/configuration.md'), 'utf8');
    for (const [key, def] of Object.entries({ ...STARTUP_OPTIONS, ...RUNTIME_SETTINGS })) {
      const row = page.split('\n').find((line) => line.startsWith(`| \`${key}\` |`));
      expect([key, row]).toEqual([key, expect.stringContaining(`\`${def.env}\``)]);
      if (key !== 'timezone') expect(row).toContain(def.default === '' ? '(empty)' : String(def.default));
      if ('min' in def) expect(row).toContain(`${def.min} to ${def.max}`);
    }
  });

  test('environment variables are parsed and checked against their ranges', () => {
    const s = runtimeDefaults({ JOB_CREATION_AUTO_CREATE: 'false', GCODE_OPTIMIZATION_MAX_LINES: '2000', USAGE_STATS_TIMEOUT: '60' });
    expect(s.job_creation_auto_create).toBe(false);
    expect(s.gcode_optimization_max_lines).toBe(2000);
    expect(s.usage_stats_timeout).toBe(60);
    expect(s.gcode_render_max_lines).toBe(10000);
    expect(() => runtimeDefaults({ USAGE_STATS_TIMEOUT: '61' })).toThrow(/USAGE_STATS_TIMEOUT.*between 5 and 60/);
    expect(() => runtimeDefaults({ JOB_CREATION_AUTO_CREATE: 'maybe' })).toThrow(ConfigError);
    expect(() => runtimeDefaults({ USAGE_STATS_ENDPOINT: 'ftp://x' })).toThrow(/http\(s\) URL/);
  });

  test('flags win over the environment', () => {
    const o = startupOptions({ PORT: '9000', DATA_DIR: '/env' }, { data_dir: '/flag' });
    expect(o).toMatchObject({ port: 9000, data_dir: '/flag', host: '0.0.0.0' });
    expect(() => startupOptions({}, { port: '70000' })).toThrow(/PORT/);
  });

  test('DATABASE_URL takes a postgres:// URL only, and is never echoed in the error (it holds a password)', () => {
    expect(startupOptions({ DATABASE_URL: 'postgres://u:pw@db:5432/farm', DATABASE_POOL_MAX: '25' })).toMatchObject({ database_url: 'postgres://u:pw@db:5432/farm', database_pool_max: 25 });
    expect(startupOptions({})).toMatchObject({ database_url: '', database_pool_max: 10 });
    expect(() => startupOptions({ DATABASE_URL: 'mysql://u:secret-pw@db/farm' })).toThrow(/DATABASE_URL must be a postgres:\/\/ URL/);
    expect(() => startupOptions({ DATABASE_URL: 'mysql://u:secret-pw@db/farm' })).not.toThrow(/secret-pw/);
    expect(() => startupOptions({ DATABASE_POOL_MAX: '0' })).toThrow(/DATABASE_POOL_MAX.*between 1 and 1000/);
  });

  test('booleans accept the usual spellings', () => {
    const def = RUNTIME_SETTINGS.business_mode;
    expect(['true', '1', 'YES', 'on'].map((v) => parseSettingValue('b', def, v))).toEqual([true, true, true, true]);
    expect(['false', '0', 'no', 'Off'].map((v) => parseSettingValue('b', def, v))).toEqual([false, false, false, false]);
  });
});
