/**
 * Holds every JSON answer the tests get from a service to the OpenAPI document that service publishes
 * (the farm's `/api/v1/openapi.json`, the aggregator's `/openapi.json`): the status must be documented for the operation, and the body must match the
 * documented schema. So the document users and generated clients read cannot drift from what the server
 * sends, in any of the thousands of requests the suite makes (the zod response schemas only type the
 * handlers: nothing checks their output at run time).
 *
 * A mismatch throws from the request helper, naming the operation, the status and what differs.
 * PRINTFARM_OPENAPI_RECORD=<file> appends mismatches to that file instead (one JSON line each), to survey
 * a whole run at once.
 */
import fs from 'node:fs';
import http from 'node:http';
import Ajv2020, { type ValidateFunction } from '@redocly/ajv/dist/2020';

interface Operation {
  responses?: Record<string, { content?: Record<string, unknown> }>;
}
interface Document {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
}

interface Route {
  template: string;
  pattern: RegExp;
  /** Path parameters: a literal path ("/files/cleanup") wins over a template ("/files/{file_id}"). */
  parameters: number;
}

interface Checker {
  doc: Document;
  routes: Route[];
  ajv: Ajv2020;
  compiled: Map<string, ValidateFunction>;
}

const API_BASE = '/api/v1';
const checkers = new Map<string, Promise<Checker | null>>();

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;

function newAjv(doc: Document): Ajv2020 {
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
  ajv.addFormat('date-time', (s: string) => RFC3339.test(s) && !Number.isNaN(Date.parse(s)));
  ajv.addFormat('date', (s: string) => /^\d{4}-\d{2}-\d{2}$/.test(s) && !Number.isNaN(Date.parse(s)));
  ajv.addFormat('uri', (s: string) => URL.canParse(s));
  ajv.addFormat('uuid', /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i);
  ajv.addFormat('binary', true);
  ajv.addSchema(doc as object, 'openapi');
  return ajv;
}

/** Where a service publishes its document, and which request paths it covers. */
export interface OpenApiSource {
  /** The document's path on the service. */
  docPath: string;
  /** Requests under this path are checked (the farm: /api/v1; the aggregator: all). */
  prefix: string;
  /** Reads the document (null when there is none). */
  read(url: string): Promise<unknown>;
}

/**
 * The farm service's document, read from another loopback address than the tests' requests: a rate-limit test
 * counts its client's requests to the one, and this read must not take one of them.
 */
export const FARM_SERVICE: OpenApiSource = {
  docPath: `${API_BASE}/openapi.json`,
  prefix: API_BASE,
  read: (href) =>
    new Promise((resolve) => {
      const url = new URL(href);
      const localAddress = url.hostname === '127.0.0.1' ? '127.0.0.2' : undefined;
      const req = http.get(url, { localAddress, timeout: 10_000 }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', () => resolve(null));
        res.on('end', () => {
          try {
            resolve(res.statusCode === 200 ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : null);
          } catch {
            resolve(null);
          }
        });
      });
      req.on('timeout', () => req.destroy());
      req.on('error', () => resolve(null));
    }),
};

async function load(base: string, source: OpenApiSource): Promise<Checker | null> {
  try {
    const doc = (await source.read(base + source.docPath)) as Document | null;
    if (!doc || typeof doc.openapi !== 'string' || !doc.paths) return null;
    const routes = Object.keys(doc.paths)
      .filter((template) => template.startsWith(source.prefix))
      .map((template) => ({
        template,
        pattern: new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\\?\{\w+\\?\}/g, '[^/]+')}$`),
        parameters: (template.match(/\{/g) ?? []).length,
      }))
      .sort((a, b) => a.parameters - b.parameters);
    return { doc, routes, ajv: newAjv(doc), compiled: new Map() };
  } catch {
    return null;
  }
}

function pointer(...parts: string[]): string {
  return parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');
}

/** What differs between an answer and the document, or null. */
function mismatch(checker: Checker, { method: verb, urlPath, status, contentType, body }: Answer): string | null {
  const method = verb.toLowerCase();
  const pathname = new URL(urlPath, 'http://x').pathname;
  const route = checker.routes.find((r) => r.pattern.test(pathname) && checker.doc.paths[r.template][method]);
  // Routes the document does not have answer 404 from the unknown-route handler: nothing to hold them to.
  if (!route) return null;
  const operation = checker.doc.paths[route.template][method];
  const documented = operation.responses?.[String(status)] ? String(status) : operation.responses?.default ? 'default' : null;
  if (!documented) return `status ${status} is not documented (documented: ${Object.keys(operation.responses ?? {}).join(', ')})`;
  if (!contentType.includes('application/json') || body === undefined) return null;
  const content = operation.responses![documented].content;
  if (!content?.['application/json']) return content ? `a JSON body where the document says ${Object.keys(content).join(', ')}` : null;
  const ref = `openapi#/${pointer('paths', route.template, method, 'responses', documented, 'content', 'application/json', 'schema')}`;
  let validate = checker.compiled.get(ref);
  if (!validate) {
    validate = checker.ajv.getSchema(ref);
    if (!validate) return `no schema at ${ref}`;
    checker.compiled.set(ref, validate);
  }
  if (validate(body)) return null;
  return (validate.errors ?? [])
    .slice(0, 5)
    .map((e) => `${e.instancePath || '(body)'} ${e.message}${e.params && Object.keys(e.params).length ? ` ${JSON.stringify(e.params)}` : ''}`)
    .join('; ');
}

/** One answer of a service, as a request helper got it. */
export interface Answer {
  method: string;
  urlPath: string;
  status: number;
  contentType: string;
  body: unknown;
}

/** What differs between one answer of `base` and its OpenAPI document, or null (also when `base` serves none). */
export async function differenceFromOpenApi(base: string, answer: Answer, source: OpenApiSource = FARM_SERVICE): Promise<string | null> {
  if (!answer.urlPath.startsWith(source.prefix) || answer.urlPath.startsWith(source.docPath)) return null;
  let checker = checkers.get(base);
  if (!checker) checkers.set(base, (checker = load(base, source)));
  const found = await checker;
  return found && mismatch(found, answer);
}

/** Checks one answer of `base` against its OpenAPI document (when `base` serves one). Throws on a mismatch. */
export async function checkAgainstOpenApi(base: string, answer: Answer, source: OpenApiSource = FARM_SERVICE): Promise<void> {
  const what = await differenceFromOpenApi(base, answer, source);
  if (!what) return;
  const { method, urlPath, status } = answer;
  const record = process.env.PRINTFARM_OPENAPI_RECORD;
  if (record) {
    fs.appendFileSync(record, `${JSON.stringify({ test: expect.getState().testPath, method, urlPath, status, what })}\n`);
    return;
  }
  throw new Error(`${method} ${urlPath} answered ${status}, which does not match the OpenAPI document: ${what}`);
}
