/**
 * Schema-driven fuzzing: every operation of the service's own OpenAPI
 * document gets thousands of generated requests, invalid ones and valid ones
 * at the boundaries. New endpoints are covered as soon as they are in the
 * document: an operation that gets no cases fails the test.
 *
 * The promises checked: no 5xx (a 502 only where the operation documents it,
 * for a valid request to a printer that never answers); every error has the
 * error body; an invalid request changes nothing in the database nor on disk.
 *
 * Reproduce a failure with the seed it prints: FUZZ_SEED=<seed> npx jest test/api/fuzz.test.ts
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import type { AnyConnection } from '../../service/db/connection';
import {
  accepts,
  acceptsParam,
  boundaryValues,
  deepArrayText,
  invalidValues,
  MALFORMED_JSON,
  operationsOf,
  PATH_TRICKS,
  Rng,
  sampleValid,
  UNICODE_EDGES,
  type Operation,
  type Schema,
} from '../helpers/fuzz';
import { bambu, prusa, startService, type Harness } from '../helpers/service';
import { describeDialects } from '../helpers/dialects';
import { snapshotDb, sqliteIntegrity } from '../helpers/db-snapshot';

const SEED = Number(process.env.FUZZ_SEED ?? 20250417);
/** Requests in flight at once: enough to overlap, few enough for a busy 2-core machine. */
const CONCURRENCY = 8;
const MB = 1024 * 1024;

interface Case {
  op: Operation;
  label: string;
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: string | Uint8Array;
  /**
   * invalid: the oracle says the request breaks the document (or names nothing that exists): it must get a 4xx.
   * valid: any documented answer without a 5xx (a 502 where documented).
   * harmless: a read with odd extras: anything but a 5xx.
   */
  kind: 'invalid' | 'valid' | 'harmless';
}

interface Seeded {
  printers: string[];
  jobs: number[];
  ideas: number[];
  files: string[];
}

// ---------------------------------------------------------------------------
// Sending and checking

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
async function run(h: Harness, cases: Case[], statuses = new Map<string, Set<number>>()): Promise<string[]> {
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
const unhandled = (h: Harness) => h.logs.filter((l) => l.msg === 'unhandled error').map((l) => `${(l.err as { message?: string })?.message} (${l.req_id})`);

// ---------------------------------------------------------------------------
// The database and the disk, seen from outside the service

/** The store's connection (the service's own kysely: reads see what it committed). */
const connectionOf = (h: Harness) => h.service.context.store.connection as AnyConnection<unknown>;

/** Every file under `dir`, relative to it. */
function listFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out.push(path.relative(dir, p));
    }
  };
  walk(dir);
  return out.sort();
}

// ---------------------------------------------------------------------------
// Case generation

const enc = (v: string) => {
  try {
    return encodeURIComponent(v);
  } catch {
    return encodeURIComponent(v.replace(/\p{Surrogate}/gu, '')) + '%ED%A0%80';
  }
};

/** The decoded value of an encoded path segment, or null when it does not decode (a 400 either way). */
const decoded = (s: string): string | null => {
  try {
    return decodeURIComponent(s);
  } catch {
    return null;
  }
};

/** Raw query values worth trying on any parameter; the oracle sorts out which are invalid for it. */
const QUERY_RAW = ['', ' ', 'abc', '-1', '0', '1.5', '1e309', 'NaN', '0x10', '9'.repeat(30), 'TRUE', 'yes', '\u0000', '../../etc/passwd', 'x'.repeat(5000), ...UNICODE_EDGES];

function queryString(values: [string, string][]): string {
  return values.length ? '?' + values.map(([k, v]) => `${enc(k)}=${enc(v)}`).join('&') : '';
}

/** Existing ids per path parameter name. */
function existingIds(seed: Seeded): Record<string, string[]> {
  return {
    printer_id: seed.printers,
    job_id: seed.jobs.map(String),
    idea_id: seed.ideas.map(String),
    file_id: seed.files,
    trending_id: [],
  };
}

