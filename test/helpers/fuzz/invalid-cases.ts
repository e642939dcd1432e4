/**
 * Invalid and hostile requests for one operation, each one the oracle (or the
 * seeded data: an id that names nothing) says the service must refuse with a 4xx.
 */
import { accepts, acceptsParam, type Operation, type Schema } from './schema';
import type { Rng } from './rng';
import { deepArrayText, invalidValues, MALFORMED_JSON, PATH_TRICKS, sampleValid, UNICODE_EDGES } from './values';
import {
  enc,
  existingIds,
  existingPathValues,
  fillPath,
  GCODE,
  hintFor,
  json,
  JSON_HEADERS,
  multipart,
  queryString,
  requiredQuery,
  short,
  type Case,
  type Seeded,
} from './cases';

const MB = 1024 * 1024;

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

/** Invalid and hostile requests for one operation. */
export function invalidCases(op: Operation, seed: Seeded, rng: Rng): Case[] {
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
