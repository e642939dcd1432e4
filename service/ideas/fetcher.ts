/**
 * Fetches model pages, and only model pages: every URL (the first and each
 * redirect) must be https on one of the five platforms' hosts, on the
 * default port, without credentials. A whole fetch (redirects and body) has
 * one timeout, and at most `maxBytes` of the body are read. The HTTP call
 * itself is injectable, so tests map platform URLs to a local fixture server
 * and the service never reaches the internet in tests.
 */
import { checkHost } from './platforms';

/** The HTTP call (default: the global fetch). It is only ever handed platform URLs. */
export type FetchFn = (url: string, init: RequestInit) => Promise<Response>;

export interface PageFetcherOptions {
  fetch?: FetchFn;
  /** Whole fetch, redirects and body included (default 5000 ms). */
  timeoutMs?: number;
  /** Body bytes read at most; a longer page is cut there (default 2 MB: OpenGraph and JSON-LD sit near the top). */
  maxBytes?: number;
  /** Default 3. */
  maxRedirects?: number;
  userAgent?: string;
}

export interface FetchedPage {
  /** The URL the page was finally read from (after redirects). */
  url: string;
  html: string;
  truncated: boolean;
}

export class FetchRefused extends Error {}

export const DEFAULT_FETCH_TIMEOUT_MS = 5000;
export const DEFAULT_MAX_PAGE_BYTES = 2 * 1024 * 1024;

/** Throws FetchRefused unless `url` may be fetched. */
export function assertFetchable(url: string): void {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new FetchRefused('not a URL');
  }
  const host = checkHost(parsed);
  if (!host.ok) throw new FetchRefused(`refused ${parsed.protocol}//${parsed.hostname}: ${host.reason}`);
  if (parsed.protocol !== 'https:') throw new FetchRefused(`refused ${parsed.protocol}//${parsed.hostname}: https only`);
}

export class PageFetcher {
  private readonly fetchFn: FetchFn;
  readonly timeoutMs: number;
  readonly maxBytes: number;
  private readonly maxRedirects: number;
  private readonly userAgent: string;

  constructor(options: PageFetcherOptions = {}) {
    this.fetchFn = options.fetch ?? ((url, init) => fetch(url, init));
    this.timeoutMs = options.timeoutMs ?? DEFAULT_FETCH_TIMEOUT_MS;
    this.maxBytes = options.maxBytes ?? DEFAULT_MAX_PAGE_BYTES;
    this.maxRedirects = options.maxRedirects ?? 3;
    this.userAgent = options.userAgent ?? 'Printfarm (model bookmark import)';
  }

  /** Reads a platform page; `signal` aborts it early (service shutdown). */
  async fetchPage(url: string, signal?: AbortSignal): Promise<FetchedPage> {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new Error(`timed out after ${this.timeoutMs} ms`)), this.timeoutMs);
    const onAbort = () => controller.abort(signal?.reason ?? new Error('aborted'));
    if (signal?.aborted) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
    try {
      let current = url;
      for (let hop = 0; ; hop++) {
        assertFetchable(current);
        const res = await this.race(
          this.fetchFn(current, {
            method: 'GET',
            redirect: 'manual',
            signal: controller.signal,
            headers: { accept: 'text/html,application/xhtml+xml;q=0.9,*/*;q=0.1', 'user-agent': this.userAgent },
          }),
          controller.signal,
        );
        if (res.status >= 300 && res.status < 400 && res.headers.get('location')) {
          await res.body?.cancel().catch(() => {});
          if (hop >= this.maxRedirects) throw new Error(`more than ${this.maxRedirects} redirects`);
          current = new URL(res.headers.get('location')!, current).toString();
          continue;
        }
        if (!res.ok) {
          await res.body?.cancel().catch(() => {});
          throw new Error(`HTTP ${res.status}`);
        }
        const type = res.headers.get('content-type') ?? '';
        if (type && !/html|xml/i.test(type)) {
          await res.body?.cancel().catch(() => {});
          throw new Error(`not an HTML page (${type.split(';')[0]})`);
        }
        const { text, truncated } = await this.race(this.readCapped(res), controller.signal);
        return { url: current, html: text, truncated };
      }
    } catch (err) {
      if (controller.signal.aborted && !(err instanceof FetchRefused)) {
        const reason = controller.signal.reason;
        throw reason instanceof Error ? reason : new Error(String(reason));
      }
      throw err;
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
  }

  /** Settles with `work` or rejects when `signal` aborts, whichever comes first (an injected fetch may ignore the signal). */
  private race<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
    if (signal.aborted) return Promise.reject(signal.reason);
    return new Promise<T>((resolve, reject) => {
      const onAbort = () => reject(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
      work.then(
        (v) => {
          signal.removeEventListener('abort', onAbort);
          resolve(v);
        },
        (e) => {
          signal.removeEventListener('abort', onAbort);
          reject(e);
        },
      );
    });
  }

  private async readCapped(res: Response): Promise<{ text: string; truncated: boolean }> {
    if (!res.body) return { text: '', truncated: false };
    const reader = res.body.getReader();
    const chunks: Uint8Array[] = [];
    let total = 0;
    let truncated = false;
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        const room = this.maxBytes - total;
        if (value.byteLength >= room) {
          chunks.push(value.subarray(0, room));
          total += room;
          // Stop reading: the rest of the page is never downloaded.
          truncated = value.byteLength > room || !(await reader.read().then((r) => r.done));
          break;
        }
        chunks.push(value);
        total += value.byteLength;
      }
    } finally {
      await reader.cancel().catch(() => {});
    }
    return { text: new TextDecoder('utf-8', { fatal: false }).decode(Buffer.concat(chunks)), truncated };
  }
}