/** Values for fields the schema cannot know: ids that exist. */
function hintFor(seed: Seeded) {
  return (name: string): unknown => {
    if (name === 'printer_id') return seed.printers[0];
    if (name === 'job_id') return seed.jobs[0];
    if (name === 'file_ids') return [seed.files[0]];
    // A model page the importer recognises (its fetch refuses to go out).
    if (name === 'url') return 'https://www.printables.com/model/123456-fuzz';
    return undefined;
  };
}

/** A path with every parameter filled from `values` (already encoded). */
function fillPath(op: Operation, values: Record<string, string>): string {
  return op.path.replace(/\{(\w+)\}/g, (_m, name: string) => values[name]);
}

/** Path parameters set to an existing id (or, where nothing exists, a well-formed one). */
function existingPathValues(op: Operation, seed: Seeded, rng: Rng): Record<string, string> {
  const ids = existingIds(seed);
  const out: Record<string, string> = {};
  for (const p of op.params.filter((p) => p.in === 'path')) out[p.name] = enc(ids[p.name]?.length ? rng.pick(ids[p.name]) : 'makerworld:1');
  return out;
}

function requiredQuery(op: Operation, rng: Rng): [string, string][] {
  return op.params.filter((p) => p.in === 'query' && p.required).map((p) => [p.name, String(sampleValid(p.schema, rng))]);
}

const json = (value: unknown) => JSON.stringify(value);
const JSON_HEADERS = { 'content-type': 'application/json' };

/** A multipart body with one part. */
function multipart(boundary: string, field: string, filename: string | null, content: string, close = true): string {
  const disposition = `form-data; name="${field}"${filename === null ? '' : `; filename="${filename}"`}`;
  return `--${boundary}\r\nContent-Disposition: ${disposition}\r\nContent-Type: application/octet-stream\r\n\r\n${content}\r\n${close ? `--${boundary}--\r\n` : ''}`;
}

const GCODE = '; generated by fuzz\nG28\nG1 X10 Y10 Z0.2 F1500\nM104 S0\n';

