/**
 * Valid requests at the boundaries for one operation: existing ids and ids
 * that name nothing, query and body values at the edges of their schemas,
 * uploads with odd but allowed names.
 */
import { accepts, acceptsParam, type Operation, type Schema } from './schema';
import type { Rng } from './rng';
import { boundaryValues, sampleValid } from './values';
import { enc, existingIds, fillPath, GCODE, hintFor, json, JSON_HEADERS, multipart, queryString, requiredQuery, short, type Case, type Seeded } from './cases';

/** Valid requests at the boundaries for one operation. */
export function validCases(op: Operation, seed: Seeded, rng: Rng): Case[] {
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
