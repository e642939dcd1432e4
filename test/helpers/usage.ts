/**
 * Helpers for the usage-statistics tests: a test CA with a server certificate
 * for 127.0.0.1, an aggregation service over HTTPS, a fault-injecting HTTPS
 * endpoint, a small HTTPS JSON client, and waiting without timers (so that it
 * works under fake timers too).
 */
import fs from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { generate } from 'selfsigned';
import { createAggregator, type Aggregator, type AggregatorOptions } from '../../service/aggregator/app';
import { checkAgainstOpenApi, type OpenApiSource } from './openapi-conformance';
import { tempDir } from './service';

export interface TestCa {
  /** CA certificate (PEM): what clients trust. */
  ca: string;
  /** Server key and certificate for 127.0.0.1 / localhost, signed by the CA. */
  key: string;
  cert: string;
}

let caPromise: Promise<TestCa> | undefined;

/** One CA per test file (EC keys: fast). */
export function testCa(): Promise<TestCa> {
  caPromise ??= (async () => {
    const ca = await generate([{ name: 'commonName', value: 'Printfarm Test CA' }], {
      keyType: 'ec',
      algorithm: 'sha256',
      extensions: [
        { name: 'basicConstraints', cA: true, critical: true },
        { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
      ],
    });
    const leaf = await generate([{ name: 'commonName', value: 'localhost' }], {
      keyType: 'ec',
      algorithm: 'sha256',
      ca: { key: ca.private, cert: ca.cert },
      extensions: [
        { name: 'basicConstraints', cA: false },
        { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
        { name: 'extKeyUsage', serverAuth: true },
        { name: 'subjectAltName', altNames: [{ type: 2, value: 'localhost' }, { type: 7, ip: '127.0.0.1' }] },
      ],
    });
    return { ca: ca.cert, key: leaf.private, cert: leaf.cert };
  })();
  return caPromise;
}

export interface JsonReply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  text: string;
}

/** A JSON request over HTTPS that trusts the test CA only. */
export function httpsJson(url: string, opts: { method?: string; body?: unknown; headers?: Record<string, string>; ca: string }): Promise<JsonReply> {
  return new Promise((resolve, reject) => {
    const payload = opts.body === undefined ? undefined : typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
    const req = https.request(
      url,
      {
        method: opts.method ?? 'GET',
        ca: opts.ca,
        agent: false,
        headers: { ...(payload !== undefined ? { 'content-type': 'application/json' } : {}), ...opts.headers },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d) => (text += d));
        res.on('end', () => {
          let body: unknown;
          try {
            body = text ? JSON.parse(text) : undefined;
          } catch {
            body = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body, text });
        });
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/** The aggregator's OpenAPI document: at /openapi.json, covering every path it serves. */
function aggregatorDocument(ca: string): OpenApiSource {
  return { docPath: '/openapi.json', prefix: '', read: async (url) => ((r) => (r.status === 200 ? r.body : null))(await httpsJson(url, { ca })) };
}

export interface AggregatorHarness {
  agg: Aggregator;
  base: string;
  dataDir: string;
  ca: string;
  logs: Record<string, unknown>[];
  /** Request with a valid key: the admin key on /stats and /reports, the submit key elsewhere (unless `key` says otherwise; null sends none). */
  call(method: string, path: string, body?: unknown, key?: string | null): Promise<JsonReply>;
  close(): Promise<void>;
}

/** The submit key installations carry. */
export const API_KEY = 'test-key-1';
/** The aggregator's admin key (dashboards, export, reports). */
export const ADMIN_KEY = 'test-admin-key';
const needsAdmin = (p: string) => /^\/(stats|reports)(\/|$|\?)/.test(p);

export async function startAggregator(options: Partial<AggregatorOptions> = {}): Promise<AggregatorHarness> {
  const { ca, key, cert } = await testCa();
  const dataDir = tempDir('printfarm-aggregator-');
  const logs: Record<string, unknown>[] = [];
  const logStream = new Writable({
    write(chunk, _enc, cb) {
      for (const line of chunk.toString().split('\n')) if (line.trim()) logs.push(JSON.parse(line));
      cb();
    },
  });
  // Tests submit many installations from 127.0.0.1: the per-address and per-key limits are tested on their own.
  const agg = await createAggregator({
    submitKeys: [API_KEY, 'second-key'],
    adminKeys: [ADMIN_KEY],
    rateLimitPerAddress: 1_000_000,
    rateLimitPerKey: 1_000_000,
    host: '127.0.0.1',
    port: 0,
    dataDir,
    tls: { key, cert },
    logStream,
    ...options,
  });
  const base = `https://127.0.0.1:${agg.port}`;
  return {
    agg,
    base,
    dataDir,
    ca,
    logs,
    // Every answer is held to the aggregator's own OpenAPI document (openapi-conformance.ts).
    call: async (method, path, body, apiKey = needsAdmin(path) ? ADMIN_KEY : API_KEY) => {
      const reply = await httpsJson(base + path, { method, body, ca, headers: apiKey === null ? {} : { 'x-api-key': apiKey } });
      await checkAgainstOpenApi(base, { method, urlPath: path, status: reply.status, contentType: String(reply.headers['content-type'] ?? ''), body: reply.body }, aggregatorDocument(ca));
      return reply;
    },
    async close() {
      await agg.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** What the fault endpoint does with one request. */
export type Fault =
  /** Destroys the connection without an answer (a network error for the client). */
  | 'reset'
  /** Never answers (a timeout for the client). */
  | 'stall'
  /** Passes the request on to the real aggregation service. */
  | 'forward'
  /** Passes the request on, then drops the connection instead of answering (stored there, a network error here). */
  | 'lost'
  | { status: number; body?: unknown };

export interface Attempt {
  /** Date.now() when the request arrived (the fake clock under fake timers). */
  at: number;
  method: string;
  url: string;
  headers: Record<string, string | string[] | undefined>;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  fault: Fault;
}

export interface FaultServer {
  url: string;
  attempts: Attempt[];
  /** Faults for the next requests, in order; when they run out, `otherwise` applies. */
  script(faults: Fault[], otherwise?: Fault): void;
  close(): Promise<void>;
}

/** An HTTPS endpoint (certificate of the test CA) that injects faults, else forwards to `forwardTo`. */
export async function startFaultServer(forwardTo?: string): Promise<FaultServer> {
  const { ca, key, cert } = await testCa();
  let queue: Fault[] = [];
  let otherwise: Fault = 'forward';
  const attempts: Attempt[] = [];
  const stalled = new Set<import('node:http').ServerResponse>();
  const server = https.createServer({ key, cert }, (req, res) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (d) => (text += d));
    req.on('end', () => {
      const fault = queue.length ? queue.shift()! : otherwise;
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        body = text;
      }
      attempts.push({ at: Date.now(), method: req.method ?? '', url: req.url ?? '', headers: req.headers, body, fault });
      if (fault === 'reset') {
        req.socket.destroy();
      } else if (fault === 'stall') {
        stalled.add(res);
      } else if (fault === 'forward' || fault === 'lost') {
        if (!forwardTo) throw new Error('no aggregation service to forward to');
        httpsJson(forwardTo + req.url, { method: req.method, body: text || undefined, ca, headers: { 'x-api-key': String(req.headers['x-api-key'] ?? '') } }).then(
          (reply) => (fault === 'lost' ? req.socket.destroy() : res.writeHead(reply.status, { 'content-type': 'application/json' }).end(reply.text)),
          () => req.socket.destroy(),
        );
      } else {
        res.writeHead(fault.status, { 'content-type': 'application/json' }).end(JSON.stringify(fault.body ?? { error: { code: 'INJECTED', message: `injected ${fault.status}` } }));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `https://127.0.0.1:${port}`,
    attempts,
    script(faults, rest = 'forward') {
      queue = [...faults];
      otherwise = rest;
    },
    async close() {
      for (const res of stalled) res.socket?.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * Waits until `cond()` holds, yielding to real I/O with setImmediate (never a timer, so this works under
 * fake timers). Fails after `maxMs` of real time.
 */
export async function until(cond: () => boolean, label: string, maxMs = 10_000): Promise<void> {
  const start = process.hrtime.bigint();
  while (!cond()) {
    if (Number(process.hrtime.bigint() - start) / 1e6 > maxMs) throw new Error(`timed out waiting for ${label}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** Fake timers that leave real I/O alone: only the clock and setTimeout/setInterval are faked. */
export function fakeClock(now?: Date | number): void {
  jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'clearImmediate', 'queueMicrotask', 'hrtime', 'performance'], ...(now !== undefined ? { now } : {}) });
}
