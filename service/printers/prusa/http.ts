/**
 * The HTTP side of PrusaLink: one keep-alive agent per printer, Digest or
 * X-Api-Key authentication as the printer is configured (never one as a
 * fallback of the other: a 401 without a Digest challenge must not make the
 * password travel in clear as X-Api-Key), a deadline on every
 * request (a stalled printer never blocks a caller), and errors turned into
 * DriverErrors. The access code never leaves this file except inside the
 * Authorization / X-Api-Key headers it signs.
 */
import http from 'node:http';
import { createReadStream, createWriteStream } from 'node:fs';
import { unlink } from 'node:fs/promises';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { DriverError, storageFullCode } from '../driver';
import { DigestSession, parseDigestChallenge } from './digest';

export type AuthMode = 'unknown' | 'digest' | 'apikey';

/** How a printer is configured to authenticate: Digest (user maker + password) or the X-Api-Key header of older firmware. */
export type AuthMethod = 'digest' | 'api_key';

export interface HttpAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

export interface RequestOptions {
  body?: Buffer;
  /** A file streamed as the body (uploads), read again from the start when an authentication challenge needs a resend. */
  bodyFile?: { path: string; size: number };
  headers?: Record<string, string>;
  /** Overrides the client's timeout for this request (ms). */
  timeoutMs?: number;
  /** The caller's own abort signal (close of a cycle, user abort...). */
  signal?: AbortSignal;
}

export interface PrusaHttpOptions {
  host: string;
  port: number;
  username: string;
  password: string;
  /** Digest unless the printer is configured for its API key. */
  authMethod?: AuthMethod;
  /** Per-request deadline (ms): the whole answer for API calls, the longest silence for downloads. */
  timeoutMs: number;
}

const MAX_BODY = 4 * 1024 * 1024;
/** Renewals of a nonce the printer called stale, per request. */
const MAX_STALE_RETRIES = 3;

/** A timer plus linked abort signals; `timedOut` tells a deadline from any other abort. */
class Deadline {
  readonly controller = new AbortController();
  timedOut = false;
  private timer: NodeJS.Timeout | null = null;
  private readonly unlink: Array<() => void> = [];

