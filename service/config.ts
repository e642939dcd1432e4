/**
 * Every setting Printfarm knows: its key, type, default, environment variable
 * and range. Two kinds:
 *  - startup options (port, data dir...) are read once when the service starts;
 *  - runtime settings live in the database, can be changed through
 *    `PUT /api/v1/settings`, and take their environment variable as default.
 * The configuration table of docs/configuration.md (a test compares them) and the settings schemas are derived from
 * these tables, so they cannot drift apart.
 */
import fs from 'node:fs';
import path from 'node:path';
import { hoursError } from './queue/working-hours';
import { NotifyWebhooks, type NotifyWebhookTarget } from './schemas/notify';
import { parseTrustProxy, type TrustProxySetting } from './util/proxy-trust';
import { isValidTimeZone } from './util/time';

/** The package root: the folder of our package.json, found from here whether running from TypeScript sources or dist/. */
export const PACKAGE_ROOT: string = (() => {
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'package.json');
    if (fs.existsSync(candidate) && JSON.parse(fs.readFileSync(candidate, 'utf8')).name === '@printfarm/node-red-printfarm') return dir;
    if (path.dirname(dir) === dir) throw new Error('package.json of @printfarm/node-red-printfarm not found');
  }
})();

export const VERSION: string = JSON.parse(fs.readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')).version;

export type SettingType = 'boolean' | 'integer' | 'number' | 'string' | 'url' | 'enum' | 'webhooks';

export interface SettingDef {
  type: SettingType;
  default: boolean | number | string | readonly never[];
  env: string;
  description: string;
  min?: number;
  max?: number;
  values?: readonly string[];
  /** Secret values are never logged or exported. */
  secret?: boolean;
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** Read once at start; flags of `printfarm serve` win over these variables. */
export const STARTUP_OPTIONS = {
  port: { type: 'integer', default: 8000, env: 'PORT', min: 0, max: 65535, description: 'HTTP port of the API, /ws and the docs (0 picks a free port)' },
  host: { type: 'string', default: '0.0.0.0', env: 'HOST', description: 'Address to listen on' },
  data_dir: { type: 'string', default: './data', env: 'DATA_DIR', description: 'Folder for the SQLite database (printfarm.db) and downloaded files' },
  log_level: { type: 'enum', default: 'info', env: 'LOG_LEVEL', values: LOG_LEVELS, description: 'pino log level' },
  update_check_url: {
    type: 'url',
    default: 'https://api.github.com/repos/printfarm/node-red-printfarm/releases/latest',
    env: 'UPDATE_CHECK_URL',
    description: 'Where GET /update-check learns the latest version (GitHub release or npm "latest" JSON)',
  },
  update_check_timeout: { type: 'integer', default: 3, env: 'UPDATE_CHECK_TIMEOUT', min: 1, max: 30, description: 'Seconds before an unreachable update source counts as "no update"' },
  trust_proxy: {
    type: 'string',
    default: false,
    env: 'TRUST_PROXY',
    description:
      'Behind reverse proxies: `true` (one proxy), their number, or their addresses/subnets (comma-separated). The client address is the right-most X-Forwarded-For entry no trusted proxy added (rate limits count per client address)',
  },
  database_url: {
    type: 'string',
    default: '',
    env: 'DATABASE_URL',
    secret: true,
    description: 'postgres://user:password@host:5432/printfarm: keep the data in PostgreSQL instead of DATA_DIR/printfarm.db (see Scaling out)',
  },
  database_pool_max: { type: 'integer', default: 10, env: 'DATABASE_POOL_MAX', min: 1, max: 1000, description: 'Connections in the PostgreSQL pool (with DATABASE_URL)' },
  ws_max_clients: { type: 'integer', default: 1000, env: 'WS_MAX_CLIENTS', min: 1, max: 100_000, description: 'Most /ws connections open at once, in total (more are refused with 503, rate limits on or off)' },
  ws_max_clients_per_ip: { type: 'integer', default: 50, env: 'WS_MAX_CLIENTS_PER_IP', min: 1, max: 100_000, description: 'Most /ws connections open at once from one client address (503 beyond)' },
  max_download_size_mb: {
    type: 'integer',
    default: 2048,
    env: 'MAX_DOWNLOAD_SIZE_MB',
    min: 1,
    max: 1_048_576,
    description: 'Largest printer file downloaded to local storage (MiB); larger files get 413 FILE_TOO_LARGE, or fail with reason too_large when the printer under-reported the size',
  },
  auth_tokens: {
    type: 'string',
    default: '',
    env: 'AUTH_TOKENS',
    secret: true,
    description:
      'Turns on access control: `role:token` pairs (comma-separated; roles viewer, operator, admin; tokens of 16+ characters). Tokens made with `printfarm token create` count too. Empty and no tokens: the API is open',
  },
  allowed_origins: {
    type: 'string',
    default: '',
    env: 'ALLOWED_ORIGINS',
    description:
      'Web pages of other origins that may change things and read answers (comma-separated): `http://host:port`, `:1880` for this host on port 1880, `*` for any. Others get 403 ORIGIN_NOT_ALLOWED',
  },
  discovery_ssdp_port: {
    type: 'integer',
    default: 2021,
    env: 'DISCOVERY_SSDP_PORT',
    min: 0,
    max: 65535,
    description: 'UDP port where Bambu Lab printers announce themselves (SSDP NOTIFY); 0 turns printer discovery by announcement off',
  },
  allowed_hosts: {
    type: 'string',
    default: '',
    env: 'ALLOWED_HOSTS',
    description: 'Host names the service answers to besides IP addresses, localhost, this machine\'s names and single-label or .local names (comma-separated; `.example.com` for a domain, `*` for any). Others get 421 HOST_NOT_ALLOWED',
  },
} as const satisfies Record<string, SettingDef>;

/** Stored in the database; the environment variable is the default until a value is set through the API. */
export const RUNTIME_SETTINGS = {
  job_creation_auto_create: { type: 'boolean', default: true, env: 'JOB_CREATION_AUTO_CREATE', description: 'Create a job automatically when a print is detected' },
  monitoring_interval: { type: 'integer', default: 30, env: 'MONITORING_INTERVAL', min: 5, max: 3600, description: 'Seconds between printer status polls' },
  gcode_optimize_print_only: { type: 'boolean', default: true, env: 'GCODE_OPTIMIZE_PRINT_ONLY', description: 'Skip the warm-up phase in G-code previews' },
  gcode_optimization_max_lines: { type: 'integer', default: 1000, env: 'GCODE_OPTIMIZATION_MAX_LINES', min: 10, max: 1_000_000, description: 'Lines examined for a print-start marker' },
  gcode_render_max_lines: { type: 'integer', default: 10000, env: 'GCODE_RENDER_MAX_LINES', min: 100, max: 10_000_000, description: 'Lines rendered at most in a preview' },
  filament_cost_per_kg: { type: 'number', default: 25, env: 'FILAMENT_COST_PER_KG', min: 0, max: 10000, description: 'Filament price per kg, for material_cost of tracked jobs' },
  energy_price_per_kwh: { type: 'number', default: 0.3, env: 'ENERGY_PRICE_PER_KWH', min: 0, max: 100, description: 'Electricity price per kWh, for power_cost of tracked jobs' },
  default_printer_power_watts: { type: 'integer', default: 150, env: 'DEFAULT_PRINTER_POWER_WATTS', min: 1, max: 10000, description: "Average power draw of a printer without its own power_watts" },
  timezone: { type: 'string', default: Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC', env: 'TIMEZONE', description: 'IANA time zone used for "today" in summaries' },
  language: { type: 'enum', default: 'en', env: 'PRINTFARM_LANGUAGE', values: ['en', 'de'], description: 'Language of messages and the editor' },
  business_mode: { type: 'boolean', default: false, env: 'BUSINESS_MODE', description: 'Enable business analytics (costs, customers)' },
  status_history_retention_days: {
    type: 'integer',
    default: 400,
    env: 'STATUS_HISTORY_RETENTION_DAYS',
    min: 7,
    max: 3650,
    description: 'Days of printer status history kept for uptime statistics (pruned daily)',
  },
  rate_limit_enabled: {
    type: 'boolean',
    default: false,
    env: 'RATE_LIMIT_ENABLED',
    description: 'Per-client-IP limits: 1000 requests/hour, 120 status requests/minute, 50 file downloads and 10 /ws connections at once (429 RATE_LIMIT_EXCEEDED)',
  },
  queue_dispatch_enabled: { type: 'boolean', default: true, env: 'QUEUE_DISPATCH_ENABLED', description: 'Start queued prints on free, compatible printers (false pauses all dispatching)' },
  queue_max_parallel_uploads: {
    type: 'integer',
    default: 4,
    env: 'QUEUE_MAX_PARALLEL_UPLOADS',
    min: 1,
    max: 64,
    description: 'Printers that receive a queued file at the same time (never two uploads to one printer)',
  },
  queue_start_timeout_s: {
    type: 'integer',
    default: 300,
    env: 'QUEUE_START_TIMEOUT_S',
    min: 1,
    max: 3600,
    description: 'Seconds a printer has to acknowledge a queued start before the start counts as failed and the copy goes back to the queue',
  },
  queue_max_attempts: { type: 'integer', default: 3, env: 'QUEUE_MAX_ATTEMPTS', min: 1, max: 100, description: 'Failed starts or prints in a row after which a queue item is failed' },
  queue_printer_hold_s: {
    type: 'integer',
    default: 60,
    env: 'QUEUE_PRINTER_HOLD_S',
    min: 0,
    max: 3600,
    description: 'Seconds a printer gets no further queued start after one was sent, unless it acknowledged that start earlier',
  },
  queue_max_concurrent_heatups: {
    type: 'integer',
    default: 0,
    env: 'QUEUE_MAX_CONCURRENT_HEATUPS',
    min: 0,
    max: 1000,
    description: 'Printers heating or preparing at once after a queued start; a further start waits (0: no limit). Keeps a farm from tripping its breaker',
  },
  queue_start_stagger_s: { type: 'integer', default: 0, env: 'QUEUE_START_STAGGER_S', min: 0, max: 3600, description: 'Seconds at least between two queued starts anywhere in the farm (0: none)' },
  queue_hours: {
    type: 'string',
    default: '',
    env: 'QUEUE_HOURS',
    description: 'Working hours in the service time zone, e.g. "Mon-Fri 07:00-22:00, Sat 08:00-14:00": nothing starts outside them, nor a print that would end after they close (empty: any time)',
  },
  queue_printer_choice: {
    type: 'enum',
    default: 'first_free',
    env: 'QUEUE_PRINTER_CHOICE',
    values: ['first_free', 'least_used', 'same_as_last'],
    description: "Which free printer a copy goes to: first_free (the one started least recently), least_used (fewest print hours in the last 30 days), same_as_last (the printer of the item's last copy)",
  },
  camera_timeout_s: {
    type: 'integer',
    default: 10,
    env: 'CAMERA_TIMEOUT_S',
    min: 1,
    max: 120,
    description: 'Seconds a camera has to connect and send a frame before a snapshot answers 502 CAMERA_ERROR (and a silent stream is reconnected)',
  },
  camera_idle_s: { type: 'integer', default: 15, env: 'CAMERA_IDLE_S', min: 0, max: 3600, description: 'Seconds a camera connection stays open after its last viewer or snapshot' },
  camera_max_fps: { type: 'integer', default: 5, env: 'CAMERA_MAX_FPS', min: 1, max: 30, description: 'Most frames per second sent to a camera stream viewer' },
  camera_max_viewers: { type: 'integer', default: 20, env: 'CAMERA_MAX_VIEWERS', min: 1, max: 1000, description: 'Most camera streams served at once, all printers together (429 beyond)' },
  spool_low_threshold_g: {
    type: 'number',
    default: 100,
    env: 'SPOOL_LOW_THRESHOLD_G',
    min: 0,
    max: 100_000,
    description: 'Grams left below which a spool counts as low (the `low` filter of /spools, one spool_low event when a spool crosses it)',
  },
  queue_filament_margin_g: {
    type: 'number',
    default: 10,
    env: 'QUEUE_FILAMENT_MARGIN_G',
    min: 0,
    max: 10_000,
    description: 'Grams a spool must hold beyond what a queued print needs of it before the queue starts the print there',
  },
  spoolman_url: {
    type: 'string',
    default: '',
    env: 'SPOOLMAN_URL',
    description: 'Base address of a Spoolman server (http://host:7912): Spoolman is then the spool inventory (see docs/filament.md); empty: the embedded inventory',
  },
  notify_webhooks: {
    type: 'webhooks',
    default: [],
    env: 'NOTIFY_WEBHOOKS',
    description:
      'Where events worth telling are POSTed: a JSON list of `{"url": "...", "kinds": [...]}` (kinds: print_finished, print_failed, attention, printer_offline, plate_needs_clearing, queue_item_failed, spool_low; none: all); see docs/notifications.md',
  },
  offline_notify_s: { type: 'integer', default: 300, env: 'OFFLINE_NOTIFY_S', min: 1, max: 86400, description: 'Seconds a printer is offline before a printer_offline notification goes out' },
  discovery_ttl_s: { type: 'integer', default: 600, env: 'DISCOVERY_TTL_S', min: 10, max: 86400, description: 'Seconds a discovered printer stays listed after its last announcement or answer' },
  usage_stats_endpoint: { type: 'url', default: 'https://stats.printfarm.invalid/submit', env: 'USAGE_STATS_ENDPOINT', description: 'Aggregation service submit address' },
  usage_stats_api_key: { type: 'string', default: '', env: 'USAGE_STATS_API_KEY', secret: true, description: 'X-API-Key sent with usage statistics; bound to its endpoint: a new usage_stats_endpoint set through the API clears it unless the same request sets a new key' },
  usage_stats_timeout: { type: 'integer', default: 10, env: 'USAGE_STATS_TIMEOUT', min: 5, max: 60, description: 'Seconds per submission attempt' },
  usage_stats_retry_count: { type: 'integer', default: 3, env: 'USAGE_STATS_RETRY_COUNT', min: 0, max: 10, description: 'Retries of a failed submission' },
  usage_stats_submission_interval_days: { type: 'integer', default: 7, env: 'USAGE_STATS_SUBMISSION_INTERVAL_DAYS', min: 1, max: 30, description: 'Days between automatic submissions' },
} as const satisfies Record<string, SettingDef>;

export type RuntimeSettingKey = keyof typeof RUNTIME_SETTINGS;
type ValueOf<D extends SettingDef> = D['type'] extends 'boolean'
  ? boolean
  : D['type'] extends 'integer' | 'number'
    ? number
    : D['type'] extends 'webhooks'
      ? readonly NotifyWebhookTarget[]
      : string;
export type RuntimeSettings = { [K in RuntimeSettingKey]: ValueOf<(typeof RUNTIME_SETTINGS)[K]> };

export class ConfigError extends Error {}

/** An http(s) address (Spoolman's base address). */
export function isHttpUrl(raw: string): boolean {
  return URL.canParse(raw) && /^https?:$/.test(new URL(raw).protocol);
}

/** Parses one value (from the environment or a flag) against its definition. */
export function parseSettingValue(key: string, def: SettingDef, raw: string): boolean | number | string | NotifyWebhookTarget[] {
  const fail = (why: string) => new ConfigError(`${def.env} (${key}) ${why}, got "${raw}"`);
  switch (def.type) {
    case 'boolean': {
      const v = raw.trim().toLowerCase();
      if (['true', '1', 'yes', 'on'].includes(v)) return true;
      if (['false', '0', 'no', 'off'].includes(v)) return false;
      throw fail('must be true or false');
    }
    case 'integer': {
      if (!/^-?\d+$/.test(raw.trim())) throw fail('must be a whole number');
      const n = Number(raw);
      if ((def.min !== undefined && n < def.min) || (def.max !== undefined && n > def.max)) {
        throw fail(`must be between ${def.min} and ${def.max}`);
      }
      return n;
    }
    case 'number': {
      const n = Number(raw.trim());
      if (raw.trim() === '' || !Number.isFinite(n)) throw fail('must be a number');
      if ((def.min !== undefined && n < def.min) || (def.max !== undefined && n > def.max)) {
        throw fail(`must be between ${def.min} and ${def.max}`);
      }
      return n;
    }
    case 'enum':
      if (!def.values!.includes(raw)) throw fail(`must be one of ${def.values!.join(', ')}`);
      return raw;
    case 'webhooks': {
      let parsed: unknown;
      try {
        parsed = JSON.parse(raw);
      } catch {
        throw fail('must be a JSON list of {"url": ..., "kinds": [...]}');
      }
      const checked = NotifyWebhooks.safeParse(parsed);
      // Named without the value: webhook URLs can hold a token.
      if (!checked.success) throw new ConfigError(`${def.env} (${key}) must be a JSON list of at most 20 {"url": "http(s)://...", "kinds": [...]}: ${checked.error.issues[0]?.message ?? 'invalid'}`);
      return checked.data as unknown as string;
    }
    case 'url':
      if (!URL.canParse(raw) || !/^https?:$/.test(new URL(raw).protocol)) throw fail('must be an http(s) URL');
      return raw;
    default:
      // The API refuses unknown zones (PUT /settings); the environment must not smuggle one in.
      if (key === 'timezone' && !isValidTimeZone(raw)) throw fail('must be an IANA time zone such as Europe/Berlin');
      if (key === 'queue_hours' && hoursError(raw)) throw fail(`is not valid: ${hoursError(raw)}`);
      // Named without its value: a connection string holds a password.
      if (key === 'database_url' && !/^postgres(ql)?:\/\/./i.test(raw)) throw new ConfigError(`${def.env} must be a postgres:// URL`);
      if (key === 'spoolman_url' && !isHttpUrl(raw)) throw fail('must be an http(s) URL');
      if (key === 'trust_proxy') {
        try {
          return parseTrustProxy(raw);
        } catch (err) {
          throw fail((err as Error).message);
        }
      }
      return raw;
  }
}

function fromEnv<T extends Record<string, SettingDef>>(defs: T, env: NodeJS.ProcessEnv): { [K in keyof T]: T[K]['default'] } {
  const out: Record<string, unknown> = {};
  for (const [key, def] of Object.entries(defs)) {
    const raw = env[def.env];
    out[key] = raw === undefined || raw === '' ? def.default : parseSettingValue(key, def, raw);
  }
  return out as { [K in keyof T]: T[K]['default'] };
}

/** Defaults of the runtime settings: the environment, else the built-in default. Throws ConfigError on a bad value. */
export function runtimeDefaults(env: NodeJS.ProcessEnv = process.env): RuntimeSettings {
  return fromEnv(RUNTIME_SETTINGS, env) as unknown as RuntimeSettings;
}

export interface StartupOptions {
  port: number;
  host: string;
  data_dir: string;
  log_level: (typeof LOG_LEVELS)[number];
  update_check_url: string;
  update_check_timeout: number;
  trust_proxy: TrustProxySetting;
  database_url: string;
  database_pool_max: number;
  ws_max_clients: number;
  ws_max_clients_per_ip: number;
  max_download_size_mb: number;
  auth_tokens: string;
  allowed_origins: string;
  allowed_hosts: string;
  discovery_ssdp_port: number;
}

export function startupOptions(env: NodeJS.ProcessEnv = process.env, overrides: Partial<Record<keyof StartupOptions, string>> = {}): StartupOptions {
  const merged: NodeJS.ProcessEnv = { ...env };
  for (const [key, value] of Object.entries(overrides)) {
    if (value !== undefined) merged[STARTUP_OPTIONS[key as keyof StartupOptions].env] = value;
  }
  return fromEnv(STARTUP_OPTIONS, merged) as StartupOptions;
}
