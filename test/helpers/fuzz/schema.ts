/**
 * Walking the service's own OpenAPI document: its operations, and `accepts`,
 * the oracle: a small validator for the part of JSON Schema the document
 * uses, so a generated value is known to be valid or invalid before it is sent.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Schema = Record<string, any>;

export interface Param {
  name: string;
  in: 'path' | 'query';
  required: boolean;
  schema: Schema;
}

export interface Operation {
  /** "POST /api/v1/printers" */
  key: string;
  method: string;
  path: string;
  params: Param[];
  body?: { contentType: string; schema: Schema };
  /** The statuses the document lists for the operation. */
  statuses: Set<number>;
}

/** Every operation of the document, except the WebSocket upgrade at /ws. */
export function operationsOf(doc: { paths: Record<string, Record<string, Schema>> }): Operation[] {
  const ops: Operation[] = [];
  for (const [path, methods] of Object.entries(doc.paths)) {
    if (path === '/ws') continue;
    for (const [method, op] of Object.entries(methods)) {
      const content = op.requestBody?.content as Record<string, { schema: Schema }> | undefined;
      const [contentType, media] = content ? Object.entries(content)[0] : [];
      ops.push({
        key: `${method.toUpperCase()} ${path}`,
        method: method.toUpperCase(),
        path,
        params: (op.parameters ?? []) as Param[],
        body: contentType && media ? { contentType, schema: media.schema } : undefined,
        statuses: new Set(Object.keys(op.responses ?? {}).map(Number)),
      });
    }
  }
  return ops;
}

// ---------------------------------------------------------------------------
// The oracle

export const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function typeMatches(type: string, v: unknown): boolean {
  switch (type) {
    case 'string':
      return typeof v === 'string';
    case 'integer':
      return typeof v === 'number' && Number.isSafeInteger(v);
    case 'number':
      return typeof v === 'number' && Number.isFinite(v);
    case 'boolean':
      return typeof v === 'boolean';
    case 'null':
      return v === null;
    case 'array':
      return Array.isArray(v);
    case 'object':
      return isPlainObject(v);
    default:
      return true;
  }
}

/** Whether `value` (as JSON would carry it) satisfies `schema`, for the keywords the document uses. */
export function accepts(schema: Schema, value: unknown): boolean {
  if (schema.anyOf) return (schema.anyOf as Schema[]).some((s) => accepts(s, value));
  if (schema.enum && !(schema.enum as unknown[]).some((e) => e === value)) return false;
  if (schema.type !== undefined && !typeMatches(schema.type, value)) return false;
  if (typeof value === 'string') {
    // The service refuses text that is no Unicode (a lone UTF-16 surrogate) wherever it appears.
    if (/\p{Surrogate}/u.test(value)) return false;
    // JSON Schema (and zod) count characters as code points: an emoji is one.
    const length = [...value].length;
    if (schema.minLength !== undefined && length < schema.minLength) return false;
    if (schema.maxLength !== undefined && length > schema.maxLength) return false;
    if (schema.pattern !== undefined && !new RegExp(schema.pattern).test(value)) return false;
    if (schema.format === 'uri' && !URL.canParse(value)) return false;
  }
  if (typeof value === 'number') {
    if (schema.minimum !== undefined && value < schema.minimum) return false;
    if (schema.maximum !== undefined && value > schema.maximum) return false;
    if (schema.exclusiveMinimum !== undefined && value <= schema.exclusiveMinimum) return false;
    if (schema.exclusiveMaximum !== undefined && value >= schema.exclusiveMaximum) return false;
  }
  if (Array.isArray(value)) {
    if (schema.minItems !== undefined && value.length < schema.minItems) return false;
    if (schema.maxItems !== undefined && value.length > schema.maxItems) return false;
    if (schema.items && !value.every((item) => accepts(schema.items, item))) return false;
  }
  if (isPlainObject(value) && schema.type === 'object') {
    const props = (schema.properties ?? {}) as Record<string, Schema>;
    for (const name of (schema.required ?? []) as string[]) if (!(name in value)) return false;
    for (const [name, v] of Object.entries(value)) {
      if (props[name]) {
        if (!accepts(props[name], v)) return false;
      } else if (schema.additionalProperties === false) return false;
      else if (isPlainObject(schema.additionalProperties) && !accepts(schema.additionalProperties, v)) return false;
    }
  }
  return true;
}

/** Numbers in a path or query are decimal digits: "0x10", "1e3", " 7" and "" are no integers there. */
const DECIMAL = /^-?\d+(\.\d+)?$/;

/** Whether a path or query parameter written as `raw` satisfies its schema (scalars only; arrays repeat the name). */
export function acceptsParam(schema: Schema, raw: string): boolean {
  if (schema.anyOf) return (schema.anyOf as Schema[]).some((s) => acceptsParam(s, raw));
  if (schema.type === 'integer' || schema.type === 'number') return DECIMAL.test(raw) && accepts(schema, Number(raw));
  if (schema.type === 'array') return false;
  return accepts(schema, raw);
}
