/**
 * Values made from a schema, valid ones at the boundaries and invalid ones of
 * every kind, plus the fixed lists of hostile text, path tricks and malformed
 * JSON. The oracle (schema.ts) keeps only what is valid, or invalid, for the field.
 */
import { accepts, isPlainObject, type Schema } from './schema';
import type { Rng } from './rng';

/** Text that breaks naive code: combining marks, emoji with joiners, RTL, NUL, control characters, CJK, BOM. */
export const UNICODE_EDGES = [
  'Z̤͔ͧ̑̓ä͖̭̈̇lͮ̒ͫǧ̗͚̚o̙̔ͮ̇͐̇',
  '👩‍🔧🖨️🚀',
  'طابعة \u202Egnp.exe',
  'a\u0000b',
  'tab\there\r\nline\u0007',
  '打印机',
  '\uFEFFbom',
  '\u200B',
  'e\u0301',
  "x'; DROP TABLE printers;--",
];

/** Path tricks for id parameters (written already encoded, as they go into the URL). */
export const PATH_TRICKS = [
  '..%2F..%2Fetc%2Fpasswd',
  '..%2F..%2F..%2F..%2Fetc%2Fpasswd',
  '%2e%2e%2f%2e%2e%2f',
  '%252e%252e%252f',
  '..%5C..%5Cwindows%5Cwin.ini',
  '%00',
  'a%00b',
  '%C0%AE%C0%AE%2F',
  '%E0%A4%A',
  '%ZZ',
  '%ED%A0%80',
  '%F0%9F%9A%80',
  '%E2%80%AEexe.gnp',
  '%D8%B7%D8%A7%D8%A8%D8%B9%D8%A9',
  '%20',
  '%09',
  '~',
  'NaN',
  'Infinity',
  '-Infinity',
  'null',
  'undefined',
  'true',
  '%5B%5D',
  '%7B%7D',
  '0',
  '-1',
  '-0',
  '1.5',
  '1e309',
  '-1e309',
  '1e3',
  '0x10',
  '0b11',
  '0o17',
  '%201',
  '9007199254740992',
  '99999999999999999999999999',
  '__proto__',
  'constructor',
  '%27%20OR%20%271%27%3D%271',
  'x'.repeat(129),
  'x'.repeat(301),
  'x'.repeat(4000),
  encodeURIComponent('é'.repeat(65)),
];

/** Values of every JSON type, for "the wrong type" (the oracle says which ones a field refuses). */
export function wrongTypes(rng: Rng): unknown[] {
  return [
    null,
    true,
    false,
    0,
    -1,
    1.5,
    rng.int(1_000_000),
    '',
    'text',
    '12',
    'true',
    [],
    [1, 'a'],
    {},
    { nested: { deeper: [null] } },
  ];
}

/** Numbers around a schema's bounds and past what JSON numbers can carry exactly. */
export function edgeNumbers(schema: Schema): number[] {
  const out = [0, -0, -1, 1, 0.5, -0.5, Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER + 1, -Number.MAX_SAFE_INTEGER - 2, 1e308, -1e308, 5e-324, 2 ** 31, 2 ** 53 + 2];
  for (const bound of [schema.minimum, schema.maximum, schema.exclusiveMinimum, schema.exclusiveMaximum]) {
    if (typeof bound === 'number') out.push(bound, bound - 1, bound + 1, bound - 0.5, bound + 0.5);
  }
  return out;
}

export function edgeStrings(schema: Schema, rng: Rng): string[] {
  const out = ['', ' ', '   \t\n', ...UNICODE_EDGES, 'a'.repeat(100 * 1024), '🚀'.repeat(5000)];
  for (const bound of [schema.minLength, schema.maxLength]) {
    if (typeof bound === 'number') {
      for (const n of [bound - 1, bound, bound + 1]) if (n >= 0) out.push('a'.repeat(n), 'ä'.repeat(n));
      // Emoji are two UTF-16 units but one character: at the bound and past it.
      if (bound > 0) out.push('🚀'.repeat(bound), '🚀'.repeat(bound + 1));
    }
  }
  out.push(String.fromCharCode(...Array.from({ length: 16 }, () => 0x20 + rng.int(0x250))));
  return out;
}

/** Deeply nested arrays/objects as JSON text. */
export const deepArrayText = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);
export const deepObjectText = (depth: number) => '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);

