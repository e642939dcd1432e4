/**
 * Options of `printfarm aggregator`: flags win over environment variables.
 *
 * | Flag | Environment | Default |
 * |---|---|---|
 * | --port | AGGREGATOR_PORT | 8100 |
 * | --host | AGGREGATOR_HOST | 0.0.0.0 |
 * | --data-dir | AGGREGATOR_DATA_DIR | ./aggregator-data |
 * | --submit-key (repeatable, or comma-separated) | AGGREGATOR_SUBMIT_KEY (comma-separated) | required |
 * | --admin-key (repeatable, or comma-separated) | AGGREGATOR_ADMIN_KEY (comma-separated) | none (admin routes closed) |
 * | --api-key | AGGREGATOR_API_KEY | the old name of the submit key |
 * | --rate-limit | AGGREGATOR_RATE_LIMIT_PER_HOUR | 10 (per installation) |
 * | --rate-limit-per-address | AGGREGATOR_RATE_LIMIT_PER_ADDRESS | 60 |
 * | --rate-limit-per-key | AGGREGATOR_RATE_LIMIT_PER_KEY | 10000 |
 * | --trust-proxy | AGGREGATOR_TRUST_PROXY | off (true: one proxy, a hop count, or proxy addresses) |
 * | --tls-key / --tls-cert (PEM files) | AGGREGATOR_TLS_KEY / AGGREGATOR_TLS_CERT | plain HTTP |
 * | --database-url | DATABASE_URL | SQLite (aggregator.db in the data dir) |
 * | | DATABASE_POOL_MAX | 10 |
 * | | AGGREGATOR_SMTP_HOST, _PORT, _SECURE, _USER, _PASS, _FROM; AGGREGATOR_REPORT_TO (comma-separated) | no mail |
 */
import fs from 'node:fs';
import { ConfigError } from '../config';
import { parseTrustProxy, type TrustProxySetting } from '../util/proxy-trust';
import type { AggregatorOptions } from './app';
import type { SmtpOptions } from './reports';

export interface AggregatorFlags {
  port?: string;
  host?: string;
  'data-dir'?: string;
  'submit-key'?: string[];
  'admin-key'?: string[];
  'api-key'?: string[];
  'rate-limit'?: string;
  'rate-limit-per-address'?: string;
  'rate-limit-per-key'?: string;
  'trust-proxy'?: string;
  'tls-key'?: string;
  'tls-cert'?: string;
  'database-url'?: string;
}

const list = (v: string | undefined) => (v ?? '').split(',').map((s) => s.trim()).filter(Boolean);

function integer(name: string, raw: string, min: number, max: number): number {
  if (!/^\d+$/.test(raw.trim()) || Number(raw) < min || Number(raw) > max) throw new ConfigError(`${name} must be a whole number from ${min} to ${max}, got "${raw}"`);
  return Number(raw);
}

function readPem(name: string, file: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(`${name}: cannot read ${file} (${(err as Error).message})`);
  }
}

/** The proxies in front: true (one), false, a hop count, or the proxies' addresses (comma-separated); see util/proxy-trust.ts. */
function proxySetting(raw: string): TrustProxySetting {
  try {
    return parseTrustProxy(raw);
  } catch {
    throw new ConfigError(`--trust-proxy must be true, false, a hop count or proxy addresses, got "${raw.slice(0, 60)}"`);
  }
}

