/**
 * Sends a usage-statistics submission to the aggregation service: HTTPS only,
 * header X-API-Key, one timeout per attempt, and the spec's retry policy:
 * network errors, timeouts, HTTP 429 and 5xx are retried with waits of
 * 2^attempt seconds (attempt 1 at once, then 2 s, 4 s, 8 s...); HTTP 401 (and
 * any other 4xx) fails at once.
 *
 * Timeouts and waits use the global timers, so tests drive them with fake timers.
 */
import https from 'node:https';
import tls from 'node:tls';
import type { Logger } from 'pino';

export interface HttpsTarget {
  /** X-API-Key value. */
  apiKey: string;
  /** Per attempt, ms. */
  timeoutMs: number;
  /** Extra trusted CA certificate(s) in PEM (a private aggregator, tests). The system CAs stay trusted. */
  ca?: string | Buffer | (string | Buffer)[];
  /** Aborts a running attempt or wait (service shutdown). */
  signal?: AbortSignal;
}

export interface SubmitTarget extends HttpsTarget {
  endpoint: string;
  /** Retries after the first attempt (usage_stats_retry_count). */
  retries: number;
}

export interface HttpResult {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
}

export class SubmissionError extends Error {
  constructor(
    message: string,
    readonly attempts: number,
    readonly status: number | null,
    /** The last failure was of a retryable kind (retries ran out). */
    readonly retryable: boolean,
  ) {
    super(message);
  }
}

/** Wait before attempt `attempt + 1` after attempt `attempt` failed: 2^attempt seconds. */
export const backoffMs = (attempt: number): number => 2 ** attempt * 1000;

const MAX_RESPONSE_BYTES = 64 * 1024;

/**
 * A failed attempt. `message` is ours and safe to show to API clients; `cause` (the socket error) goes to
 * the log only: whoever can set the endpoint must not learn from our answers what listens where.
 */
export class AttemptError extends Error {
  constructor(
    message: string,
    readonly kind: 'network' | 'timeout' | 'aborted',
    readonly logDetail?: string,
  ) {
    super(message);
  }
}

/** What an HTTP status means, in our words: the remote body is never echoed (it could be any server's). */
export function statusReason(status: number): string {
  if (status === 401 || status === 403) return `HTTP ${status} (client error: the API key was refused)`;
  if (status === 429) return 'HTTP 429 (client error: rate limited)';
  if (status >= 400 && status < 500) return `HTTP ${status} (client error)`;
  if (status >= 500) return `HTTP ${status} (server error)`;
  return `HTTP ${status} (unexpected answer)`;
}

/** Refuses anything but an https: URL. */
export function httpsUrl(endpoint: string): URL {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw new SubmissionError(`usage_stats_endpoint is not a URL: "${endpoint}"`, 0, null, false);
  }
  if (url.protocol !== 'https:') throw new SubmissionError(`usage_stats_endpoint must use https (got ${url.protocol}//): statistics are only sent encrypted`, 0, null, false);
  return url;
}

/** One HTTPS request with a JSON body (or none) and a timeout; resolves with any status. */
export function requestJson(method: string, url: URL, body: unknown, target: HttpsTarget): Promise<HttpResult> {
  return new Promise<HttpResult>((resolve, reject) => {
    if (target.signal?.aborted) return reject(new AttemptError('aborted', 'aborted'));
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    let settled = false;
    const finish = (fn: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      target.signal?.removeEventListener('abort', onAbort);
      fn();
    };
    const req = https.request(
      url,
      {
        method,
        headers: {
          'X-API-Key': target.apiKey,
          Accept: 'application/json',
          'User-Agent': 'printfarm-usage-stats',
          ...(payload ? { 'Content-Type': 'application/json', 'Content-Length': String(payload.length) } : {}),
        },
        ...(target.ca ? { ca: caList(target.ca) } : {}),
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size <= MAX_RESPONSE_BYTES) chunks.push(chunk);
        });
        res.on('error', (err) => finish(() => reject(new AttemptError('the connection broke during the answer', 'network', err.message))));
        res.on('end', () =>
          finish(() => {
            const text = Buffer.concat(chunks).toString('utf8');
            let parsed: unknown = text;
            try {
              parsed = text ? JSON.parse(text) : null;
            } catch {
              // Not JSON: keep the text.
            }
            resolve({ status: res.statusCode ?? 0, headers: res.headers, body: parsed });
          }),
        );
      },
    );
    const timer = setTimeout(() => {
      finish(() => reject(new AttemptError(`no answer within ${target.timeoutMs / 1000} s`, 'timeout')));
      req.destroy();
    }, target.timeoutMs);
    const onAbort = () => {
      finish(() => reject(new AttemptError('aborted', 'aborted')));
      req.destroy();
    };
    target.signal?.addEventListener('abort', onAbort, { once: true });
    req.on('error', (err: Error & { code?: string }) =>
      finish(() => reject(new AttemptError('could not reach the aggregation service (network or TLS error)', 'network', `${err.code ?? 'network error'}: ${err.message}`))),
    );
    req.end(payload);
  });
}

/** Trusts the system CAs plus the given ones (Node's `ca` option would replace the defaults). */
function caList(ca: NonNullable<HttpsTarget['ca']>): (string | Buffer)[] {
  return [...(Array.isArray(ca) ? ca : [ca]), ...tls.rootCertificates];
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new AttemptError('aborted', 'aborted'));
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(new AttemptError('aborted', 'aborted'));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Why a submission stopped: the reason the caller aborted with (an opt-out, a shutdown), if it gave one. */
function abortReason(signal?: AbortSignal): string {
  const reason = signal?.reason;
  return typeof reason === 'string' ? `submission aborted (${reason})` : 'submission aborted (service shutting down)';
}

/** Posts `payload` with the retry policy; resolves with the successful response, or throws SubmissionError. */
export async function submitWithRetry(payload: unknown, target: SubmitTarget, log: Logger): Promise<HttpResult & { attempts: number }> {
  const url = httpsUrl(target.endpoint);
  const attempts = target.retries + 1;
  for (let attempt = 1; ; attempt++) {
    let failure: { reason: string; status: number | null; retryable: boolean; detail?: string };
    try {
      const res = await requestJson('POST', url, payload, target);
      if (res.status >= 200 && res.status < 300) return { ...res, attempts: attempt };
      failure = {
        reason: statusReason(res.status),
        status: res.status,
        // 429 and server errors are temporary; 401 (a rejected key) and other client errors will not heal by retrying.
        retryable: res.status === 429 || res.status >= 500,
      };
    } catch (err) {
      if (err instanceof AttemptError && err.kind === 'aborted') throw new SubmissionError(abortReason(target.signal), attempt, null, false);
      failure = { reason: (err as Error).message, status: null, retryable: true, detail: (err as AttemptError).logDetail };
    }
    if (!failure.retryable || attempt >= attempts) {
      log.warn({ attempt, attempts, status: failure.status, reason: failure.reason, detail: failure.detail }, 'usage statistics submission failed');
      throw new SubmissionError(failure.reason, attempt, failure.status, failure.retryable);
    }
    const wait = backoffMs(attempt);
    log.info({ attempt, attempts, status: failure.status, reason: failure.reason, detail: failure.detail, retry_in_ms: wait }, 'usage statistics submission attempt failed; retrying');
    try {
      await sleep(wait, target.signal);
    } catch {
      throw new SubmissionError(abortReason(target.signal), attempt, failure.status, true);
    }
  }
}
