/**
 * The HTTP layer sits on top: `service/api/` may import the domain, never the other way round.
 * Domain code throws `DomainError` from `service/errors.ts`; the aggregator shares the route
 * helpers through `service/http/`. This scans every import (static, dynamic and `require`) of
 * the product code with TypeScript's own pre-processor, so a new import from below fails here.
 *
 * One file may import `service/api/`: `service/app.ts`, the composition root that wires the
 * farm's routers, rate limits, browser guard and tokens onto one server; nothing imports it but
 * the CLI, the config node and tests. The HTTP plumbing both servers share (error body, request
 * log, docs pages, OpenAPI builder, route helpers) lives in `service/http/`, so the aggregation
 * service is assembled without `api/`.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';

const root = resolve(__dirname, '../..');
const api = join(root, 'service', 'api');
const COMPOSITION_ROOTS = ['service/app.ts'];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.isFile() && /\.(ts|js)$/.test(entry.name) && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

/** Every module specifier of a file that resolves into `service/api/`. */
function importsOfApi(file: string): string[] {
  const info = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
  return info.importedFiles
    .map((ref) => ref.fileName)
    .filter((spec) => spec.startsWith('.'))
    .filter((spec) => {
      const target = resolve(dirname(file), spec);
      return target === api || target.startsWith(api + sep);
    });
}

const rel = (file: string) => relative(root, file).split(sep).join('/');
const product = ['service', 'nodes', 'bench', 'scripts'].flatMap((d) => {
  try {
    return sourceFiles(join(root, d));
  } catch {
    return [];
  }
});
const outsideApi = product.filter((f) => !f.startsWith(api + sep));

test('the scan sees the product code, including the domain modules that used to import api/', () => {
  const names = outsideApi.map(rel);
  expect(names.length).toBeGreaterThan(100);
  for (const f of ['service/jobs/service.ts', 'service/files/catalog.ts', 'service/printers/registry.ts', 'service/aggregator/routes.ts', 'service/settings.ts']) {
    expect(names).toContain(f);
  }
});

test('no file outside service/api/ imports service/api/, except the composition root', () => {
  const offenders = outsideApi
    .filter((f) => !COMPOSITION_ROOTS.includes(rel(f)))
    .flatMap((f) => importsOfApi(f).map((spec) => `${rel(f)} imports '${spec}'`));
  expect(offenders).toEqual([]);
});

test('the composition root is what the exception says: it does wire service/api/ into a server', () => {
  for (const f of COMPOSITION_ROOTS) expect(importsOfApi(join(root, f)).length).toBeGreaterThan(0);
});

test('the scanner catches an import from below, whichever form it takes', () => {
  const fake = join(root, 'service', 'jobs', 'fake.ts');
  const scan = (text: string) =>
    ts
      .preProcessFile(text, true, true)
      .importedFiles.map((r) => r.fileName)
      .filter((spec) => resolve(dirname(fake), spec).startsWith(api));
  expect(scan("import { ApiError } from '../api/errors';")).toEqual(['../api/errors']);
  expect(scan("export * from '../api';")).toEqual(['../api']);
  expect(scan("const r = require('../api/route');")).toEqual(['../api/route']);
  expect(scan("const m = await import('../api/rate-limit');")).toEqual(['../api/rate-limit']);
  expect(scan("import { DomainError } from '../errors';")).toEqual([]);
});
