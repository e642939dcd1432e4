/**
 * What a printfarm-server dialog's values mean, checked with the limits the
 * service enforces (the editor checks the same ones; see printfarm-server.html).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { NodeDef } from '@node-red/registry';
import type { EmbeddedOptions } from '../service/embedded';

export interface ServerDef extends NodeDef {
  mode: 'embedded' | 'remote';
  url: string;
  port: string | number;
  /** Listen beyond this machine (on `host`, default every address); off: 127.0.0.1 only. */
  expose: boolean;
  host: string;
  dataDir: string;
  demo: boolean;
  logLevel: string;
  pollInterval: string | number;
}

/** The limits the editor enforces too (the service's monitoring_interval range). */
export const POLL_SECONDS = { min: 5, max: 3600, default: 30 };
export const DEFAULT_PORT = 8000;

/** What the dialog's values mean; throws with a reason on a value the service would refuse. */
/** `uiPort`: Node-RED's own port; pages it serves on this host (a dashboard) may use the API from the browser, other sites may not. */
export function embeddedOptions(def: ServerDef, userDir: string, extra: EmbeddedOptions, uiPort?: number | string): EmbeddedOptions {
  const port = def.port === '' || def.port === undefined || def.port === null ? DEFAULT_PORT : Number(def.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`port must be a whole number from 0 to 65535, got "${def.port}"`);
  const host = def.expose ? String(def.host ?? '').trim() || '0.0.0.0' : '127.0.0.1';
  if (!/^[A-Za-z0-9.:_-]{1,253}$/.test(host)) throw new Error(`host must be an IP address or host name, got "${host.slice(0, 60)}"`);
  return {
    port,
    host,
    dataDir: def.dataDir ? path.resolve(userDir, def.dataDir) : path.join(userDir, 'printfarm'),
    demo: def.demo === true,
    logLevel: (def.logLevel || 'warn') as EmbeddedOptions['logLevel'],
    allowedOrigins: uiPort ? [`:${uiPort}`] : [],
    ...extra,
  };
}

/** The poll interval in seconds; throws outside the limits (0 used to become 30 silently). */
export function pollSeconds(value: string | number | undefined): number {
  if (value === '' || value === undefined || value === null) return POLL_SECONDS.default;
  const n = Number(value);
  if (!Number.isFinite(n) || n < POLL_SECONDS.min || n > POLL_SECONDS.max) throw new Error(`polling must be ${POLL_SECONDS.min} to ${POLL_SECONDS.max} seconds, got "${value}"`);
  return n;
}

/** A remote base URL: http(s) only. */
export function remoteUrl(value: string | undefined): string {
  const url = String(value ?? '').trim();
  let parsed: URL | null = null;
  try {
    parsed = new URL(url);
  } catch {
    parsed = null;
  }
  if (!parsed || !/^https?:$/.test(parsed.protocol)) throw new Error(`the base URL must start with http:// or https://, got "${url.slice(0, 80)}"`);
  return url;
}


/** The config node's credentials (kept by Node-RED apart from the flow, never exported). */
export interface ServerCredentials {
  /** API token of a service with access control on (sent as `Authorization: Bearer`). */
  token?: string;
}

/**
 * Whether the embedded service will ask for a token: `AUTH_TOKENS` is set (in
 * printfarmServerOptions.env, or the process environment when that gives none)
 * or its data dir holds tokens made with `printfarm token create`.
 */
export function embeddedAccessControl(options: EmbeddedOptions): boolean {
  const env = options.env ?? process.env;
  if (String(env.AUTH_TOKENS ?? '').trim()) return true;
  try {
    // Bounded: a token file is small; a huge one is the service's problem, not the dialog's.
    const text = fs.readFileSync(path.join(options.dataDir ?? '', 'tokens.json'), 'utf8').slice(0, 1_000_000);
    const parsed = JSON.parse(text) as unknown;
    const list = (parsed as { tokens?: unknown } | null)?.tokens;
    return Array.isArray(list) && list.length > 0;
  } catch {
    return false;
  }
}