/** A value close to minimal that the schema accepts; `hint` supplies values the schema cannot know (ids that exist). */
export function sampleValid(schema: Schema, rng: Rng, hint: (name: string) => unknown = () => undefined, name = ''): unknown {
  const hinted = name ? hint(name) : undefined;
  if (hinted !== undefined && accepts(schema, hinted)) return hinted;
  if (schema.anyOf) {
    const branches = (schema.anyOf as Schema[]).filter((s) => s.type !== 'null');
    return sampleValid(branches.length ? rng.pick(branches) : schema.anyOf[0], rng, hint, name);
  }
  if (schema.enum) return rng.pick(schema.enum as unknown[]);
  switch (schema.type) {
    case 'string': {
      const candidates =
        schema.format === 'date-time'
          ? ['2025-01-02T03:04:05Z', '2025-06-30T12:00:00.123+02:00']
          : schema.format === 'date'
            ? ['2025-01-02', '2024-02-29']
            : schema.format === 'uri'
              ? ['http://127.0.0.1:9/fuzz', 'https://127.0.0.1:9/fuzz?q=1']
              : ['fuzz-1', 'gcode', 'x1', 'a', 'Fuzz value ' + rng.int(1000)];
      const ok = candidates.filter((c) => accepts(schema, c));
      return ok.length ? rng.pick(ok) : 'a'.repeat(Math.max(1, schema.minLength ?? 1));
    }
    case 'integer':
    case 'number': {
      const lo = schema.minimum ?? 0;
      const hi = schema.maximum ?? lo + 100;
      return Math.max(lo, Math.min(hi, lo + rng.int(Math.min(10, hi - lo + 1))));
    }
    case 'boolean':
      return rng.chance(0.5);
    case 'null':
      return null;
    case 'array': {
      const n = schema.minItems ?? (rng.chance(0.5) ? 1 : 0);
      return Array.from({ length: n }, () => sampleValid(schema.items ?? {}, rng, hint, name));
    }
    case 'object': {
      const out: Record<string, unknown> = {};
      const props = (schema.properties ?? {}) as Record<string, Schema>;
      const required = new Set<string>(schema.required ?? []);
      for (const [key, s] of Object.entries(props)) {
        if (required.has(key) || hint(key) !== undefined || rng.chance(0.3)) out[key] = sampleValid(s, rng, hint, key);
      }
      return out;
    }
    default:
      return 'any';
  }
}

/** Valid values at the edges of a schema: bounds, every enum member, null, empty and full arrays, long and unicode strings. */
export function boundaryValues(schema: Schema, rng: Rng): unknown[] {
  const candidates: unknown[] = [];
  const walk = (s: Schema) => {
    if (s.anyOf) return (s.anyOf as Schema[]).forEach(walk);
    if (s.enum) candidates.push(...(s.enum as unknown[]));
    switch (s.type) {
      case 'string':
        candidates.push(...edgeStrings(s, rng).filter((v) => v.length <= 2000 || v.length === s.maxLength));
        if (typeof s.maxLength === 'number') candidates.push('ü'.repeat(s.maxLength), 'z'.repeat(s.maxLength));
        candidates.push(sampleValid(s, rng));
        break;
      case 'integer':
      case 'number':
        candidates.push(...edgeNumbers(s));
        break;
      case 'boolean':
        candidates.push(true, false);
        break;
      case 'null':
        candidates.push(null);
        break;
      case 'array':
        candidates.push([], Array.from({ length: s.maxItems ?? 3 }, (_, i) => (s.items?.type === 'string' ? `t${i}` : sampleValid(s.items ?? {}, rng))));
        break;
      case 'object':
        candidates.push({}, sampleValid(s, rng));
        if (isPlainObject(s.additionalProperties) || s.additionalProperties === undefined) {
          candidates.push({ 'ключ 🔑': UNICODE_EDGES[1], nested: JSON.parse(deepObjectText(50)) });
        }
        break;
    }
  };
  walk(schema);
  const seen = new Set<string>();
  return candidates.filter((v) => {
    const key = JSON.stringify(v);
    if (!accepts(schema, v) || seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** Invalid values for a schema: wrong types, out-of-range numbers, bad strings; each one the oracle refuses. */
export function invalidValues(schema: Schema, rng: Rng): unknown[] {
  const strings = typeof schema.type === 'string' || schema.anyOf || schema.enum ? edgeStrings(schema, rng) : [];
  const candidates = [
    ...wrongTypes(rng),
    ...edgeNumbers(schema),
    ...strings,
    ...(schema.format === 'uri' ? ['not a url', 'http://', '://x', 'javascript:alert(1)'] : []),
    ...(schema.format === 'date-time' || schema.format === 'date' ? ['2025-02-30', '2025-13-01T00:00:00Z', '2025-01-01T25:00:00Z', 'yesterday', '2025-01-01T00:00:00'] : []),
    ...(schema.enum ? (schema.enum as unknown[]).filter((e) => typeof e === 'string').map((e) => (e as string).toUpperCase() + ' ') : []),
    ...(schema.type === 'array' && typeof schema.maxItems === 'number' ? [Array.from({ length: schema.maxItems + 1 }, (_, i) => `t${i}`)] : []),
    ...(schema.type === 'array' ? [[null], [{}], [''], ['a,b'], ['x'.repeat(101)]] : []),
  ];
  const seen = new Set<string>();
  return candidates.filter((v) => {
    const key = typeof v === 'number' ? String(Object.is(v, -0) ? '-0' : v) : JSON.stringify(v);
    if (accepts(schema, v) || seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** JSON text that body-parser must refuse, or that is no object at all. */
export const MALFORMED_JSON = [
  '{',
  '{"a":',
  "{'a':1}",
  '{"a":1,}',
  '{a:1}',
  '{"a":NaN}',
  '{"a":Infinity}',
  '{"a":01}',
  '{"a":"\\x41"}',
  '{"a":"\u0001raw control"}',
  '{"a":"\\ud800"}',
  '{"\\udfff":1}',
  '{"a":"\\ud83d"}',
  '{"a":1}{"b":2}',
  '[',
  'nul',
  '\u0000',
  '\uFEFF{',
  '"a string"',
  '12',
  'true',
  'null',
  '[]',
  '[{}]',
  deepArrayText(10_000),
  deepObjectText(5_000),
];
