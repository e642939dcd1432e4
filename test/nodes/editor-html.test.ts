/**
 * The editor side of the pack as Node-RED (and the flow library's scorecard)
 * reads it from the build: each node's .html parses, registers its literal
 * type in the "print farm" category, its node-input-* fields are its
 * defaults, its credentials are the runtime's; help and labels exist in
 * en-US and de; icons are where Node-RED looks for them.
 */
import fs from 'node:fs';
import path from 'node:path';
import * as acorn from 'acorn';
import { editorTemplate as templateIn, registerEditor, scripts } from '../helpers/editor-scripts';

const root = path.join(__dirname, '..', '..');
const dist = path.join(root, 'dist', 'nodes');
const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { name: string; 'node-red': { nodes: Record<string, string>; version: string }; keywords: string[] };
const sets = Object.entries(pkg['node-red'].nodes);
const built = fs.existsSync(path.join(dist, 'printfarm-printer.html'));
if (!built) console.warn('editor html tests skipped: run `npm run build` first (npm test does)');
const describeBuilt = built ? describe : describe.skip;
const register = (name: string) => registerEditor(dist, name);
const editorTemplate = (name: string) => templateIn(dist, name);

/** What the runtime module registers (type, credentials) with a stub RED. */
function runtimeRegistration(file: string): { type: string; credentials?: Record<string, { type: string }> } {
  let result: { type: string; credentials?: Record<string, { type: string }> } | undefined;
  const RED = {
    nodes: { registerType: (type: string, _ctor: unknown, opts: { credentials?: Record<string, { type: string }> } = {}) => (result = { type, credentials: opts.credentials }) },
    httpAdmin: { get() {} },
    events: { on() {}, off() {} },
    log: { info() {}, warn() {}, error() {}, debug() {}, trace() {} },
    auth: { needsPermission: () => () => undefined },
    settings: {},
    _: (k: string) => k,
  };
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const mod = require(file);
  (mod.default ?? mod)(RED);
  return result!;
}

function keysOf(obj: unknown, prefix = ''): string[] {
  if (typeof obj !== 'object' || obj === null) return [prefix];
  return Object.entries(obj).flatMap(([k, v]) => keysOf(v, prefix ? `${prefix}.${k}` : k));
}

describeBuilt('editor files', () => {
  test('package.json declares the eight node sets, a Node-RED version without upper bound and the node-red keyword', () => {
    expect(sets.map(([name]) => name)).toEqual(['printfarm-server', 'printfarm-printer', 'printfarm-job-watcher', 'printfarm-file-download', 'printfarm-gcode-preview', 'printfarm-stats', 'printfarm-queue', 'printfarm-events']);
    expect(pkg['node-red'].version).toBe('>=4.0.0');
    expect(pkg.keywords).toContain('node-red');
    for (const [name, file] of sets) {
      expect(file).toBe(`dist/nodes/${name}.js`);
      expect(fs.existsSync(path.join(root, file))).toBe(true);
    }
  });

  test.each(sets)('%s: the html parses and registers its literal type with inline defaults', (name) => {
    const html = fs.readFileSync(path.join(dist, `${name}.html`), 'utf8');
    const js = scripts(html, 'text/javascript');
    expect(js).toHaveLength(1);
    // What the flow library's scorecard does: acorn, then a literal registerType('<type>', {...}).
    const ast = acorn.parse(js[0].body, { ecmaVersion: 2020 });
    const calls: acorn.CallExpression[] = [];
    const walk = (node: unknown): void => {
      if (!node || typeof node !== 'object') return;
      const n = node as acorn.Node & Record<string, unknown>;
      if (n.type === 'CallExpression') calls.push(n as unknown as acorn.CallExpression);
      for (const v of Object.values(n)) (Array.isArray(v) ? v.forEach(walk) : walk(v));
    };
    walk(ast);
    const reg = calls.find((c) => c.callee.type === 'MemberExpression' && c.callee.property.type === 'Identifier' && c.callee.property.name === 'registerType');
    expect(reg).toBeDefined();
    expect(reg!.arguments[0]).toMatchObject({ type: 'Literal', value: name });
    const def = reg!.arguments[1] as acorn.ObjectExpression;
    expect(def.type).toBe('ObjectExpression');
    const props = def.properties.map((p) => ((p as acorn.Property).key as acorn.Identifier).name);
    expect(props).toEqual(expect.arrayContaining(name === 'printfarm-server' ? ['category', 'defaults'] : ['category', 'defaults', 'color', 'icon', 'inputs', 'outputs']));
    const defaults = (def.properties.find((p) => ((p as acorn.Property).key as acorn.Identifier).name === 'defaults') as acorn.Property).value;
    expect(defaults.type).toBe('ObjectExpression');

    const registered = register(name);
    expect([...registered.keys()]).toEqual([name]);
    const d = registered.get(name)!;
    expect(d.category).toBe(name === 'printfarm-server' ? 'config' : 'print farm');
    if (name !== 'printfarm-server') {
      expect(fs.existsSync(path.join(dist, 'icons', d.icon!))).toBe(true);
      expect(d.defaults.server).toMatchObject({ type: 'printfarm-server' });
      expect(typeof d.label).toBe('function');
    }
  });

  test.each(sets)('%s: the node-input fields are the defaults, the credentials are the runtime ones', (name) => {
    const d = register(name).get(name)!;
    const prefix = name === 'printfarm-server' ? 'node-config-input-' : 'node-input-';
    const ids = [...editorTemplate(name).matchAll(/id="([^"]+)"/g)].map((m) => m[1]).filter((id) => id.startsWith(prefix)).map((id) => id.slice(prefix.length));
    const fields = [...Object.keys(d.defaults), ...Object.keys(d.credentials ?? {})];
    expect([...ids].sort()).toEqual([...fields].sort());
    // The runtime declares the same credentials (Node-RED keeps only declared ones).
    const runtime = runtimeRegistration(path.join(dist, `${name}.js`));
    expect(runtime.type).toBe(name);
    expect(runtime.credentials ?? {}).toEqual(d.credentials ?? {});
  });

  test.each(sets)('%s: help in en-US and de; every label the template uses is in both catalogs, with the same keys', (name) => {
    const html = editorTemplate(name);
    const catalogs = Object.fromEntries(
      ['en-US', 'de'].map((lang) => {
        const help = fs.readFileSync(path.join(dist, 'locales', lang, `${name}.html`), 'utf8');
        expect(help).toContain(`data-help-name="${name}"`);
        return [lang, JSON.parse(fs.readFileSync(path.join(dist, 'locales', lang, `${name}.json`), 'utf8'))];
      }),
    );
    expect(keysOf(catalogs.de).sort()).toEqual(keysOf(catalogs['en-US']).sort());
    const used = [...html.matchAll(/data-i18n="(?:\[[a-z]+\])?([^"]+)"/g)].map((m) => m[1]).filter((k) => !k.includes(':'));
    expect(used.length).toBeGreaterThan(0);
    const known = new Set(keysOf(catalogs['en-US']));
    expect(used.filter((k) => !known.has(k))).toEqual([]);
  });
});
