/**
 * Per-client-IP rate limits: the spec's v1.0 figures, applied only while the
 * setting `rate_limit_enabled` is on (DECISIONS: off by default).
 *
 *  - general:   every request under /api/v1, 1000 per hour;
 *  - status:    the endpoints a dashboard polls for live state (printer list
 *               and detail, download status), 120 per minute;
 *  - downloads: file bodies being sent (GET /files/{id}/content), 50 at once;
 *  - websockets: /ws connections, 10 at once.
 *
 * The two request budgets are express-rate-limit middleware (its MemoryStore: a
 * window per client from its first request, so `X-RateLimit-Reset` is a real
 * instant, in Unix seconds, at which the count starts again; a store shared
 * between instances can be plugged in). A refused request does not count. The
 * counters live in memory: a restart forgives everyone. Things held open
 * (downloads, sockets) are counted here, which no window does.
 */
import type { IncomingMessage } from 'node:http';
import type { Request, RequestHandler, Response } from 'express';
import { MemoryStore, rateLimit, type RateLimitInfo } from 'express-rate-limit';
import { ApiError } from '../http/errors';
import { forwardedClient, type TrustFn } from '../util/proxy-trust';

export interface RateLimits {
  general: { limit: number; windowMs: number };
  status: { limit: number; windowMs: number };
  downloads: number;
  websockets: number;
}

/** The v1.0 specification's per-client-IP limits. */
export const V1_RATE_LIMITS: RateLimits = {
  general: { limit: 1000, windowMs: 3_600_000 },
  status: { limit: 120, windowMs: 60_000 },
  downloads: 50,
  websockets: 10,
};

export type LimitName = 'general' | 'status' | 'downloads' | 'websockets';

/** What the X-RateLimit-* headers say. */
export interface Quota {
  limit: number;
  remaining: number;
  /** Unix time in seconds when the window starts again (for concurrency limits: now). */
  reset: number;
}

/** Counts things held open per key (downloads in flight, sockets). */
class Concurrency {
  private readonly held = new Map<string, number>();

  constructor(readonly limit: number) {}

  /** Takes a slot; the returned function gives it back (once, however often it is called). */
  acquire(key: string): (() => void) | null {
    const count = this.held.get(key) ?? 0;
    if (count >= this.limit) return null;
    this.held.set(key, count + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.held.get(key) ?? 1) - 1;
      if (left > 0) this.held.set(key, left);
      else this.held.delete(key);
    };
  }

  inUse(key: string): number {
    return this.held.get(key) ?? 0;
  }
}

/** `::ffff:127.0.0.1` and `127.0.0.1` are one client. */
export function clientKey(address: string | undefined): string {
  if (!address) return 'unknown';
  return address.startsWith('::ffff:') ? address.slice(7) : address;
}

/**
 * The client address of a raw request (a WebSocket upgrade), read the way express reads `req.ip` with the
 * same trust function: the right-most X-Forwarded-For entry that no trusted proxy added (util/proxy-trust.ts).
 */
export function clientAddress(req: IncomingMessage, trust: TrustFn): string {
  return clientKey(forwardedClient(req, trust));
}

export function setQuotaHeaders(res: Response, quota: Quota): void {
  res.setHeader('X-RateLimit-Limit', String(quota.limit));
  res.setHeader('X-RateLimit-Remaining', String(Math.max(0, quota.remaining)));
  res.setHeader('X-RateLimit-Reset', String(quota.reset));
}

export function rateLimitError(limit: LimitName, quota: Quota, now: number): ApiError {
  const what = {
    general: `${quota.limit} requests per hour`,
    status: `${quota.limit} status requests per minute`,
    downloads: `${quota.limit} file downloads at once`,
    websockets: `${quota.limit} WebSocket connections at once`,
  }[limit];
  return new ApiError(429, 'RATE_LIMIT_EXCEEDED', `Too many requests: this client may make ${what}`, {
    limit,
    max: quota.limit,
    reset: quota.reset,
    retry_after_seconds: Math.max(1, quota.reset - Math.floor(now / 1000)),
  });
}

export interface RateLimiterOptions {
  /** Read on every request, so turning the setting on or off takes effect at once. */
  enabled: () => boolean;
  limits?: RateLimits;
  now?: () => number;
  /** Called with the name of each limit that refuses a request (metrics). */
  onRefused?: (limit: LimitName) => void;
}

