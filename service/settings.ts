/**
 * Runtime settings: the stored values over the environment defaults.
 * Reads come from memory (settings are read on hot paths such as every status
 * update); writes go to the database first and then to memory, so a failed
 * write changes nothing.
 */
import { isMaskedForm, maskCameraUrl } from './cameras/camera-url';
import { DomainError } from './errors';
import { isHttpUrl, RUNTIME_SETTINGS, runtimeDefaults, type RuntimeSettingKey, type RuntimeSettings } from './config';
import type { SettingsRepository } from './db/repositories/settings';
import { hoursError } from './queue/working-hours';
import { isValidTimeZone, nowIso } from './util/time';

export const MASK = '********';

/**
 * URL settings that may carry credentials: a Spoolman behind an authenticating proxy (user:password@), an
 * aggregation endpoint with a key in its query. Shown masked; writing the masked form back keeps the real one.
 */
const CREDENTIAL_URLS = ['spoolman_url', 'usage_stats_endpoint'] as const;

export class SettingsService {
  private values: RuntimeSettings;
  private readonly listeners: ((changed: string[]) => void)[] = [];

  private constructor(
    private readonly repo: SettingsRepository,
    defaults: RuntimeSettings,
    stored: Record<string, unknown>,
  ) {
    this.values = { ...defaults };
    for (const [key, value] of Object.entries(stored)) {
      // Keys of settings that no longer exist are ignored rather than fatal.
      if (key in RUNTIME_SETTINGS) (this.values as Record<string, unknown>)[key] = value;
    }
    // The key from the environment belongs to the endpoint from the environment: never send it elsewhere.
    if (!('usage_stats_api_key' in stored) && this.values.usage_stats_endpoint !== defaults.usage_stats_endpoint) this.values.usage_stats_api_key = '';
  }

  static async load(repo: SettingsRepository, env: NodeJS.ProcessEnv): Promise<SettingsService> {
    return new SettingsService(repo, runtimeDefaults(env), await repo.all());
  }

  get<K extends RuntimeSettingKey>(key: K): RuntimeSettings[K] {
    return this.values[key];
  }

  /** Every setting, with secrets masked: what GET /settings shows. */
  all(): RuntimeSettings {
    const out = { ...this.values };
    for (const [key, def] of Object.entries(RUNTIME_SETTINGS)) {
      if ('secret' in def && def.secret && out[key as RuntimeSettingKey]) (out as Record<string, unknown>)[key] = MASK;
    }
    for (const key of CREDENTIAL_URLS) out[key] = this.shown(key);
    return out;
  }

  /** A URL setting as shown to API clients: user, password and credential query parameters as ****. */
  shown(key: (typeof CREDENTIAL_URLS)[number]): string {
    return maskCameraUrl(this.values[key]) ?? '';
  }

  /** Validated values (types and ranges come from the schema); checks what a schema cannot, then persists. */
  async update(patch: Partial<RuntimeSettings>): Promise<string[]> {
    if (patch.timezone !== undefined && !isValidTimeZone(patch.timezone)) {
      throw new DomainError(422, 'VALIDATION_ERROR', `Invalid body: timezone: unknown time zone "${patch.timezone}"`, {
        location: 'body',
        fields: [{ field: 'timezone', message: 'unknown IANA time zone', code: 'invalid_value' }],
      });
    }
    if (patch.spoolman_url && !isHttpUrl(patch.spoolman_url)) {
      throw new DomainError(422, 'VALIDATION_ERROR', 'Invalid body: spoolman_url: must be an http(s) URL or empty', {
        location: 'body',
        fields: [{ field: 'spoolman_url', message: 'must be an http(s) URL or empty', code: 'invalid_format' }],
      });
    }
    const badHours = patch.queue_hours !== undefined ? hoursError(patch.queue_hours) : null;
    if (badHours) {
      throw new DomainError(422, 'VALIDATION_ERROR', `Invalid body: queue_hours: ${badHours}`, {
        location: 'body',
        fields: [{ field: 'queue_hours', message: badHours, code: 'invalid_value' }],
      });
    }
    // Writing back the mask shown by GET must not replace the real secret.
    const changes: Record<string, unknown> = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined && v !== MASK));
    for (const key of CREDENTIAL_URLS) if (typeof changes[key] === 'string' && isMaskedForm(changes[key], this.values[key])) delete changes[key];
    // A new endpoint does not get the old key (else anyone who can write settings could have it sent to them).
    if (changes.usage_stats_endpoint !== undefined && changes.usage_stats_endpoint !== this.values.usage_stats_endpoint && changes.usage_stats_api_key === undefined) {
      changes.usage_stats_api_key = '';
    }
    await this.repo.setMany(changes, nowIso());
    this.values = { ...this.values, ...changes };
    const changed = Object.keys(changes);
    if (changed.length) for (const listener of this.listeners) listener(changed);
    return changed;
  }

  /** `listener` hears the keys of every stored change (the queue's dispatcher resumes or pauses on them). */
  onChange(listener: (changed: string[]) => void): void {
    this.listeners.push(listener);
  }
}
