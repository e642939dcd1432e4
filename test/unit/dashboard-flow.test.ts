/**
 * The flow files as a Node-RED user imports them: flows/dashboard.json and
 * its example copy are built from flows/dashboard/ and up to date; every node
 * type in them is this pack's, Node-RED core's or Dashboard 2.0's; every wire
 * and reference points at a node that exists; config-node ids are unique
 * across all flows and examples of the pack (importing two of them never says
 * "nodes already exist"); the Vue templates are in the one shape Dashboard 2.0's
 * ui-template accepts.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'acorn';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { buildDashboardFlow } = require('../../flows/dashboard/flow') as { buildDashboardFlow(o?: { example?: boolean }): FlowNode[] };

type FlowNode = { id: string; type: string; z?: string; wires?: string[][]; [key: string]: unknown };

const ROOT = path.join(__dirname, '..', '..');
const readFlow = (file: string) => JSON.parse(fs.readFileSync(path.join(ROOT, file), 'utf8')) as FlowNode[];
const FLOW_FILES = [...fs.readdirSync(path.join(ROOT, 'flows')).filter((f) => f.endsWith('.json')).map((f) => `flows/${f}`), ...fs.readdirSync(path.join(ROOT, 'examples')).filter((f) => f.endsWith('.json')).map((f) => `examples/${f}`)];
const DASHBOARD_FILES = ['flows/dashboard.json', 'examples/Farm dashboard.json'];

/** The node types registered by the editor files under `dir` (what Node-RED would offer in its palette). */
function registeredTypes(dir: string): Set<string> {
  const types = new Set<string>();
  const walk = (d: string) => {
    for (const entry of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, entry.name);
      if (entry.isDirectory() && entry.name !== 'locales') walk(p);
      else if (entry.name.endsWith('.html')) for (const m of fs.readFileSync(p, 'utf8').matchAll(/registerType\(\s*['"]([^'"]+)['"]/g)) types.add(m[1]);
    }
  };
  walk(dir);
  return types;
}