/** Invalid and hostile requests for one operation. */
function invalidCases(op: Operation, seed: Seeded, rng: Rng): Case[] {
  const cases: Case[] = [];
  const ids = existingIds(seed);
  const pathValues = existingPathValues(op, seed, rng);
  const baseQuery = requiredQuery(op, rng);
  const url = (paths = pathValues, query = baseQuery) => fillPath(op, paths) + queryString(query);
  const add = (label: string, partial: Partial<Case> & { url: string }) =>
    cases.push({ op, label, method: op.method, headers: {}, kind: 'invalid', ...partial });
  const validBody = op.body?.contentType === 'application/json' ? (sampleValid(op.body.schema, rng, hintFor(seed)) as Record<string, unknown>) : undefined;
  const bodyFields = validBody === undefined ? {} : { body: json(validBody), headers: JSON_HEADERS };

  // Path parameters: tricks, and well-formed ids that name nothing.
  for (const p of op.params.filter((p) => p.in === 'path')) {
    for (const trick of [...PATH_TRICKS, ...UNICODE_EDGES.map(enc), enc(`${ids[p.name]?.[0] ?? 'x'}\u0000`), enc(`${ids[p.name]?.[0] ?? 'x'} `)]) {
      const value = decoded(trick);
      // A valid value that names an existing entity is a valid request: not for this phase.
      if (value !== null && acceptsParam(p.schema, value) && (ids[p.name] ?? []).includes(value)) continue;
      add(`path ${p.name}=${trick.slice(0, 40)}`, { url: url({ ...pathValues, [p.name]: trick }), ...bodyFields });
    }
  }

  // Query parameters: every raw value the oracle refuses, bounds just outside, a scalar given twice.
  for (const p of op.params.filter((p) => p.in === 'query')) {
    const s = p.schema.anyOf ? p.schema.anyOf[0] : p.schema;
    const edges = [s.minimum, s.maximum].filter((b) => typeof b === 'number').flatMap((b: number) => [String(b - 1), String(b + 1)]);
    const strings = typeof s.maxLength === 'number' ? ['q'.repeat(s.maxLength + 1)] : [];
    const enums = s.enum ? (s.enum as string[]).map((e) => ` ${e}`) : [];
    for (const raw of [...QUERY_RAW, ...edges, ...strings, ...enums]) {
      if (acceptsParam(p.schema, raw)) continue;
      add(`query ${p.name}=${raw.slice(0, 30)}`, { url: url(pathValues, [...baseQuery.filter(([k]) => k !== p.name), [p.name, raw]]), ...bodyFields });
    }
    const takesArrays = (p.schema.anyOf ?? [p.schema]).some((b: Schema) => b.type === 'array');
    if (!takesArrays) {
      const v = String(sampleValid(p.schema, rng));
      add(`query ${p.name} twice`, { url: url(pathValues, [...baseQuery.filter(([k]) => k !== p.name), [p.name, v], [p.name, v]]), ...bodyFields });
    }
  }

  if (op.body?.contentType === 'application/json' && validBody !== undefined) {
    const schema = op.body.schema;
    const send = (label: string, body: string | Uint8Array, headers: Record<string, string> = JSON_HEADERS) => add(label, { url: url(), body, headers });
    const sendValue = (label: string, value: unknown) => {
      if (!accepts(schema, value)) send(label, json(value));
    };

    // Every property, and the properties of nested objects: each value the oracle refuses.
    const setAt = (obj: Record<string, unknown>, at: string[], v: unknown): Record<string, unknown> => {
      const inner = obj[at[0]];
      return { ...obj, [at[0]]: at.length === 1 ? v : setAt(inner && typeof inner === 'object' && !Array.isArray(inner) ? (inner as Record<string, unknown>) : {}, at.slice(1), v) };
    };
    const walk = (s: Schema, at: string[]) => {
      for (const [name, prop] of Object.entries((s.properties ?? {}) as Record<string, Schema>)) {
        const where = [...at, name];
        const label = where.join('.');
        const values = invalidValues(prop, rng);
        // The long values always; a sample of the rest keeps the count in bounds.
        const long = values.filter((v) => typeof v === 'string' && v.length > 1000);
        for (const v of [...long, ...rng.sample(values.filter((v) => !long.includes(v)), 8)]) sendValue(`${label}=${short(v)}`, setAt(validBody, where, v));
        const branches = (prop.anyOf as Schema[] | undefined) ?? [prop];
        const objectBranch = branches.find((b) => b.type === 'object' && b.properties);
        if (objectBranch) walk(objectBranch, where);
        const items = branches.find((b) => b.type === 'array')?.items as Schema | undefined;
        if (items?.type === 'object') {
          const item = sampleValid(items, rng) as Record<string, unknown>;
          sendValue(`${label}[0] with an unknown field`, setAt(validBody, where, [{ ...item, extra: 1 }]));
          sendValue(`${label}[0] empty`, setAt(validBody, where, [{}]));
        }
      }
    };
    walk(schema, []);

    // Missing required fields, one at a time and all of them.
    for (const name of (schema.required ?? []) as string[]) {
      const { [name]: _dropped, ...rest } = validBody;
      sendValue(`without ${name}`, rest);
    }
    if ((schema.required ?? []).length) sendValue('empty object', {});

    // Unknown fields, including ones that look like prototype pollution (only raw JSON text can carry __proto__ as a key).
    for (const name of ['unknown_field', 'constructor', 'ID', ' name', 'ñame', 'created_at', 'a'.repeat(10_000)]) sendValue(`unknown ${name.slice(0, 20)}`, { ...validBody, [name]: 1 });
    for (const raw of ['"__proto__":{"polluted":true}', '"__proto__":null', '"prototype":{}']) {
      send(`raw ${raw}`, json(validBody).replace(/}$/, `${Object.keys(validBody).length ? ',' : ''}${raw}}`));
    }

    // The wrong shape at the root.
    for (const v of [[], [validBody], null, 'text', 42, true]) sendValue(`root ${json(v).slice(0, 20)}`, v);

    // Text that is no JSON, nested too deep, or not Unicode.
    for (const text of MALFORMED_JSON) {
      let parsed: unknown = undefined;
      try {
        parsed = JSON.parse(text);
      } catch {
        /* not JSON at all */
      }
      if (parsed === undefined || !accepts(schema, parsed) || /\\u[dD][89a-fA-F]/.test(text)) send(`malformed ${text.slice(0, 20)}`, text);
    }
    if (json(validBody).includes('":"')) send('lone surrogate in every string', json(validBody).replace(/":"/g, '":"\\udc00'));
    send('a field holding 20k nested arrays', json(validBody).replace(/}$/, `${Object.keys(validBody).length ? ',' : ''}"deep":${deepArrayText(20_000)}}`));

    // Not JSON as far as the service is concerned: a body it reads as {} (invalid only when fields are required).
    if (!accepts(schema, {})) {
      for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml', 'multipart/form-data; boundary=XYZ', 'application/json-patch+json']) {
        send(`content-type ${type}`, json(validBody), { 'content-type': type });
      }
      send('no content-type', new Uint8Array(Buffer.from(json(validBody))), {});
    }
    send('unknown charset', json(validBody), { 'content-type': 'application/json; charset=klingon' });
    send('zstd encoding', json(validBody), { 'content-type': 'application/json', 'content-encoding': 'zstd' });
    send('gzip that is no gzip', json(validBody), { 'content-type': 'application/json', 'content-encoding': 'gzip' });
    if (rng.chance(0.25)) send('over 1 MB', json({ ...validBody, padding: 'p'.repeat(MB + 10) }));
  }

  if (op.body?.contentType === 'multipart/form-data') {
    // The upload reads multipart itself: everything but one "file" part with an allowed type must be refused.
    const B = 'fuzzBoundary';
    const mp = { 'content-type': `multipart/form-data; boundary=${B}` };
    const send = (label: string, body: string | Uint8Array | undefined, headers: Record<string, string>) => add(label, { url: url(), body, headers });
    send('no body', undefined, {});
    send('a JSON body', json({ file: GCODE }), JSON_HEADERS);
    send('text/plain', GCODE, { 'content-type': 'text/plain' });
    send('multipart without a boundary', multipart(B, 'file', 'a.gcode', GCODE), { 'content-type': 'multipart/form-data' });
    send('multipart with an empty boundary', multipart(B, 'file', 'a.gcode', GCODE), { 'content-type': 'multipart/form-data; boundary=' });
    send('a boundary that is not in the body', multipart('other', 'file', 'a.gcode', GCODE), mp);
    send('another field name', multipart(B, 'document', 'a.gcode', GCODE), mp);
    send('a field, no file', multipart(B, 'file', null, GCODE), mp);
    send('an empty body', '', mp);
    send('garbage', '\u0000\u0001\u0002--', mp);
    send('truncated mid-file', multipart(B, 'file', 'a.gcode', GCODE, false).slice(0, -4), mp);
    send('no closing boundary', multipart(B, 'file', 'a.gcode', GCODE, false), mp);
    // The file part is complete, the form is not: nothing of it may stay.
    send('form cut after the file', `${multipart(B, 'file', 'a.gcode', GCODE, false)}--${B}`, mp);
    for (const name of ['evil.exe', '../../fuzz-escape.sh', 'noext', '.gcode.', 'a.gcode\u0000.exe', 'a.gcode ', '🚀.png', 'x'.repeat(300) + '.txt']) {
      send(`file name ${name.slice(0, 20)}`, multipart(B, 'file', name, GCODE), mp);
    }
    send('11 fields, no file', Array.from({ length: 11 }, (_, i) => multipart(B, `f${i}`, null, 'v', false)).join('') + `--${B}--\r\n`, mp);
  }

  // Reads without any input: odd extras that must not hurt.
  if (cases.length === 0 && op.method === 'GET') {
    const harmless = (label: string, u: string, headers: Record<string, string> = {}) => cases.push({ op, label, method: 'GET', url: u, headers, kind: 'harmless' });
    const u = fillPath(op, pathValues);
    harmless('unknown query', `${u}?unknown=1&__proto__[x]=1&a%00b=%00`);
    harmless('long query', `${u}?q=${'x'.repeat(6000)}`);
    harmless('unicode query', `${u}?${enc(UNICODE_EDGES[0])}=${enc(UNICODE_EDGES[1])}`);
    harmless('broken percent-encoding', `${u}?a=%E0%A4%A&b=%ZZ`);
    harmless('accept xml', u, { accept: 'application/xml' });
    harmless('hostile request id', u, { 'x-request-id': '<script>' });
    harmless('json content-type without a body', u, { 'content-type': 'application/json' });
  }
  return cases;
}