  constructor(
    readonly ms: number,
    signals: Array<AbortSignal | undefined>,
  ) {
    for (const s of signals) {
      if (!s) continue;
      if (s.aborted) {
        this.controller.abort(s.reason);
        continue;
      }
      const onAbort = () => this.controller.abort(s.reason);
      s.addEventListener('abort', onAbort, { once: true });
      this.unlink.push(() => s.removeEventListener('abort', onAbort));
    }
    this.arm();
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** (Re)starts the countdown: called per request, and per received chunk while downloading. */
  arm(): void {
    if (this.timer) clearTimeout(this.timer);
    if (this.controller.signal.aborted) return;
    this.timer = setTimeout(() => {
      this.timedOut = true;
      this.controller.abort(new Error(`no answer within ${this.ms} ms`));
    }, this.ms);
  }

  clear(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    for (const u of this.unlink.splice(0)) u();
  }
}

function errorText(body: Buffer): string {
  const text = body.toString('utf8').trim();
  try {
    const json = JSON.parse(text) as { title?: string; text?: string; message?: string };
    const parts = [json.title, json.text ?? json.message].filter(Boolean);
    if (parts.length) return parts.join(': ').slice(0, 200);
  } catch {
    /* not JSON */
  }
  return text.slice(0, 200);
}

export function statusError(status: number, method: string, path: string, body: Buffer): DriverError {
  const text = errorText(body);
  const details = { status, method, path, ...(text ? { printer_message: text } : {}) };
  if (status === 401 || status === 403) return new DriverError('AUTH', 'access code rejected', details);
  if (status === 404) return new DriverError('NOT_FOUND', `not found on the printer: ${path}`, details);
  if (status === 409) return new DriverError('REJECTED', `the printer refused ${method} ${path}${text ? `: ${text}` : ''}`, details);
  return new DriverError('PROTOCOL', `unexpected answer ${status} to ${method} ${path}`, details);
}

export class PrusaHttpClient {
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 4, keepAliveMsecs: 1000 });
  private readonly closed = new AbortController();
  private digest: DigestSession | null = null;
  private mode: AuthMode = 'unknown';
  /** Counters for tests and diagnostics. */
  readonly stats = { requests: 0, stale_retries: 0 };

  constructor(private readonly opts: PrusaHttpOptions) {
    // An API-key printer sends its key from the first request; a Digest printer learns its nonce from the first 401.
    if (opts.authMethod === 'api_key') this.mode = 'apikey';
  }

  get authMode(): AuthMode {
    return this.mode;
  }

  /** One API call, answer buffered; a non-2xx answer rejects with the matching DriverError. */
  async request(method: string, path: string, options: RequestOptions = {}): Promise<HttpAnswer> {
    const deadline = new Deadline(options.timeoutMs ?? this.opts.timeoutMs, [this.closed.signal, options.signal]);
    try {
      const res = await this.exchange(method, path, options, deadline);
      const body = await readBody(res, deadline.signal);
      const status = res.statusCode ?? 0;
      if (status < 200 || status >= 300) throw statusError(status, method, path, body);
      return { status, headers: res.headers, body };
    } catch (err) {
      throw this.mapError(err, deadline, options.signal, method, path);
    } finally {
      deadline.clear();
    }
  }

  /** GET and parse JSON; 204 gives null. */
  async json<T>(path: string, options: RequestOptions = {}): Promise<T | null> {
    const answer = await this.request('GET', path, options);
    if (answer.status === 204 || answer.body.length === 0) return null;
    try {
      return JSON.parse(answer.body.toString('utf8')) as T;
    } catch {
      throw new DriverError('PROTOCOL', `the printer's answer to GET ${path} is not JSON`);
    }
  }

  /**
   * Streams GET `path` into `destination`. The deadline is the longest
   * silence (reset on every chunk), so slow links finish and dead ones fail.
   * A failed or aborted download leaves no file behind.
   */
  async download(
    path: string,
    destination: string,
    onProgress?: (bytes: number, total: number) => void,
    signal?: AbortSignal,
  ): Promise<{ bytes: number; total: number }> {
    const deadline = new Deadline(this.opts.timeoutMs, [this.closed.signal, signal]);
    let started = false;
    try {
      const res = await this.exchange('GET', path, {}, deadline);
      const status = res.statusCode ?? 0;
      if (status < 200 || status >= 300) throw statusError(status, 'GET', path, await readBody(res, deadline.signal));
      const header = res.headers['content-length'];
      const total = header !== undefined && /^\d+$/.test(header) ? Number(header) : -1;
      let bytes = 0;
      const counter = new Transform({
        transform(chunk: Buffer, _enc, done) {
          deadline.arm();
          bytes += chunk.length;
          onProgress?.(bytes, total);
          done(null, chunk);
        },
      });
      started = true;
      await pipeline(res, counter, createWriteStream(destination), { signal: deadline.signal });
      if (total >= 0 && bytes !== total) throw new DriverError('PROTOCOL', `download of ${path} ended after ${bytes} of ${total} bytes`);
      return { bytes, total };
    } catch (err) {
      if (started) await unlink(destination).catch(() => undefined);
      throw this.mapError(err, deadline, signal, 'GET', path);
    } finally {
      deadline.clear();
    }
  }

  /** Aborts everything in flight and drops the pooled sockets. */
  close(): void {
    this.closed.abort(new DriverError('OFFLINE', 'driver closed'));
    this.agent.destroy();
  }

  private authHeaders(method: string, path: string): Record<string, string> {
    if (this.mode === 'digest' && this.digest) return { authorization: this.digest.authorization(method, path) };
    if (this.mode === 'apikey') return { 'x-api-key': this.opts.password };
    return {};
  }

  /**
   * Sends the request, answering Digest challenges (a Digest printer only): a
   * fresh nonce from the first 401, a `stale=true` nonce renewed (a few times
   * at most). An API-key printer gets no second try: its 401 means a wrong key.
   * Returns the first answer that is not such a 401, body unread.
   */
  private async exchange(method: string, path: string, options: RequestOptions, deadline: Deadline): Promise<http.IncomingMessage> {
    let freshDigestSent = false;
    let staleRetries = 0;
    let resetRetried = false;
    for (;;) {
      const usingFreshDigest = this.mode === 'digest' && freshDigestSent;
      let res: http.IncomingMessage;
      try {
        res = await this.sendOnce(method, path, { ...options.headers, ...this.authHeaders(method, path) }, options.bodyFile ?? options.body, deadline.signal);
      } catch (err) {
        // A pooled socket the printer had already closed: send once more on a new one.
        if ((err as { reusedSocket?: boolean }).reusedSocket && !resetRetried && !deadline.signal.aborted) {
          resetRetried = true;
          continue;
        }
        throw err;
      }
      if (res.statusCode !== 401) return res;
      res.resume();
      if (this.opts.authMethod === 'api_key') throw new DriverError('AUTH', 'access code rejected', { status: 401, method, path, auth_method: 'api_key' });
      const challenge = parseDigestChallenge(res.headers['www-authenticate']);
      if (!challenge) {
        // Never fall back to X-Api-Key: that would send the password in clear to whoever answers 401 without a challenge.
        throw new DriverError('AUTH', 'the printer did not offer Digest authentication (set auth_method "api_key" for firmware that only takes an API key)', {
          status: 401,
          method,
          path,
          auth_method: 'digest',
        });
      }
      this.digest = new DigestSession(challenge, this.opts.username, this.opts.password);
      const wasDigest = this.mode === 'digest';
      this.mode = 'digest';
      if (!wasDigest || !usingFreshDigest) {
        // First try with a nonce from this very exchange (the cached one expired or was never there).
        if (challenge.stale) this.stats.stale_retries++;
        freshDigestSent = true;
        continue;
      }
      if (challenge.stale) {
        // stale=true means the password was right and only the nonce aged (a slow link can age even a
        // fresh one): renew a few times, and never call it a wrong access code.
        if (staleRetries < MAX_STALE_RETRIES) {
          staleRetries++;
          this.stats.stale_retries++;
          continue;
        }
        throw new DriverError('PROTOCOL', 'the printer keeps calling the Digest nonce stale', { status: 401, method, path });
      }
      // A fresh nonce was refused: wrong password.
      throw new DriverError('AUTH', 'access code rejected', { status: 401, method, path });
    }
  }

  private sendOnce(
    method: string,
    path: string,
    headers: Record<string, string>,
    body: Buffer | { path: string; size: number } | undefined,
    signal: AbortSignal,
  ): Promise<http.IncomingMessage> {
    const length = body === undefined ? undefined : Buffer.isBuffer(body) ? body.length : body.size;
    this.stats.requests++;
    return new Promise((resolve, reject) => {
      if (signal.aborted) return reject(signal.reason);
      const req = http.request(
        {
          host: this.opts.host,
          port: this.opts.port,
          method,
          path,
          agent: this.agent,
          signal,
          headers: { accept: 'application/json', ...headers, ...(length !== undefined ? { 'content-length': String(length) } : {}) },
        },
        resolve,
      );
      req.once('error', (err: Error & { reusedSocket?: boolean }) => {
        if (req.reusedSocket && !signal.aborted) err.reusedSocket = true;
        reject(err);
      });
      if (body === undefined || Buffer.isBuffer(body)) return req.end(body);
      // A printer that answers early (401, 409) stops reading: the rest of the file is not pushed into a closed socket.
      const file = createReadStream(body.path);
      file.once('error', (err) => req.destroy(err));
      req.once('response', () => file.unpipe(req));
      req.once('close', () => file.destroy());
      file.pipe(req);
    });
  }

  private mapError(err: unknown, deadline: Deadline, signal: AbortSignal | undefined, method: string, path: string): unknown {
    if (err instanceof DriverError) return err;
    // Our disk is full: the printer is fine, and the caller must not retry it as a lost link.
    if (storageFullCode(err)) return err;
    if (deadline.timedOut) return new DriverError('TIMEOUT', `no answer from the printer within ${deadline.ms} ms (${method} ${path})`);
    if (signal?.aborted) return signal.reason ?? err;
    if (this.closed.signal.aborted) return new DriverError('OFFLINE', 'driver closed');
    const code = (err as NodeJS.ErrnoException)?.code;
    const why = code ?? (err instanceof Error ? err.message : String(err));
    return new DriverError('OFFLINE', `printer unreachable (${why})`, { method, path, ...(code ? { cause: code } : {}) });
  }
}

function readBody(res: http.IncomingMessage, signal: AbortSignal): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = (err: unknown, value?: Buffer) => {
      if (done) return;
      done = true;
      signal.removeEventListener('abort', onAbort);
      if (err) reject(err);
      else resolve(value as Buffer);
    };
    const onAbort = () => {
      res.destroy();
      finish(signal.reason);
    };
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    res.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY) {
        res.destroy();
        finish(new DriverError('PROTOCOL', 'answer too large'));
      } else chunks.push(chunk);
    });
    res.once('end', () => finish(null, Buffer.concat(chunks)));
    res.once('error', (err) => finish(err));
    res.once('close', () => finish(new Error('connection closed before the answer was complete')));
  });
}