export function aggregatorOptions(flags: AggregatorFlags, env: NodeJS.ProcessEnv = process.env): AggregatorOptions {
  const keysOf = (flag: string[] | undefined, envValue: string | undefined) => (flag?.length ? flag.flatMap(list) : list(envValue));
  // --api-key / AGGREGATOR_API_KEY: the one shared key of before, now what it always was for installations: a submit key.
  const submitKeys = [...keysOf(flags['submit-key'], env.AGGREGATOR_SUBMIT_KEY), ...keysOf(flags['api-key'], env.AGGREGATOR_API_KEY)];
  if (submitKeys.length === 0) throw new ConfigError('the aggregation service needs at least one submit key: --submit-key KEY or AGGREGATOR_SUBMIT_KEY=key1,key2');
  const adminKeys = keysOf(flags['admin-key'], env.AGGREGATOR_ADMIN_KEY);
  const perAddress = flags['rate-limit-per-address'] ?? env.AGGREGATOR_RATE_LIMIT_PER_ADDRESS;
  const perKey = flags['rate-limit-per-key'] ?? env.AGGREGATOR_RATE_LIMIT_PER_KEY;
  const trustProxy = flags['trust-proxy'] ?? env.AGGREGATOR_TRUST_PROXY;
  const port = flags.port ?? env.AGGREGATOR_PORT;
  const rate = flags['rate-limit'] ?? env.AGGREGATOR_RATE_LIMIT_PER_HOUR;
  const tlsKey = flags['tls-key'] ?? env.AGGREGATOR_TLS_KEY;
  const tlsCert = flags['tls-cert'] ?? env.AGGREGATOR_TLS_CERT;
  if (!!tlsKey !== !!tlsCert) throw new ConfigError('--tls-key and --tls-cert go together');
  const databaseUrl = flags['database-url'] ?? env.DATABASE_URL;
  // Named without its value: a connection string holds a password.
  if (databaseUrl && !/^postgres(ql)?:\/\/./i.test(databaseUrl)) throw new ConfigError('--database-url (DATABASE_URL) must be a postgres:// URL');
  const poolMax = env.DATABASE_POOL_MAX;
  let smtp: SmtpOptions | undefined;
  if (env.AGGREGATOR_SMTP_HOST) {
    smtp = {
      host: env.AGGREGATOR_SMTP_HOST,
      ...(env.AGGREGATOR_SMTP_PORT ? { port: integer('AGGREGATOR_SMTP_PORT', env.AGGREGATOR_SMTP_PORT, 1, 65535) } : {}),
      secure: ['true', '1', 'yes', 'on'].includes((env.AGGREGATOR_SMTP_SECURE ?? '').toLowerCase()),
      ...(env.AGGREGATOR_SMTP_USER ? { user: env.AGGREGATOR_SMTP_USER, pass: env.AGGREGATOR_SMTP_PASS ?? '' } : {}),
      ...(env.AGGREGATOR_SMTP_FROM ? { from: env.AGGREGATOR_SMTP_FROM } : {}),
      to: list(env.AGGREGATOR_REPORT_TO),
    };
  }
  return {
    submitKeys,
    adminKeys,
    ...(perAddress === undefined ? {} : { rateLimitPerAddress: integer('--rate-limit-per-address', perAddress, 1, 10_000_000) }),
    ...(perKey === undefined ? {} : { rateLimitPerKey: integer('--rate-limit-per-key', perKey, 1, 10_000_000) }),
    ...(trustProxy === undefined || trustProxy === '' ? {} : { trustProxy: proxySetting(trustProxy) }),
    port: port === undefined ? 8100 : integer('--port', port, 0, 65535),
    host: flags.host ?? env.AGGREGATOR_HOST ?? '0.0.0.0',
    dataDir: flags['data-dir'] ?? env.AGGREGATOR_DATA_DIR ?? './aggregator-data',
    ...(rate === undefined ? {} : { rateLimitPerHour: integer('--rate-limit', rate, 1, 100_000) }),
    ...(tlsKey && tlsCert ? { tls: { key: readPem('--tls-key', tlsKey), cert: readPem('--tls-cert', tlsCert) } } : {}),
    ...(smtp ? { smtp } : {}),
    ...(databaseUrl ? { databaseUrl } : {}),
    ...(poolMax ? { poolMax: integer('DATABASE_POOL_MAX', poolMax, 1, 1000) } : {}),
  };
}
