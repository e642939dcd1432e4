/**
 * The pack as a Node-RED user installs it: `npm pack`'s tarball put into a
 * fresh Node-RED user dir and Node-RED 4.1 started on it. Every type is
 * registered, nothing is logged as a warning, every example is listed under
 * Import > Examples, flows/ and LICENSE are there, no source maps and no
 * aggregation service. Then the flow library's scorecard rules that need no
 * internet (node-red-dev is not installed here; see below).
 *
 * How it installs: npm's cache on these machines holds no tarballs (an
 * `npm install --offline` of the tarball fails with ENOTCACHED) and a real
 * install would compile better-sqlite3 for about a minute. So the test does
 * what npm does with the package itself (unpacks package/ into
 * node_modules/<name>) and links each *declared* dependency from the
 * project's installed node_modules. A module the pack needs but does not
 * declare would not resolve from the user dir, so that is still caught.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { tempDir } from '../helpers/service';
import { until } from '../helpers/farm';

const root = path.join(__dirname, '..', '..');
const built = fs.existsSync(path.join(root, 'dist', 'nodes', 'printfarm-server.js'));
if (!built) console.warn('install test skipped: run `npm run build` first (npm test does)');
const describeBuilt = built ? describe : describe.skip;

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as Json;
const TYPES = Object.keys(pkg['node-red'].nodes as Record<string, string>);
const EXAMPLES = fs
  .readdirSync(path.join(root, 'examples'))
  .filter((f) => f.endsWith('.json'))
  .map((f) => f.replace(/\.json$/, ''));

function run(cmd: string, args: string[], cwd: string): string {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', timeout: 120_000 });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: exit ${r.status}\n${r.stderr}`);
  return r.stdout;
}

describeBuilt('the npm pack tarball installed into a fresh Node-RED', () => {
  const dir = tempDir('printfarm-install-');
  const userDir = path.join(dir, 'user');
  const installed = path.join(userDir, 'node_modules', ...String(pkg.name).split('/'));
  let tarball = '';
  let child: ChildProcess | null = null;
  let log = '';
  let url = '';

  beforeAll(async () => {
    // --ignore-scripts: the build is there already (prepare would build again).
    const [packed] = JSON.parse(run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', dir], root)) as Json[];
    tarball = path.join(dir, packed.filename);
    fs.mkdirSync(installed, { recursive: true });
    run('tar', ['xzf', tarball, '-C', installed, '--strip-components=1'], dir);
    for (const dep of Object.keys(pkg.dependencies)) {
      fs.mkdirSync(path.dirname(path.join(userDir, 'node_modules', dep)), { recursive: true });
      fs.symlinkSync(fs.realpathSync(path.join(root, 'node_modules', dep)), path.join(userDir, 'node_modules', dep), 'dir');
    }
    fs.writeFileSync(path.join(userDir, 'package.json'), JSON.stringify({ name: 'node-red-project', private: true, dependencies: { [pkg.name]: `file:${tarball}` } }));
    fs.writeFileSync(
      path.join(userDir, 'settings.js'),
      `module.exports = ${JSON.stringify({
        uiPort: 0,
        uiHost: '127.0.0.1',
        flowFile: 'flows.json',
        credentialSecret: 'install-test',
        telemetry: { enabled: false },
        editorTheme: { tours: false },
        logging: { console: { level: 'info', metrics: false, audit: false } },
      })};\n`,
    );
    child = spawn(process.execPath, [require.resolve('node-red/red.js'), '--userDir', userDir, '--settings', path.join(userDir, 'settings.js')], { cwd: userDir, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout!.on('data', (d) => (log += d));
    child.stderr!.on('data', (d) => (log += d));
    url = await until(() => /Started flows/.test(log) && /Server now running at (http:\/\/\S+?)\/?\s/.exec(log)?.[1], `Node-RED to start:\n${log}`, 60_000);
  }, 120_000);

  afterAll(async () => {
    if (child && child.exitCode === null) {
      const exited = new Promise((resolve) => child!.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('Node-RED registers every type of the pack, enabled and loaded, and logs no warning', async () => {
    const sets = (await (await fetch(`${url}/nodes`, { headers: { accept: 'application/json' } })).json()) as Json[];
    const ours = sets.filter((s) => s.module === pkg.name);
    expect(ours.map((s) => [s.name, s.types, s.enabled, s.err ?? null])).toEqual(TYPES.map((t) => [t, [t], true, null]));
    // Node-RED's own notices about a fresh user dir are no warnings about the pack.
    const FRESH_USER_DIR = /Projects disabled|Encrypted credentials not found/;
    expect(log.split('\n').filter((l) => /\[(warn|error)\]/.test(l) && !FRESH_USER_DIR.test(l))).toEqual([]);
    expect(log).toMatch(/\[info\] Started flows/);
  });

  test('every example is listed under Import > Examples and imports as the file', async () => {
    // What the editor's Import > Examples menu reads (the "examples" library of the runtime).
    const listed = (await (await fetch(`${url}/library/examples/flows/${pkg.name}`)).json()) as Json[];
    expect(listed.map((e) => e.fn).sort()).toEqual([...EXAMPLES].sort());
    const first = await (await fetch(`${url}/library/examples/flows/${pkg.name}/${encodeURIComponent(EXAMPLES[0])}`)).json();
    expect(first).toEqual(JSON.parse(fs.readFileSync(path.join(root, 'examples', `${EXAMPLES[0]}.json`), 'utf8')));
  });

  test('flows/ and LICENSE ship; source maps and the aggregation service do not', () => {
    const files = (function walk(d: string): string[] {
      return fs.readdirSync(d, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(path.join(d, e.name)) : [path.relative(installed, path.join(d, e.name))]));
    })(installed);
    expect(files).toEqual(expect.arrayContaining(['flows/farm.json', 'flows/home-assistant.json', 'LICENSE', 'README.md', 'bin/printfarm.js']));
    expect(fs.readFileSync(path.join(installed, 'LICENSE'), 'utf8')).toMatch(/Apache License\s+Version 2\.0, January 2004[\s\S]*END OF TERMS AND CONDITIONS/);
    expect(files.filter((f) => f.endsWith('.map'))).toEqual([]);
    expect(files.filter((f) => f.includes('aggregator'))).toEqual([]);
    // The CLI of the installed package says so instead of failing on a missing module.
    const r = spawnSync(process.execPath, [path.join(installed, 'bin', 'printfarm.js'), 'aggregator'], { encoding: 'utf8', timeout: 20_000 });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/not part of the installed package/);
  });

  test('the README reports the tarball size', () => {
    const kib = Math.round(fs.statSync(tarball).size / 1024);
    const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
    const m = /tarball is about (\d+) KiB/.exec(readme);
    expect(m).not.toBeNull();
    // Within 10 %: the figure is rounded and the build moves a little between changes.
    expect(Math.abs(Number(m![1]) - kib) / kib).toBeLessThan(0.1);
  });
});

/**
 * The flow library's scorecard (node-red-dev validate) rules that need no
 * internet, as node-red-dev-cli implements them, on the package.json and
 * examples that the tarball carries. P02 (clones the repository), P08 and
 * N01 (the catalogue), D01/D03 (npm registry) need the network and are not
 * emulated; node-red-dev itself is not installed in this project.
 */
