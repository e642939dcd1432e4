/**
 * Asks a configurable URL for the latest release. Answers are cached (an hour
 * when the source answered, a minute when it did not), concurrent requests
 * share one lookup, and an unreachable source costs at most the timeout:
 * then the latest version is the current one and no update is offered.
 */
import type { Logger } from 'pino';
import { deadline } from '../util/deadline';
import { readBodyUpTo } from '../util/read-body';
import { nowIso } from '../util/time';

export interface UpdateInfo {
  current_version: string;
  latest_version: string;
  update_available: boolean;
  release_url: string;
  checked_at: string;
}

const SUCCESS_TTL_MS = 60 * 60 * 1000;
const FAILURE_TTL_MS = 60 * 1000;
/**
 * The answer is read up to this many decoded bytes (a release document is some kB): fetch
 * inflates gzip/br as it reads, so res.json() let a 300 kB bomb grow to hundreds of MB.
 */
const MAX_ANSWER_BYTES = 2 * 1024 * 1024;
/** A longer "version" is no version; it would be shown to users as is. */
const MAX_VERSION_LENGTH = 64;

async function readJsonCapped(res: Response): Promise<unknown> {
  const body = await readBodyUpTo(res, MAX_ANSWER_BYTES, () => new Error(`answer larger than ${MAX_ANSWER_BYTES} bytes`));
  return JSON.parse(body.toString('utf8'));
}

/** An http(s) link, or undefined: the release URL reaches browsers, so no javascript: or data: link. */
function releaseLink(value: unknown): string | undefined {
  if (typeof value !== 'string' || value.length > 2048) return undefined;
  try {
    const url = new URL(value);
    return url.protocol === 'https:' || url.protocol === 'http:' ? url.toString() : undefined;
  } catch {
    return undefined;
  }
}

/** Compares dotted versions (a leading "v", pre-release suffixes and build metadata are tolerated). */
export function isNewer(candidate: string, current: string): boolean {
  const parse = (v: string) => {
    const text = v.trim().replace(/^v/i, '').split('+')[0];
    const dash = text.indexOf('-');
    const core = dash < 0 ? text : text.slice(0, dash);
    const pre = dash < 0 ? '' : text.slice(dash + 1);
    return { nums: core.split('.').map((p) => Number.parseInt(p, 10) || 0), pre };
  };
  const a = parse(candidate);
  const b = parse(current);
  for (let i = 0; i < Math.max(a.nums.length, b.nums.length); i++) {
    const d = (a.nums[i] ?? 0) - (b.nums[i] ?? 0);
    if (d !== 0) return d > 0;
  }
  // Same numbers: a release is newer than its pre-release.
  if (!a.pre || !b.pre) return !a.pre && !!b.pre;
  return comparePre(a.pre, b.pre) > 0;
}

/** Semver precedence of two pre-release tags: numeric parts numerically and below word parts; more parts win when the rest is equal. */
function comparePre(a: string, b: string): number {
  const pa = a.split('.');
  const pb = b.split('.');
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    if (pa[i] === undefined || pb[i] === undefined) return pa[i] === undefined ? -1 : 1;
    const na = /^\d+$/.test(pa[i]);
    const nb = /^\d+$/.test(pb[i]);
    if (na && nb && Number(pa[i]) !== Number(pb[i])) return Number(pa[i]) - Number(pb[i]);
    if (na !== nb) return na ? -1 : 1;
    if (!na && pa[i] !== pb[i]) return pa[i] < pb[i] ? -1 : 1;
  }
  return 0;
}

/** Reads a GitHub release (`tag_name`, `html_url`) or an npm registry document (`version`). */
function parseRelease(body: unknown): { version: string; url?: string } | null {
  if (!body || typeof body !== 'object') return null;
  const b = body as Record<string, unknown>;
  const version = typeof b.tag_name === 'string' ? b.tag_name : typeof b.version === 'string' ? b.version : null;
  if (!version || version.length > MAX_VERSION_LENGTH || !/^v?\d+(\.\d+)*/.test(version)) return null;
  return { version: version.replace(/^v/i, ''), url: releaseLink(b.html_url) };
}

export class UpdateChecker {
  private cached: { info: UpdateInfo; until: number } | null = null;
  private inflight: Promise<UpdateInfo> | null = null;
  private readonly controller = new AbortController();

  constructor(
    private readonly currentVersion: string,
    private readonly url: string,
    private readonly timeoutMs: number,
    private readonly log: Logger,
    private readonly releasePage = 'https://github.com/printfarm/node-red-printfarm/releases',
  ) {}

  async check(): Promise<UpdateInfo> {
    if (this.cached && this.cached.until > Date.now()) return this.cached.info;
    this.inflight ??= this.lookup().finally(() => (this.inflight = null));
    return this.inflight;
  }

  /** Aborts a lookup in flight (service shutdown). */
  close(): void {
    this.controller.abort();
  }

  private async lookup(): Promise<UpdateInfo> {
    let release: { version: string; url?: string } | null = null;
    // The whole lookup, body included: an answer dripping a byte at a time would hold every request waiting on it.
    const due = deadline(this.timeoutMs, () => new Error(`timed out after ${this.timeoutMs} ms`), this.controller.signal);
    try {
      const res = await fetch(this.url, {
        headers: { accept: 'application/json', 'user-agent': `printfarm/${this.currentVersion}` },
        signal: due.signal,
      });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      release = parseRelease(await readJsonCapped(res));
      if (!release) throw new Error('no version in the answer');
    } catch (err) {
      this.log.info({ url: this.url, reason: (err as Error).message }, 'update check: source not reachable');
    } finally {
      due.clear();
    }
    const latest = release?.version ?? this.currentVersion;
    const info: UpdateInfo = {
      current_version: this.currentVersion,
      latest_version: latest,
      update_available: isNewer(latest, this.currentVersion),
      release_url: release?.url ?? this.releasePage,
      checked_at: nowIso(),
    };
    this.cached = { info, until: Date.now() + (release ? SUCCESS_TTL_MS : FAILURE_TTL_MS) };
    return info;
  }
}
