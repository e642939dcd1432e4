/**
 * Who may do what on the aggregation service, and how often.
 *
 * Two kinds of key: a *submit* key is what every installation carries (it is
 * in their settings, so assume it leaks): it may send submissions and delete
 * one installation whose id it names (an installation's own "delete my data";
 * ids are random and only the installation and admins know them). An *admin*
 * key may also read the dashboards, export every installation and send report
 * mail. A submit key on an admin route gets 403 FORBIDDEN, no or an unknown
 * key 401.
 *
 * Submissions are limited per client address (IPv6 by its /64) and per key,
 * in fixed one-hour windows held in memory (per process), besides the
 * per-installation limit in the database: a client rotating installation ids
 * is stopped by the first two.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';
import type { RequestHandler } from 'express';
import { ApiError, sendError } from '../http/errors';

export type KeyRole = 'submit' | 'admin';

export interface AggregatorKeys {
  submit: string[];
  admin: string[];
}

/** Paths open to a submit key, and those that need an admin key. */
export const SUBMIT_PATHS = ['/submit', '/installation'];
export const ADMIN_PATHS = ['/stats', '/reports'];

export const DEFAULT_RATE_LIMIT_PER_ADDRESS = 60;
export const DEFAULT_RATE_LIMIT_PER_KEY = 10_000;
const WINDOW_MS = 60 * 60 * 1000;
/** Addresses and keys tracked at once; the oldest windows go first beyond it. */
const MAX_TRACKED = 100_000;

const digest = (key: string) => createHash('sha256').update(key).digest();

/** Checks X-API-Key in constant time (over digests) and wants at least `need`; keeps the key's digest for the limiter. */
export function keyCheck(keys: AggregatorKeys, need: KeyRole): RequestHandler {
  const known = [...keys.admin.map((k) => ({ d: digest(k), role: 'admin' as const })), ...keys.submit.map((k) => ({ d: digest(k), role: 'submit' as const }))];
  return (req, res, next) => {
    const given = req.get('x-api-key');
    if (!given) return sendError(res, new ApiError(401, 'UNAUTHORIZED', 'X-API-Key header required', { header: 'X-API-Key' }));
    const d = digest(given);
    // Every key is compared, so the time does not tell which one matched.
    let role: KeyRole | null = null;
    for (const k of known) if (timingSafeEqual(k.d, d) && role !== 'admin') role = k.role;
    if (!role) return sendError(res, new ApiError(401, 'UNAUTHORIZED', 'Invalid API key', { header: 'X-API-Key' }));
    if (need === 'admin' && role !== 'admin') {
      return sendError(res, new ApiError(403, 'FORBIDDEN', 'This key may submit statistics only; dashboards, exports and reports need an admin key', { required_role: 'admin' }));
    }
    res.locals.keyDigest = d.toString('hex').slice(0, 32);
    next();
  };
}

/** The bucket of an address: IPv4 as is, IPv6 by its /64 (one host owns a whole /64). */
export function addressBucket(address: string | undefined): string {
  const a = (address ?? '').replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/i, '');
  if (isIP(a) !== 6) return a || 'unknown';
  const [head, tail = ''] = a.toLowerCase().split('::');
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = a.includes('::') ? [...h, ...Array(Math.max(0, 8 - h.length - t.length)).fill('0'), ...t] : h;
  return `${groups.slice(0, 4).map((g) => g.replace(/^0+(?=.)/, '')).join(':')}::/64`;
}

interface Window {
  start: number;
  count: number;
}

export class SubmissionLimiter {
  private readonly windows = new Map<string, Window>();

  constructor(
    readonly perAddress: number,
    readonly perKey: number,
    private readonly now: () => number,
  ) {}

  /** Counts one submission request; the answer says which limit (if any) it is over. */
  take(address: string, keyDigest: string): { scope: 'address' | 'key'; limit: number; retryAfterSeconds: number } | null {
    const now = this.now();
    for (const [scope, id, limit] of [['address', `a:${addressBucket(address)}`, this.perAddress], ['key', `k:${keyDigest}`, this.perKey]] as const) {
      const w = this.window(id, now);
      if (w.count >= limit) return { scope, limit, retryAfterSeconds: Math.max(1, Math.ceil((w.start + WINDOW_MS - now) / 1000)) };
    }
    this.window(`a:${addressBucket(address)}`, now).count++;
    this.window(`k:${keyDigest}`, now).count++;
    return null;
  }

  private window(id: string, now: number): Window {
    let w = this.windows.get(id);
    if (!w || now - w.start >= WINDOW_MS) {
      this.windows.delete(id);
      w = { start: now, count: 0 };
      this.windows.set(id, w);
      while (this.windows.size > MAX_TRACKED) this.windows.delete(this.windows.keys().next().value!);
    }
    return w;
  }

  /** Express middleware for POST /submit (after keyCheck): 429 RATE_LIMIT_EXCEEDED with Retry-After. */
  middleware(): RequestHandler {
    return (req, res, next) => {
      const over = this.take(req.ip ?? req.socket.remoteAddress ?? '', String(res.locals.keyDigest ?? ''));
      if (!over) return next();
      res.setHeader('Retry-After', String(over.retryAfterSeconds));
      const who = over.scope === 'address' ? 'client address' : 'API key';
      sendError(
        res,
        new ApiError(429, 'RATE_LIMIT_EXCEEDED', `At most ${over.limit} submissions per hour per ${who}; retry in ${over.retryAfterSeconds} s`, {
          scope: over.scope,
          limit: over.limit,
          retry_after_seconds: over.retryAfterSeconds,
        }),
      );
    };
  }
}
