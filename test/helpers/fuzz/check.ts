/**
 * Sending cases and checking the answers: no 5xx (a 502 only where the
 * operation documents it, for a valid request to a printer that never
 * answers), every error with the spec's error body and no stack trace, every
 * status one the document lists for the operation.
 */
import type { Harness } from '../service';
import { SEED } from './rng';
import type { Case } from './cases';

/** Requests in flight at once: enough to overlap, few enough for a busy 2-core machine. */
const CONCURRENCY = 8;

function describeCase(c: Case): string {
  const body = c.body === undefined ? '' : typeof c.body === 'string' ? c.body : Buffer.from(c.body).toString('latin1');
  const short = (s: string, n: number) => (s.length > n ? `${s.slice(0, n)}… (${s.length} chars)` : s);
  return `[seed ${SEED}] ${c.kind} ${c.op.key} (${c.label}): ${c.method} ${short(c.url, 200)} ${JSON.stringify(c.headers)} ${short(JSON.stringify(body), 300)}`;
}

/** What is wrong with the answer to `c` (nothing: an empty list). */
function problems(c: Case, status: number, headers: Headers, text: string): string[] {
  const out: string[] = [];
  if (status >= 500) {
    // A valid command to a printer that never connected is 502 PRINTER_OFFLINE, where the operation documents 502.
    const allowed = status === 502 && c.kind === 'valid' && c.op.statuses.has(502);
    if (!allowed) out.push(`status ${status}`);
  }
  if (c.kind === 'invalid' && (status < 400 || status >= 500)) out.push(`an invalid request got ${status}`);
  if (status >= 400) {
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    const err = (body as { error?: Record<string, unknown> } | undefined)?.error;
    const ok =
      err !== undefined &&
      Object.keys(body as object).length === 1 &&
      typeof err.code === 'string' &&
      err.code !== '' &&
      typeof err.message === 'string' &&
      typeof err.details === 'object' &&
      err.details !== null &&
      !Array.isArray(err.details) &&
      typeof err.timestamp === 'string' &&
      /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/.test(err.timestamp) &&
      typeof err.request_id === 'string' &&
      err.request_id !== '' &&
      err.request_id === headers.get('x-request-id');
    if (!ok) out.push(`no error body: ${text.slice(0, 300)}`);
    if (/at \w+ \(|node_modules|\.ts:\d+/.test(text)) out.push('a stack trace in the answer');
  }
  if (!c.op.statuses.has(status)) out.push(`status ${status} is not documented for ${c.op.key}`);
  return out;
}

/**
 * Sends every case, CONCURRENCY at a time (fetch keeps the connections alive), and returns the failures:
 * one example for each kind of problem on each operation, with how often it happened.
 */
export async function run(h: Harness, cases: Case[], statuses = new Map<string, Set<number>>()): Promise<string[]> {
  const found = new Map<string, { example: string; times: number }>();
  const failures = {
    push(line: string) {
      const [problem, example] = line.split('\n');
      const key = `${problem.replace(/: .*/s, '')} @ ${example.match(/\] \w+ (\S+ \S+)/)?.[1]}`;
      const seen = found.get(key);
      if (seen) seen.times++;
      else found.set(key, { example: line, times: 1 });
    },
  };
  let next = 0;
  const worker = async () => {
    while (next < cases.length) {
      const c = cases[next++];
      try {
        const res = await fetch(h.base + c.url, { method: c.method, headers: c.headers, body: c.body });
        const text = await res.text();
        statuses.set(c.op.key, (statuses.get(c.op.key) ?? new Set()).add(res.status));
        for (const p of problems(c, res.status, res.headers, text)) failures.push(`${p}\n    ${describeCase(c)}`);
      } catch (err) {
        failures.push(`request failed: ${(err as Error).message} ${(err as { cause?: Error }).cause?.message ?? ''}\n    ${describeCase(c)}`);
      }
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return [...found.values()].map(({ example, times }) => `${times}× ${example}`);
}

/** Errors the service did not expect, as their messages (the log has the stack). */
export const unhandled = (h: Harness) => h.logs.filter((l) => l.msg === 'unhandled error').map((l) => `${(l.err as { message?: string })?.message} (${l.req_id})`);
