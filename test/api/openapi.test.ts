import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { startService, type Harness } from '../helpers/service';

interface Layer {
  route?: { path: string; methods: Record<string, boolean> };
  handle: { stack?: Layer[] };
  rawPath?: string;
}

/** Every (method, path) the express app really routes, found by walking its routers. */
function expressRoutes(stack: Layer[], prefix = ''): string[] {
  return stack.flatMap((layer) => {
    if (layer.route) {
      return Object.keys(layer.route.methods).map((m) => `${m.toUpperCase()} ${prefix}${layer.route!.path}`);
    }
    if (layer.handle.stack) {
      const mount = typeof layer.rawPath === 'string' && layer.rawPath !== '/' ? layer.rawPath : '';
      return expressRoutes(layer.handle.stack, prefix + mount);
    }
    return [];
  });
}

describe('OpenAPI document and API docs', () => {
  let h: Harness;
  let doc: { openapi: string; paths: Record<string, Record<string, unknown>> };
  beforeAll(async () => {
    h = await startService();
    doc = (await h.get('/api/v1/openapi.json')).body;
  });
  afterAll(() => h.close());

  test('is OpenAPI 3.1 and passes the Redocly lint (recommended rules) without errors', () => {
    expect(doc.openapi).toBe('3.1.0');
    const file = path.join(h.dataDir, 'openapi.json');
    fs.writeFileSync(file, JSON.stringify(doc));
    const run = spawnSync(process.execPath, [path.join(__dirname, '../support/lint-openapi.mjs'), file], { encoding: 'utf8' });
    expect(run.stderr).toBe('');
    const problems: { rule: string; severity: string; where: string }[] = JSON.parse(run.stdout);
    expect(problems.filter((p) => p.severity === 'error')).toEqual([]);
    // Accepted warnings: read-only GETs without client errors, and the WebSocket upgrade (101, not 2xx).
    const unexpected = problems.filter(
      (p) => !(p.rule === 'operation-4xx-response' && p.where.endsWith('/get/responses')) && !(p.rule === 'operation-2xx-response' && p.where.startsWith('#/paths/~1ws')),
    );
    expect(unexpected).toEqual([]);
  });

  test('every route the server has is documented', () => {
    const app = h.service.server.listeners('request')[0] as unknown as { router: { stack: Layer[] } };
    const routes = expressRoutes(app.router.stack).filter((r) => !/ \/(docs|redoc|favicon\.ico)/.test(r));
    expect(routes.length).toBeGreaterThanOrEqual(17);
    const documented = new Set(
      Object.entries(doc.paths).flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${p.replace(/\{(\w+)\}/g, ':$1')}`)),
    );
    expect(routes.filter((r) => !documented.has(r))).toEqual([]);
  });

  test('every documented operation exists on the server', async () => {
    for (const [p, ops] of Object.entries(doc.paths)) {
      if (p === '/ws') continue;
      for (const method of Object.keys(ops)) {
        const url = p.replace(/\{(\w+)\}/g, '999999');
        const res = await h.request(method.toUpperCase(), url, method === 'get' || method === 'delete' ? undefined : {});
        expect([res.status, res.body?.error?.code]).not.toEqual([404, 'NOT_FOUND']);
      }
    }
  });

  test('documents the spec fields of the printer detail and the job list', () => {
    const schemaOf = (p: string, m: string, status: string) =>
      (doc.paths[p][m] as { responses: Record<string, { content: { 'application/json': { schema: { properties: Record<string, unknown> } } } }> }).responses[status]
        .content['application/json'].schema;
    const printer = schemaOf('/api/v1/printers/{printer_id}', 'get', '200');
    for (const f of ['id', 'name', 'type', 'access_code', 'statistics', 'capabilities', 'temperatures', 'current_job', 'firmware_version']) {
      expect(printer.properties).toHaveProperty(f);
    }
    const jobs = schemaOf('/api/v1/jobs', 'get', '200');
    expect(Object.keys(jobs.properties).sort()).toEqual(['jobs', 'pagination', 'summary']);
    expect(schemaOf('/api/v1/printers', 'post', '201').properties).toHaveProperty('connection_status');
  });

  test("the description tells of access tokens (the lock icons and Authorize button of /docs), not 'no authentication'", () => {
    const { description } = (doc as unknown as { info: { description: string } }).info;
    expect(description).not.toMatch(/No authentication/);
    expect(description).toMatch(/Open by default.*`AUTH_TOKENS`.*bearer token.*401 `UNAUTHORIZED`.*403 `FORBIDDEN`/);
  });

  test('/docs and /redoc load every asset from this service', async () => {
    for (const page of ['/docs/', '/redoc']) {
      const res = await h.get(page);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/text\/html/);
      const refs = [...res.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]).filter((r) => !r.startsWith('data:'));
      expect(refs.length).toBeGreaterThan(0);
      for (const ref of refs) {
        expect(ref).not.toMatch(/^(https?:)?\/\//);
        const asset = await h.get(new URL(ref, h.base + page).pathname);
        expect([ref, asset.status]).toEqual([ref, 200]);
      }
    }
    expect((await h.get('/docs/')).text).toContain('swagger-ui');
    expect((await h.get('/redoc')).text).toContain('spec-url="api/v1/openapi.json"');
    const bundle = await h.get('/redoc/redoc.standalone.js');
    expect(bundle.text.length).toBeGreaterThan(500_000);
    expect(bundle.text).not.toContain('cdn.redoc.ly');
  });
});
