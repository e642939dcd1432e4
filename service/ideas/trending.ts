/**
 * Trending models of MakerWorld and Printables, behind a cache with a 6 hour
 * lifetime. Automatic discovery is not active: the default source fetches
 * nothing, so the lists are empty unless something put items into the cache
 * (`cacheItems`). A discovery source can be plugged in (constructor option);
 * its failures are logged and never shown: the previous items stay.
 *
 * Refreshes: a background timer (unref'd; stopped by close()) refreshes
 * expired platforms; a read of an expired platform starts a refresh and
 * answers with the cache as it is; POST /ideas/trending/refresh forces one.
 */
import type { Logger } from 'pino';
import { notFound } from '../errors';
import type { Store } from '../db';
import type { NewTrendingItem, TrendingCacheRecord } from '../db/repositories/ideas';
import type { TrendingItemView, TrendingListView } from '../schemas/ideas';
import { deadline } from '../util/deadline';
import { nowIso } from '../util/time';
import { LIMITS, cleanText, cleanUrl } from './metadata';
import { recogniseModelUrl, TRENDING_PLATFORMS, trendingModelUrl, type TrendingPlatform } from './platforms';

export const TRENDING_TTL_MS = 6 * 60 * 60 * 1000;
/** After a failed refresh, reads wait this long before they start another one (a forced refresh does not wait). */
const RETRY_AFTER_FAILURE_MS = 60_000;

/** A trending model as a source (or a test) hands it over. */
export interface TrendingCandidate {
  model_id: string;
  title: string;
  creator_name?: string | null;
  /** Default: the platform's canonical page of the model. Must be a page of the platform. */
  source_url?: string | null;
  thumbnail_url?: string | null;
  description?: string | null;
  stats?: Record<string, number> | null;
}

export interface TrendingSource {
  /** false: discovery is off and `fetch` is never called. */
  readonly active: boolean;
  fetch(platform: TrendingPlatform, signal: AbortSignal): Promise<TrendingCandidate[]>;
}

/** Automatic trending discovery is not active (spec 4.7). */
export const inactiveTrendingSource: TrendingSource = { active: false, fetch: async () => [] };

export interface TrendingOptions {
  source?: TrendingSource;
  /** Cache lifetime (default 6 h). */
  ttlMs?: number;
  /** How often the background timer looks for expired platforms (default 10 min; 0 turns it off). */
  checkEveryMs?: number;
  /** First background check after start (default 5 s). */
  firstCheckMs?: number;
  /** A source's fetch is given up after this long (default 10 s). */
  fetchTimeoutMs?: number;
}

const INACTIVE_MESSAGE = 'Automatic trending discovery is not active; the list shows what the trending cache holds.';

export class TrendingService {
  private readonly source: TrendingSource;
  private readonly ttlMs: number;
  private readonly checkEveryMs: number;
  private readonly firstCheckMs: number;
  private readonly fetchTimeoutMs: number;
  private readonly inflight = new Map<TrendingPlatform, Promise<void>>();
  private readonly failedAt = new Map<TrendingPlatform, number>();
  private readonly controller = new AbortController();
  private timers: NodeJS.Timeout[] = [];
  private closed = false;

  constructor(
    private readonly store: Store,
    private readonly log: Logger,
    options: TrendingOptions = {},
  ) {
    this.source = options.source ?? inactiveTrendingSource;
    this.ttlMs = options.ttlMs ?? TRENDING_TTL_MS;
    this.checkEveryMs = options.checkEveryMs ?? 10 * 60 * 1000;
    this.firstCheckMs = options.firstCheckMs ?? 5000;
    this.fetchTimeoutMs = options.fetchTimeoutMs ?? 10_000;
  }

  get sourceName(): 'inactive' | 'live' {
    return this.source.active ? 'live' : 'inactive';
  }

  start(): void {
    if (this.closed || this.checkEveryMs <= 0) return;
    const first = setTimeout(() => void this.refreshExpired(), this.firstCheckMs);
    const every = setInterval(() => void this.refreshExpired(), this.checkEveryMs);
    first.unref();
    every.unref();
    this.timers.push(first, every);
  }