export class RateLimiter {
  /** Every /api/v1 request: the hourly budget. */
  readonly api: RequestHandler;
  /** Status endpoints: the per-minute budget; its headers replace the hourly ones (it runs out first). */
  readonly statusRequests: RequestHandler;
  private readonly downloads: Concurrency;
  private readonly sockets: Concurrency;
  private readonly stores: MemoryStore[] = [];
  private readonly enabled: () => boolean;
  private readonly now: () => number;
  private readonly refused: (limit: LimitName) => void;

  constructor(options: RateLimiterOptions) {
    const limits = options.limits ?? V1_RATE_LIMITS;
    this.enabled = options.enabled;
    this.now = options.now ?? Date.now;
    this.refused = options.onRefused ?? (() => {});
    this.api = this.counted(limits.general, 'general');
    this.statusRequests = this.counted(limits.status, 'status');
    this.downloads = new Concurrency(limits.downloads);
    this.sockets = new Concurrency(limits.websockets);
  }

  /** File bodies: a slot per response being sent, given back when the response ends or the client goes. */
  readonly fileDownloads: RequestHandler = (req, res, next) => {
    if (!this.enabled()) return next();
    const key = clientKey(req.ip);
    const release = this.downloads.acquire(key);
    const now = this.now();
    const quota: Quota = { limit: this.downloads.limit, remaining: this.downloads.limit - this.downloads.inUse(key), reset: Math.ceil(now / 1000) };
    setQuotaHeaders(res, quota);
    if (!release) return next(this.refuse(res, 'downloads', quota, now));
    res.once('close', release);
    next();
  };

  /**
   * A WebSocket upgrade from `address`: a release function to call when the
   * socket closes, or the 429 error when the client already has its share.
   */
  admitWebSocket(address: string): { release: () => void } | { error: ApiError } {
    if (!this.enabled()) return { release: () => {} };
    const release = this.sockets.acquire(address);
    if (release) return { release };
    const now = this.now();
    this.refused('websockets');
    return { error: rateLimitError('websockets', { limit: this.sockets.limit, remaining: 0, reset: Math.ceil(now / 1000) }, now) };
  }

  /** Stops the stores' sweep timers. */
  close(): void {
    for (const store of this.stores) store.shutdown();
  }

  /**
   * A request counted in its client's window; the X-RateLimit-* headers say what is left of it
   * (the status budget's replace the hourly ones: it runs out first).
   */
  private counted(window: { limit: number; windowMs: number }, limit: LimitName): RequestHandler {
    const store = new MemoryStore();
    this.stores.push(store);
    const infoOf = (req: Request) => (req as Request & Record<string, RateLimitInfo>)[`rateLimit_${limit}`];
    return rateLimit({
      windowMs: window.windowMs,
      limit: window.limit,
      store,
      requestPropertyName: `rateLimit_${limit}`,
      legacyHeaders: true,
      standardHeaders: false,
      // Read on every request, so the setting takes effect at once; skipped requests neither count nor get headers.
      skip: () => !this.enabled(),
      keyGenerator: (req) => clientKey(req.ip),
      handler: async (req, res, next) => {
        const info = infoOf(req);
        // A refused request does not count.
        await store.decrement(info.key);
        const now = this.now();
        next(this.refuse(res, limit, { limit: info.limit, remaining: 0, reset: Math.ceil((info.resetTime?.getTime() ?? now) / 1000) }, now));
      },
      validate: {
        // TRUST_PROXY is the documented setting behind reverse proxies (req.ip then follows its trust
        // function, util/proxy-trust.ts); without it an X-Forwarded-For is ignored on purpose. Clients are their addresses (clientKey), IPv6 too.
        trustProxy: false,
        xForwardedForHeader: false,
        forwardedHeader: false,
        keyGeneratorIpFallback: false,
        ip: false,
      },
    });
  }

  private refuse(res: Response, limit: LimitName, quota: Quota, now: number): ApiError {
    this.refused(limit);
    const error = rateLimitError(limit, quota, now);
    res.setHeader('Retry-After', String(error.details.retry_after_seconds));
    return error;
  }
}

/** The route templates (under /api/v1) that count as status requests and as file downloads. */
export const STATUS_ROUTES = new Set(['GET /printers', 'GET /printers/{printer_id}', 'GET /files/{file_id}/download/status']);
export const DOWNLOAD_ROUTES = new Set(['GET /files/{file_id}/content']);

/** The extra limiter a route gets, if any. */
export function routeLimiter(limiter: RateLimiter, method: string, path: string): RequestHandler | undefined {
  const key = `${method.toUpperCase()} ${path}`;
  if (STATUS_ROUTES.has(key)) return limiter.statusRequests;
  if (DOWNLOAD_ROUTES.has(key)) return limiter.fileDownloads;
  return undefined;
}