const pack = new Set(Object.keys(JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'))['node-red'].nodes as Record<string, string>));
const core = registeredTypes(path.dirname(require.resolve('@node-red/nodes/package.json')));
const dashboard = registeredTypes(path.join(path.dirname(require.resolve('@flowfuse/node-red-dashboard/package.json')), 'nodes'));
const isConfig = (n: FlowNode) => n.z === undefined && n.type !== 'tab' && n.type !== 'subflow';

describe('the dashboard flow files', () => {
  test.each(DASHBOARD_FILES)('%s is what scripts/build-dashboard-flow.js makes from flows/dashboard/', (file) => {
    expect(readFlow(file)).toEqual(buildDashboardFlow({ example: file.startsWith('examples/') }));
  });

  test.each(DASHBOARD_FILES)('%s uses only this pack\'s, Node-RED core\'s and Dashboard 2.0\'s node types, and all of them', (file) => {
    expect(core.has('inject') && dashboard.has('ui-template') && pack.has('printfarm-printer')).toBe(true);
    const flow = readFlow(file);
    const unknown = flow.map((n) => n.type).filter((t) => t !== 'tab' && !pack.has(t) && !core.has(t) && !dashboard.has(t));
    expect(unknown).toEqual([]);
    const used = new Set(flow.map((n) => n.type));
    for (const t of ['printfarm-server', 'printfarm-printer', 'printfarm-job-watcher', 'printfarm-file-download', 'printfarm-stats', 'ui-template', 'ui-table', 'ui-chart', 'ui-notification']) expect(used).toContain(t);
  });

  test.each(DASHBOARD_FILES)('%s: every wire, link, group, page and server points at a node of the file', (file) => {
    const flow = readFlow(file);
    const ids = new Set(flow.map((n) => n.id));
    expect(ids.size).toBe(flow.length);
    const refs: [string, string][] = [];
    for (const n of flow) {
      for (const out of n.wires ?? []) for (const target of out) refs.push([n.id, target]);
      for (const key of ['z', 'group', 'page', 'ui', 'server', 'theme']) if (typeof n[key] === 'string' && n[key]) refs.push([n.id, n[key] as string]);
      for (const key of ['links', 'scope']) if (Array.isArray(n[key])) for (const target of n[key] as string[]) refs.push([n.id, target]);
    }
    expect(refs.filter(([, target]) => !ids.has(target))).toEqual([]);
  });

  // The service closes idle connections after 5 s; a request sent on one as it closes fails with ECONNRESET.
  test.each(DASHBOARD_FILES)('%s: the http request nodes open a connection per request', (file) => {
    const requests = readFlow(file).filter((n) => n.type === 'http request');
    expect(requests.length).toBeGreaterThan(0);
    expect(requests.filter((n) => n.persist !== false).map((n) => n.name)).toEqual([]);
  });

  test('the pages: /dashboard with farm (first), queue, jobs, statistics, cameras and filament', () => {
    const flow = readFlow('flows/dashboard.json');
    expect(flow.find((n) => n.type === 'ui-base')).toMatchObject({ path: '/dashboard' });
    const pages = flow.filter((n) => n.type === 'ui-page').sort((a, b) => Number(a.order) - Number(b.order));
    expect(pages.map((p) => p.path)).toEqual(['/farm', '/queue', '/jobs', '/statistics', '/cameras', '/filament']);
  });

  // ECharts' default label interval ('auto') drew only every other printer's name, or fewer (test/browser/utilisation-chart.test.ts draws 60).
  test.each(DASHBOARD_FILES)('%s: the utilisation chart names every printer (no label skipped), slanted, on a full-width row', (file) => {
    const flow = readFlow(file);
    const chart = flow.find((n) => n.type === 'ui-chart' && n.id.endsWith('chart-util'))!;
    expect(chart.chartOptions).toMatchObject({ xAxis: { axisLabel: { interval: 0, rotate: 45, hideOverlap: false } } });
    expect(flow.find((n) => n.id === chart.group)).toMatchObject({ name: 'Utilisation per printer (%)', width: '12' });
    expect(chart.width).toBe(12);
  });

  test.each(DASHBOARD_FILES)('%s: function code parses; Vue templates are one `export default {}` without self-closing tags', (file) => {
    for (const n of readFlow(file)) {
      if (n.type === 'function') expect(() => parse(`async function f(msg, node, context, flow, global, env, RED) {\n${n.func as string}\n}`, { ecmaVersion: 'latest' })).not.toThrow();
      if (n.type !== 'ui-template' || !/^<template>/.test(n.format as string)) continue;
      const format = n.format as string;
      // Dashboard 2.0 reads the template with DOMParser: `<v-icon />` would swallow its siblings.
      expect({ node: n.name, selfClosing: format.match(/<[a-z][\w-]*\b[^>]*\/>/g) ?? [] }).toEqual({ node: n.name, selfClosing: [] });
      const script = /<script>([\s\S]*)<\/script>/.exec(format);
      if (!script) continue;
      const program = parse(script[1], { ecmaVersion: 'latest', sourceType: 'module' });
      expect({ node: n.name, body: program.body.map((s) => s.type) }).toEqual({ node: n.name, body: ['ExportDefaultDeclaration'] });
    }
  });
});

describe('every flow and example of the pack', () => {
  test('config-node ids are unique across all of them', () => {
    const owners = new Map<string, string[]>();
    for (const file of FLOW_FILES) for (const n of readFlow(file).filter(isConfig)) owners.set(n.id, [...(owners.get(n.id) ?? []), `${file} (${n.type})`]);
    expect(FLOW_FILES.length).toBeGreaterThan(3);
    expect([...owners].filter(([, files]) => files.length > 1)).toEqual([]);
  });

  // A deployed node of a type Node-RED lacks (node-red-node-email's e-mail) stops every flow, the farm's too.
  test.each(FLOW_FILES)('%s uses only this pack\'s, Node-RED core\'s and Dashboard 2.0\'s node types', (file) => {
    const unknown = readFlow(file).map((n) => n.type).filter((t) => t !== 'tab' && !pack.has(t) && !core.has(t) && !dashboard.has(t));
    expect(unknown).toEqual([]);
  });

  // An example runs as soon as it is deployed: placeholders (ntfy.sh/CHANGE-ME, a broker on localhost) must not send.
  test.each(FLOW_FILES.filter((f) => f.startsWith('examples/')))('%s: nodes that send beyond the pack\'s service ship disabled', (file) => {
    const sends = (n: FlowNode) => /^(mqtt (in|out)|websocket (in|out)|tcp (out|request)|udp out)$/.test(n.type) || (n.type === 'http request' && n.url !== '');
    expect(readFlow(file).filter((n) => sends(n) && n.d !== true).map((n) => `${n.type} ${String(n.name)}`)).toEqual([]);
  });
});