  /** Stops the timers, aborts a running fetch and waits for running refreshes to end. */
  async close(): Promise<void> {
    this.closed = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers = [];
    this.controller.abort(new Error('service stopping'));
    await Promise.allSettled([...this.inflight.values()]);
  }

  async list(which: 'all' | TrendingPlatform): Promise<TrendingListView> {
    const platforms = which === 'all' ? [...TRENDING_PLATFORMS] : [which];
    let states = await this.store.trending.cacheState(platforms);
    const now = Date.now();
    const due = (p: TrendingPlatform) => !this.closed && now - (this.failedAt.get(p) ?? -Infinity) >= RETRY_AFTER_FAILURE_MS;
    const missing = platforms.filter((p) => !states.some((s) => s.platform === p) && due(p));
    const expired = platforms.filter((p) => states.some((s) => s.platform === p && Date.parse(s.expires_at) <= now) && due(p));
    // Never filled: there is nothing to answer with yet, so wait for the refresh. Expired: answer now, refresh behind.
    if (missing.length > 0) {
      await Promise.all(missing.map((p) => this.refreshPlatform(p)));
      states = await this.store.trending.cacheState(platforms);
    }
    for (const p of expired) void this.refreshPlatform(p);
    const items = (await this.store.trending.items(platforms)).map(itemView);
    const times = this.times(states, platforms);
    return {
      platform: which,
      items,
      total: items.length,
      source: this.sourceName,
      cached_at: times.cached_at,
      expires_at: times.expires_at,
      stale: times.expires_at !== null && Date.parse(times.expires_at) <= Date.now(),
      message: this.source.active ? `Trending models cached for ${Math.round(this.ttlMs / 3_600_000)} h` : INACTIVE_MESSAGE,
    };
  }

  /** Forces a refresh (of one platform or all) and waits for it. Failures are logged, never reported. */
  async refresh(which: 'all' | TrendingPlatform) {
    const platforms = which === 'all' ? [...TRENDING_PLATFORMS] : [which];
    await Promise.all(platforms.map((p) => this.refreshPlatform(p, true)));
    const states = await this.store.trending.cacheState(platforms);
    const times = this.times(states, platforms);
    const items = await this.store.trending.items(platforms);
    return {
      platforms,
      source: this.sourceName,
      total_items: items.length,
      cached_at: times.cached_at,
      expires_at: times.expires_at,
      message: this.source.active ? 'Trending cache refreshed' : `Trending cache refreshed. ${INACTIVE_MESSAGE}`,
    };
  }

  /** A cached item, or 404 TRENDING_ITEM_NOT_FOUND. */
  async item(id: string) {
    const item = await this.store.trending.get(id);
    if (!item) throw notFound('TRENDING_ITEM_NOT_FOUND', `No trending item "${id}" in the cache`, { trending_id: id });
    return item;
  }

  /**
   * Puts items into a platform's cache (replacing what it held) with a fresh lifetime.
   * Items whose id or page is not one of the platform's are skipped.
   */
  async cacheItems(platform: TrendingPlatform, candidates: TrendingCandidate[]): Promise<number> {
    const items = candidates.map((c) => toNewItem(platform, c)).filter((i): i is NewTrendingItem => i !== null);
    const now = Date.now();
    await this.store.trending.replace(platform, items, new Date(now).toISOString(), new Date(now + this.ttlMs).toISOString());
    return items.length;
  }

  /** Refreshes the platforms whose cache is missing or past its lifetime (the background timer). */
  async refreshExpired(): Promise<void> {
    if (this.closed) return;
    try {
      const states = await this.store.trending.cacheState(TRENDING_PLATFORMS);
      const now = Date.now();
      const due = TRENDING_PLATFORMS.filter((p) => {
        const s = states.find((x) => x.platform === p);
        return !s || Date.parse(s.expires_at) <= now;
      });
      await Promise.all(due.map((p) => this.refreshPlatform(p)));
    } catch (err) {
      this.log.warn({ err }, 'trending: background refresh failed');
    }
  }

