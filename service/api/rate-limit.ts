/**
 * Per-client-IP rate limits: the spec's v1.0 figures, applied only while the
 * setting `rate_limit_enabled` is on (DECISIONS: off by default).
 *
 *  - general:   every request under /api/v1, 1000 per hour (fixed window);
 *  - status:    the endpoints a dashboard polls for live state (printer list
 *               and detail, download status), 120 per minute;
 *  - downloads: file bodies being sent (GET /files/{id}/content), 50 at once;
 *  - websockets: /ws connections, 10 at once.
 *
 * Windows are fixed, so `X-RateLimit-Reset` is a real instant (Unix seconds)
 * at which the count starts again. A refused request does not count. The
 * counters live in memory: a restart forgives everyone.
 */
import type { IncomingMessage } from 'node:http';
import type { RequestHandler, Response } from 'express';
import { ApiError } from './errors';

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

/** Counts requests per key in fixed windows. */
class FixedWindow {
  private readonly windows = new Map<string, { count: number; resetAt: number }>();
  private nextSweep = 0;

  constructor(
    readonly limit: number,
    private readonly windowMs: number,
  ) {}

  /** Counts one request for `key` if the window has room; says what is left either way. */
  take(key: string, now: number): Quota & { allowed: boolean } {
    this.sweep(now);
    let window = this.windows.get(key);
    if (!window || window.resetAt <= now) {
      window = { count: 0, resetAt: now + this.windowMs };
      this.windows.set(key, window);
    }
    const allowed = window.count < this.limit;
    if (allowed) window.count++;
    return { allowed, limit: this.limit, remaining: this.limit - window.count, reset: Math.ceil(window.resetAt / 1000) };
  }

  /** Forgets expired windows now and then, so clients that went away cost no memory. */
  private sweep(now: number): void {
    if (now < this.nextSweep) return;
    this.nextSweep = now + Math.min(this.windowMs, 60_000);
    for (const [key, window] of this.windows) if (window.resetAt <= now) this.windows.delete(key);
  }
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
 * The client address of a raw request (a WebSocket upgrade), read the way
 * express reads `req.ip`: behind a trusted proxy the left-most X-Forwarded-For.
 */
export function clientAddress(req: IncomingMessage, trustProxy: boolean): string {
  const forwarded = trustProxy ? req.headers['x-forwarded-for'] : undefined;
  const first = (Array.isArray(forwarded) ? forwarded[0] : forwarded)?.split(',')[0]?.trim();
  return clientKey(first || req.socket.remoteAddress);
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
  private readonly enabled: () => boolean;
  private readonly now: () => number;
  private readonly refused: (limit: LimitName) => void;

  constructor(options: RateLimiterOptions) {
    const limits = options.limits ?? V1_RATE_LIMITS;
    this.enabled = options.enabled;
    this.now = options.now ?? Date.now;
    this.refused = options.onRefused ?? (() => {});
    this.api = this.counted(new FixedWindow(limits.general.limit, limits.general.windowMs), 'general');
    this.statusRequests = this.counted(new FixedWindow(limits.status.limit, limits.status.windowMs), 'status');
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

  /** A request counted in a fixed window; the answer says what is left of it. */
  private counted(window: FixedWindow, limit: LimitName): RequestHandler {
    return (req, res, next) => {
      if (!this.enabled()) return next();
      const now = this.now();
      const quota = window.take(clientKey(req.ip), now);
      setQuotaHeaders(res, quota);
      if (!quota.allowed) return next(this.refuse(res, limit, quota, now));
      next();
    };
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