function short(v: unknown): string {
  const s = typeof v === 'string' ? JSON.stringify(v) : String(json(v));
  return s.length > 30 ? `${s.slice(0, 30)}…(${s.length})` : s;
}

/** Valid requests at the boundaries for one operation. */
function validCases(op: Operation, seed: Seeded, rng: Rng): Case[] {
  const cases: Case[] = [];
  const ids = existingIds(seed);
  const add = (label: string, partial: Partial<Case> & { url: string }) => cases.push({ op, label, method: op.method, headers: {}, kind: 'valid', ...partial });
  const pathParams = op.params.filter((p) => p.in === 'path');
  const queryParams = op.params.filter((p) => p.in === 'query');

  // Existing ids, and well-formed ids that name nothing.
  const pathChoices: Record<string, string>[] = [{}];
  for (const p of pathParams) {
    const options = [...(ids[p.name] ?? []), String(sampleValid(p.schema, rng)), p.schema.type === 'integer' ? String(p.schema.maximum) : 'z'.repeat(p.schema.maxLength ?? 1)];
    pathChoices.splice(0, pathChoices.length, ...pathChoices.flatMap((c) => options.map((o) => ({ ...c, [p.name]: enc(o) }))));
  }
  const baseQuery = requiredQuery(op, rng);
  const body = op.body?.contentType === 'application/json' ? (sampleValid(op.body.schema, rng, hintFor(seed)) as Record<string, unknown>) : undefined;
  const bodyFields = (b: unknown) => (body === undefined ? {} : { body: json(b), headers: JSON_HEADERS });

  for (const paths of pathChoices) add(`path ${JSON.stringify(paths)}`, { url: fillPath(op, paths) + queryString(baseQuery), ...bodyFields(body) });
  const mainPath = fillPath(op, pathChoices[0]);

  for (const p of queryParams) {
    for (const v of boundaryValues(p.schema, rng)) {
      const raw = Array.isArray(v) ? v.map(String) : [typeof v === 'number' && Object.is(v, -0) ? '-0' : String(v)];
      if (!raw.every((r) => acceptsParam(p.schema.anyOf ? (p.schema.anyOf as Schema[]).find((b) => b.type !== 'array') ?? p.schema : p.schema, r) || Array.isArray(v))) continue;
      const pairs: [string, string][] = [...baseQuery.filter(([k]) => k !== p.name), ...raw.map((r) => [p.name, r] as [string, string])];
      add(`query ${p.name}=${short(v)}`, { url: mainPath + queryString(pairs), ...bodyFields(body) });
    }
  }

  if (op.body?.contentType === 'application/json' && body !== undefined) {
    const schema = op.body.schema;
    const props = (schema.properties ?? {}) as Record<string, Schema>;
    for (const [name, prop] of Object.entries(props)) {
      for (const v of rng.sample(boundaryValues(prop, rng), 12)) {
        const candidate = { ...body, [name]: v };
        if (accepts(schema, candidate)) add(`${name}=${short(v)}`, { url: mainPath + queryString(baseQuery), body: json(candidate), headers: JSON_HEADERS });
      }
    }
    const onlyRequired = Object.fromEntries(Object.entries(body).filter(([k]) => (schema.required ?? []).includes(k)));
    if (accepts(schema, onlyRequired)) add('only the required fields', { url: mainPath + queryString(baseQuery), body: json(onlyRequired), headers: JSON_HEADERS });
  }

  if (op.body?.contentType === 'multipart/form-data') {
    const B = 'fuzzBoundary';
    for (const name of ['cube.gcode', 'Würfel 🚀.gcode', 'a.GCODE', 'model.stl', `${'n'.repeat(200)}.3mf`]) {
      add(`upload ${name.slice(0, 20)}`, { url: mainPath, body: multipart(B, 'file', name, GCODE), headers: { 'content-type': `multipart/form-data; boundary=${B}` } });
    }
  }
  return cases;
}