  /** One refresh per platform at a time; a forced refresh waits for a running one and then runs its own. */
  private refreshPlatform(platform: TrendingPlatform, force = false): Promise<void> {
    const running = this.inflight.get(platform);
    if (running && !force) return running;
    const run = (running ?? Promise.resolve())
      .then(() => this.doRefresh(platform))
      .finally(() => {
        if (this.inflight.get(platform) === run) this.inflight.delete(platform);
      });
    this.inflight.set(platform, run);
    return run;
  }

  private async doRefresh(platform: TrendingPlatform): Promise<void> {
    if (this.closed) return;
    const now = Date.now();
    const cachedAt = new Date(now).toISOString();
    const expiresAt = new Date(now + this.ttlMs).toISOString();
    try {
      if (!this.source.active) {
        // Nothing to discover: the cache keeps what it holds and counts as fresh.
        await this.store.trending.touch(platform, cachedAt, expiresAt);
        return;
      }
      const due = deadline(this.fetchTimeoutMs, () => new Error(`trending source gave no answer within ${this.fetchTimeoutMs} ms`), this.controller.signal);
      const signal = due.signal;
      // A source that ignores the signal still cannot hold a refresh (or the shutdown) past its timeout.
      const candidates = await new Promise<TrendingCandidate[]>((resolve, reject) => {
        if (signal.aborted) return reject(signal.reason);
        signal.addEventListener('abort', () => reject(signal.reason), { once: true });
        this.source.fetch(platform, signal).then(resolve, reject);
      }).finally(() => due.clear());
      if (this.closed) return;
      const items = candidates.map((c) => toNewItem(platform, c)).filter((i): i is NewTrendingItem => i !== null);
      await this.store.trending.replace(platform, items, nowIso(), new Date(Date.now() + this.ttlMs).toISOString());
      this.failedAt.delete(platform);
      this.log.info({ platform, items: items.length }, 'trending: cache refreshed');
    } catch (err) {
      this.failedAt.set(platform, Date.now());
      // Spec 7.5: logged, never shown. The previous items stay; the next read or check tries again.
      this.log.warn({ err, platform }, 'trending: refresh failed');
    }
  }

  private times(states: TrendingCacheRecord[], platforms: readonly TrendingPlatform[]) {
    if (states.length < platforms.length) return { cached_at: null, expires_at: null };
    const cached = states.map((s) => s.cached_at).sort()[0];
    const expires = states.map((s) => s.expires_at).sort()[0];
    return { cached_at: cached, expires_at: expires };
  }
}

function toNewItem(platform: TrendingPlatform, c: TrendingCandidate): NewTrendingItem | null {
  const modelId = typeof c.model_id === 'string' ? c.model_id.trim() : String(c.model_id ?? '');
  const canonical = trendingModelUrl(platform, modelId);
  const title = cleanText(c.title, LIMITS.title);
  if (!canonical || !title) return null;
  // A page URL is kept only when it names the same model on the same platform (kept as given: it may carry the slug).
  let sourceUrl = canonical;
  const given = c.source_url ? cleanUrl(c.source_url, canonical) : null;
  if (given?.startsWith('https://')) {
    const r = recogniseModelUrl(given);
    if (r.ok && r.model.platform === platform && r.model.model_id === modelId) sourceUrl = given;
  }
  const stats = c.stats ? Object.fromEntries(Object.entries(c.stats).filter(([k, v]) => /^[a-z_]{1,30}$/.test(k) && Number.isFinite(v))) : null;
  return {
    model_id: modelId,
    title,
    creator_name: cleanText(c.creator_name, LIMITS.creator),
    source_url: sourceUrl,
    thumbnail_url: cleanUrl(c.thumbnail_url, canonical),
    description: cleanText(c.description, LIMITS.description, true),
    stats: stats && Object.keys(stats).length > 0 ? stats : null,
  };
}

function itemView(row: Awaited<ReturnType<Store['trending']['items']>>[number]): TrendingItemView {
  return {
    id: row.id,
    platform: row.platform as TrendingPlatform,
    model_id: row.model_id,
    rank: row.rank,
    title: row.title,
    creator_name: row.creator_name,
    source_url: row.source_url,
    thumbnail_url: row.thumbnail_url,
    description: row.description,
    stats: (row.stats as Record<string, number> | null) ?? null,
    fetched_at: row.fetched_at,
    saved_idea_id: row.saved_idea_id,
  };
}

