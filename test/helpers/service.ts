/**
 * Starts a real service (createService) on 127.0.0.1, port 0, with its SQLite
 * file in a fresh temp dir, and gives tests a tiny JSON HTTP client, which holds every answer to the
 * service's OpenAPI document (openapi-conformance.ts).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { createService, type Service, type ServiceOptions } from '../../service/app';
import { checkAgainstOpenApi } from './openapi-conformance';
import { silentDriverFactory } from './silent-driver';

export interface Harness {
  service: Service;
  base: string;
  dataDir: string;
  /** Log lines the service wrote (parsed pino JSON). */
  logs: Record<string, unknown>[];
  request(method: string, urlPath: string, body?: unknown, headers?: Record<string, string>): Promise<JsonResponse>;
  get(urlPath: string): Promise<JsonResponse>;
  post(urlPath: string, body?: unknown): Promise<JsonResponse>;
  put(urlPath: string, body?: unknown): Promise<JsonResponse>;
  del(urlPath: string): Promise<JsonResponse>;
  /** Stops the service; the data dir is kept so a test can start again on it. */
  stop(): Promise<void>;
  /** Starts a new service on the same data dir. */
  restart(options?: ServiceOptions): Promise<Harness>;
  /** Stops and removes the data dir. */
  close(): Promise<void>;
}

export interface JsonResponse {
  status: number;
  headers: Headers;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  text: string;
}

export function tempDir(prefix = 'printfarm-test-'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/** One HTTP request with an optional JSON body; the answer's body parsed when it is JSON. */
export async function jsonRequest(base: string, method: string, urlPath: string, body?: unknown, headers: Record<string, string> = {}): Promise<JsonResponse> {
  const init: RequestInit = { method, headers: { ...headers } };
  if (body !== undefined) {
    init.body = typeof body === 'string' ? body : JSON.stringify(body);
    (init.headers as Record<string, string>)['content-type'] ??= 'application/json';
  }
  const res = await fetch(base + urlPath, init);
  const text = await res.text();
  let parsed: unknown = undefined;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  await checkAgainstOpenApi(base, { method, urlPath, status: res.status, contentType: res.headers.get('content-type') ?? '', body: parsed });
  return { status: res.status, headers: res.headers, body: parsed, text };
}

export async function startService(options: ServiceOptions = {}, dataDir = tempDir()): Promise<Harness> {
  const logs: Record<string, unknown>[] = [];
  const logStream = new Writable({
    write(chunk, _enc, cb) {
      for (const line of chunk.toString().split('\n')) if (line.trim()) logs.push(JSON.parse(line));
      cb();
    },
  });
  const service = await createService({
    host: '127.0.0.1',
    port: 0,
    dataDir,
    env: {},
    logLevel: 'info',
    logStream,
    updateCheckUrl: 'http://127.0.0.1:9/unreachable',
    updateCheckTimeout: 1,
    // API tests never reach out to the printer addresses they store; e2e tests pass real drivers and simulators.
    driverFactory: silentDriverFactory,
    // No UDP listener unless a test asks for one (discovery: {ssdpPort: 'ephemeral'}).
    discovery: { ssdpPort: 0 },
    ...options,
  });
  const base = `http://127.0.0.1:${service.port}`;
  let stopped = false;
  const request = (method: string, urlPath: string, body?: unknown, headers: Record<string, string> = {}) => jsonRequest(base, method, urlPath, body, headers);
  const harness: Harness = {
    service,
    base,
    dataDir,
    logs,
    request,
    get: (p) => request('GET', p),
    post: (p, b) => request('POST', p, b),
    put: (p, b) => request('PUT', p, b),
    del: (p) => request('DELETE', p),
    async stop() {
      if (stopped) return;
      stopped = true;
      await service.close();
    },
    async restart(opts = {}) {
      await harness.stop();
      return startService({ ...options, ...opts }, dataDir);
    },
    async close() {
      await harness.stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return harness;
}

/** Uploads a local file through POST /files/upload (multipart); its id. */
export async function uploadFile(base: string, name: string, data: Buffer): Promise<string> {
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(data)]), name);
  const res = await fetch(`${base}/api/v1/files/upload`, { method: 'POST', body: form });
  expect(res.status).toBe(201);
  return ((await res.json()) as { id: string }).id;
}

/** Asserts the spec's error body and returns it. */
export function expectError(res: JsonResponse, status: number, code?: string) {
  expect(res.status).toBe(status);
  const err = res.body?.error;
  expect(err).toEqual({
    code: expect.any(String),
    message: expect.any(String),
    details: expect.any(Object),
    timestamp: expect.any(String),
    request_id: expect.any(String),
  });
  if (code) expect(err.code).toBe(code);
  expect(Number.isNaN(Date.parse(err.timestamp))).toBe(false);
  expect(res.headers.get('x-request-id')).toBe(err.request_id);
  expect(res.text).not.toMatch(/at \w+ \(|node_modules|\.ts:\d+/); // no stack traces
  return err;
}

export const bambu = (id = 'x1c-01', extra: Record<string, unknown> = {}) => ({
  id,
  name: `Bambu ${id}`,
  type: 'bambu_lab',
  model: 'X1C',
  ip_address: '192.168.1.20',
  access_code: '12345678',
  serial_number: '01S00A000000001',
  ...extra,
});

export const prusa = (id = 'mk4-01', extra: Record<string, unknown> = {}) => ({
  id,
  name: `Prusa ${id}`,
  type: 'prusa_core',
  model: 'MK4S',
  ip_address: 'prusa-mk4.local',
  access_code: 'secret-password',
  ...extra,
});