// ---------------------------------------------------------------------------

describeDialects('schema-driven fuzzing of every operation in the OpenAPI document', (dialect) => {
  let h: Harness;
  let ops: Operation[];
  const seed: Seeded = { printers: [], jobs: [], ideas: [], files: [] };
  /** URLs the idea importer tried to fetch: nothing leaves the machine, the fetch refuses them all. */
  const fetched: string[] = [];

  beforeAll(async () => {
    h = await startService({
      ...(await dialect.options()),
      // Every outside address the service could reach points at a closed local port.
      env: { USAGE_STATS_ENDPOINT: 'https://127.0.0.1:9/submit', USAGE_STATS_RETRY_COUNT: '0' },
      ideas: {
        fetch: async (url) => {
          fetched.push(String(url));
          throw new TypeError('fetch failed');
        },
        metadataRetryMs: 0,
      },
      // A silent printer gives up its connection test quickly (test-connection answers, and the fleet is quiet afterwards).
      fleet: { connectTimeoutMs: 100 },
      downloads: { attempts: 1, retryDelayMs: 1 },
    });
    console.log(`fuzz seed ${SEED} (set FUZZ_SEED to reproduce)`);

    // Things for path ids to find: a printer of each type, a job, an idea, a local file, a maintenance event.
    for (const p of [bambu('x1c-01'), prusa('mk4-01')]) {
      const res = await h.post('/api/v1/printers', p);
      expect(res.status).toBe(201);
      seed.printers.push(res.body.id);
    }
    const job = await h.post('/api/v1/jobs', { printer_id: 'x1c-01', job_name: 'Benchy', notes: 'seed' });
    expect(job.status).toBe(201);
    seed.jobs.push(job.body.id);
    const idea = await h.post('/api/v1/ideas', { title: 'Desk organizer', tags: ['desk'] });
    expect(idea.status).toBe(201);
    seed.ideas.push(idea.body.id);
    const upload = await h.request('POST', '/api/v1/files/upload', multipart('b', 'file', 'cube.gcode', GCODE), { 'content-type': 'multipart/form-data; boundary=b' });
    expect(upload.status).toBe(201);
    seed.files.push(upload.body.id);
    expect((await h.post('/api/v1/printers/mk4-01/maintenance', { kind: 'cleaning' })).status).toBe(201);

    // Wait until both connection tests gave up and their status changes are stored: from then on nothing writes by itself.
    const deadline = Date.now() + 10_000;
    const settled = async () => {
      const { rows } = await sql<{ printer_id: string }>`SELECT DISTINCT printer_id FROM printer_status_history WHERE connection_status = 'disconnected'`.execute(
        connectionOf(h).db,
      );
      return seed.printers.every((id) => rows.some((r) => r.printer_id === id));
    };
    while (!(await settled())) {
      if (Date.now() > deadline) throw new Error('the silent printers never went offline');
      await new Promise((resolve) => setImmediate(resolve));
    }

    const doc = await h.get('/api/v1/openapi.json');
    expect(doc.status).toBe(200);
    ops = operationsOf(doc.body);
    expect(ops.length).toBeGreaterThan(50);
  });

  afterAll(() => h?.close());

  test('invalid requests get a 4xx with the error body and never change the database or the disk', async () => {
    const rng = new Rng(SEED);
    const cases = ops.flatMap((op) => invalidCases(op, seed, rng));
    const perOp = new Map(ops.map((op) => [op.key, cases.filter((c) => c.op === op).length]));
    // A new endpoint is fuzzed as soon as it is documented; one that gets no cases means the generator needs teaching.
    expect([...perOp].filter(([, n]) => n === 0).map(([key]) => key)).toEqual([]);
    expect(cases.length).toBeGreaterThan(2000);

    // Reads may fill caches (the trending list is read-through): one plain read of each first, so the snapshot holds them.
    for (const op of ops.filter((o) => o.method === 'GET')) {
      expect((await h.get(fillPath(op, existingPathValues(op, seed, rng)) + queryString(requiredQuery(op, rng)))).status).toBeLessThan(500);
    }
    const before = await snapshotDb(connectionOf(h));
    const filesBefore = listFiles(h.dataDir);
    expect(sqliteIntegrity(connectionOf(h))).toBe(dialect.name === 'sqlite' ? 'ok' : null);

    const failures = await run(h, rng.sample(cases, cases.length));
    expect(failures.slice(0, 15)).toEqual([]);

    const after = await snapshotDb(connectionOf(h));
    expect(sqliteIntegrity(connectionOf(h))).toBe(dialect.name === 'sqlite' ? 'ok' : null);
    expect(after.counts).toEqual(before.counts);
    for (const table of Object.keys(before.contents)) expect({ table, rows: after.contents[table] }).toEqual({ table, rows: before.contents[table] });
    // No file came or went (the db's WAL files stay the same names).
    expect(listFiles(h.dataDir)).toEqual(filesBefore);
    expect(unhandled(h)).toEqual([]);
    console.log(`fuzz: ${cases.length} invalid requests over ${ops.length} operations`);
  }, 120_000);

  test('path tricks in ids and file names stay inside the data dir', async () => {
    const marker = `fuzz-escape-${SEED}`;
    const B = 'trick';
    const names = [
      `../../${marker}.gcode`,
      `..\\..\\${marker}.gcode`,
      `/tmp/${marker}.gcode`,
      `%2e%2e%2f${marker}.gcode`,
      `....//....//${marker}.gcode`,
      `${marker}\u0000.gcode`,
      `.${marker}.gcode`,
      `\u202E${marker}.gcode`,
      `${marker}:stream.gcode`,
      `CON.gcode`,
    ];
    const stored: string[] = [];
    for (const name of names) {
      const res = await h.request('POST', '/api/v1/files/upload', multipart(B, 'file', name, GCODE), { 'content-type': `multipart/form-data; boundary=${B}` });
      // A name may be refused; a stored one is a plain file inside DATA_DIR/files/local that serves back what was sent.
      expect({ name, status: res.status < 500 ? 'below 500' : res.status }).toEqual({ name, status: 'below 500' });
      if (res.status !== 201) continue;
      stored.push(res.body.id);
      const content = await fetch(`${h.base}/api/v1/files/${res.body.id}/content`);
      expect(content.status).toBe(200);
      expect(await content.text()).toBe(GCODE);
    }
    expect(stored.length).toBeGreaterThan(0);

    // Printer paths to download from, and ids in the URL: refused or not found, never a file.
    for (const file_path of [`../../${marker}.gcode`, `/etc/passwd`, `..%2F..%2F${marker}`, `C:\\Windows\\${marker}`]) {
      const res = await h.post('/api/v1/files/download', { printer_id: 'x1c-01', file_path });
      // The printer never answers: 502, or a 4xx for a path it refuses outright.
      expect({ file_path, refused: res.status === 502 || (res.status >= 400 && res.status < 500) }).toEqual({ file_path, refused: true });
    }
    for (const trick of ['..%2F..%2F' + marker, '%2e%2e%2f%2e%2e%2fprintfarm.db', '..%2Fprintfarm.db', '..%5C..%5Cprintfarm.db']) {
      for (const suffix of ['', '/content', '/thumbnail', '/download/status']) {
        const res = await fetch(`${h.base}/api/v1/files/${trick}${suffix}`);
        expect([res.status, trick + suffix]).toEqual([404, trick + suffix]);
        expect(await res.text()).not.toContain('SQLite format');
      }
    }

    // Every file of the service is in its data dir: the db, and the uploads under files/local with one safe name each.
    const inData = listFiles(h.dataDir);
    for (const f of inData) expect(f).toMatch(/^(printfarm\.(db(-wal|-shm)?|lock)|files\/local\/[0-9a-f]{20}-[^/\\\u0000]+)$/);
    for (const id of stored) {
      const { rows } = await sql<{ local_path: string }>`SELECT local_path FROM files WHERE id = ${id}`.execute(connectionOf(h).db);
      expect(path.resolve(rows[0].local_path).startsWith(path.join(h.dataDir, 'files', 'local') + path.sep)).toBe(true);
      expect(fs.existsSync(rows[0].local_path)).toBe(true);
    }
    // Nothing with the marker outside: next to the data dir, in the temp dir, in the working directory.
    for (const dir of new Set([path.dirname(h.dataDir), path.dirname(path.dirname(h.dataDir)), os.tmpdir(), process.cwd(), '/tmp'])) {
      expect(fs.readdirSync(dir).filter((n) => n.includes(marker))).toEqual([]);
    }
  }, 60_000);

  test('valid requests at the boundaries get a 2xx or a clear 4xx, and the database stays sound', async () => {
    const rng = new Rng(SEED + 1);
    const settingsSchema = ops.find((op) => op.key === 'PUT /api/v1/settings')?.body?.schema;
    const settingsBefore = (await h.get('/api/v1/settings')).body as Record<string, unknown>;
    const restoreSettings = Object.fromEntries(Object.entries(settingsBefore).filter(([k]) => settingsSchema?.properties?.[k]));
    // Deletions (and the cleanup, which deletes files) last, so that the other operations still find what they act on.
    const destructive = (op: Operation) => op.method === 'DELETE' || (op.method !== 'GET' && /cleanup|delete/.test(op.path));
    const ordered = [...ops.filter((op) => !destructive(op)), ...ops.filter(destructive)];
    let total = 0;
    const failures: string[] = [];
    const statuses = new Map<string, Set<number>>();
    for (const op of ordered) {
      const cases = validCases(op, seed, rng);
      expect([op.key, cases.length > 0]).toEqual([op.key, true]);
      total += cases.length;
      failures.push(...(await run(h, cases, statuses)));
      // Settings are global: put them back, so that one operation's boundary values do not change how the next behaves.
      if (op.key === 'PUT /api/v1/settings') expect((await h.put('/api/v1/settings', restoreSettings)).status).toBe(200);
    }
    expect(failures.slice(0, 15)).toEqual([]);
    // The generator must keep making requests that get through validation, not only ones that bounce off it.
    const succeeded = ops.filter((op) => [...(statuses.get(op.key) ?? [])].some((s) => s >= 200 && s < 300));
    const never = ops.filter((op) => !succeeded.includes(op)).map((op) => `${op.key} ${[...(statuses.get(op.key) ?? [])].sort()}`);
    console.log(`fuzz: ${succeeded.length} of ${ops.length} operations answered 2xx; never: ${never.join(', ')}`);
    expect(succeeded.length / ops.length).toBeGreaterThanOrEqual(0.75);
    expect(sqliteIntegrity(connectionOf(h))).toBe(dialect.name === 'sqlite' ? 'ok' : null);
    expect((await h.get('/api/v1/health')).status).toBe(200);
    expect(unhandled(h)).toEqual([]);
    // The importer was asked for pages, and none of them went out (the injected fetch refuses them).
    expect(fetched.every((u) => u.startsWith('http'))).toBe(true);
    console.log(`fuzz: ${total} valid boundary requests over ${ops.length} operations`);
  }, 120_000);
});