describe('the flow library scorecard (offline rules)', () => {
  // Current Node-RED lines when this was written: the installed 4.1 (maintenance) and 5.0.7 (latest, Node >= 22.9).
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const installedNodeRed = (require('node-red/package.json') as { version: string }).version;
  const SUPPORTED_NODE_RED = [installedNodeRed, '5.0.7'];
  const LATEST_MIN_NODE = '22.9.0';
  /** Tiny semver for ">=x.y.z" ranges (the form both fields use). */
  const satisfies = (version: string, range: string) => {
    const m = /^>=\s*(\d+)(?:\.(\d+))?(?:\.(\d+))?$/.exec(range.trim());
    if (!m) throw new Error(`range "${range}" is not of the form >=x.y.z`);
    const want = [m[1], m[2] ?? '0', m[3] ?? '0'].map(Number);
    const have = version.split(/[.-]/).slice(0, 3).map(Number);
    for (let i = 0; i < 3; i++) if (have[i] !== want[i]) return have[i] > want[i];
    return true;
  };

  test('P01 license, P03 repository/bugs, P04 scoped name, P05 node-red keyword', () => {
    expect(pkg.license).toBe('Apache-2.0');
    expect(fs.existsSync(path.join(root, 'LICENSE'))).toBe(true);
    expect(pkg.repository?.url).toMatch(/^git\+https:\/\/github\.com\/printfarm\/node-red-printfarm\.git$/);
    expect(pkg.bugs?.url).toBe('https://github.com/printfarm/node-red-printfarm/issues');
    expect(/@[a-z\d][\w-.]+\/[a-z\d][\w-.]*/.test(pkg.name)).toBe(true);
    expect(pkg.keywords).toContain('node-red');
  });

  test('P06 the Node-RED range holds the current lines; P07 the Node range holds the latest Node-RED minimum', () => {
    for (const v of SUPPORTED_NODE_RED) expect([v, satisfies(v, pkg['node-red'].version)]).toEqual([v, true]);
    expect(satisfies(LATEST_MIN_NODE, pkg.engines.node)).toBe(true);
  });

  test('N02 every node type (not the config node) is in an example', () => {
    const used = new Set(EXAMPLES.flatMap((e) => (JSON.parse(fs.readFileSync(path.join(root, 'examples', `${e}.json`), 'utf8')) as Json[]).map((n) => n.type)));
    expect(TYPES.filter((t) => t !== 'printfarm-server' && !used.has(t))).toEqual([]);
  });

  test('D02 no known-bad package (agent-base < 6) in the production dependency tree', () => {
    const lock = JSON.parse(fs.readFileSync(path.join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version?: string; dev?: boolean }> };
    const bad = Object.entries(lock.packages).filter(([p, info]) => !info.dev && p.endsWith('node_modules/agent-base') && Number(String(info.version).split('.')[0]) < 6);
    expect(bad).toEqual([]);
  });
});
