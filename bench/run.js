#!/usr/bin/env node
'use strict';
/**
 * `npm run bench [-- [name] [options]]`: compiles bench/ and service/ with
 * tsconfig.bench.json into dist-bench/ (incremental, so a second run is fast)
 * and runs the benchmarks, each in its own node process. Needs only
 * `npm install` (typescript is a devDependency); no ts-node.
 *
 *   npm run bench                              every benchmark, default options
 *   npm run bench -- fleet --sizes 50,200 --window 5
 *   npm run bench -- stats --sizes 10000,100000,1000000
 *   npm run bench -- stats --sizes 10000000                     (10^7 jobs: about 7 GB in the temp dir)
 *   npm run bench -- stats --db postgres --sizes 10000,100000   (the same farm on PostgreSQL)
 *   npm run bench -- gcode --size-mb 200
 *   npm run bench -- soak --minutes 1 --printers 200 --clients 20 --rps 20
 *   npm run bench -- nodered --sizes 200,1000   (needs npm run build: Node-RED loads dist/)
 *   npm run bench -- dispatch --printers 100 --size-mb 20 --parallel 4 --rounds 3
 *   npm run bench -- aggregator --installations 100000 --submissions 1000000   (PostgreSQL)
 *   npm run bench -- camera --printers 100 --viewers 2 --window 30
 */
const { execFileSync, spawnSync } = require('node:child_process');
const path = require('node:path');

const root = path.join(__dirname, '..');
const BENCHMARKS = ['fleet', 'stats', 'gcode', 'soak', 'nodered', 'dispatch', 'aggregator', 'camera'];

let args = process.argv.slice(2);
let selected = BENCHMARKS;
if (args[0] && !args[0].startsWith('-')) {
  if (!BENCHMARKS.includes(args[0])) {
    process.stderr.write(`unknown benchmark "${args[0]}" (have: ${BENCHMARKS.join(', ')})\n`);
    process.exit(2);
  }
  selected = [args[0]];
  args = args.slice(1);
}

const tsc = require.resolve('typescript/bin/tsc');
try {
  execFileSync(process.execPath, [tsc, '-p', path.join(root, 'tsconfig.bench.json')], { cwd: root, stdio: 'inherit' });
} catch (err) {
  // tsc exit status 2: type errors, JavaScript emitted anyway. Type checking is `npm test`'s job;
  // a benchmark can still run (status 1 means nothing was emitted).
  if (err.status !== 2) {
    process.stderr.write('bench: compiling bench/ and service/ failed\n');
    process.exit(1);
  }
  process.stderr.write('bench: type errors above; running the emitted JavaScript anyway\n');
}

let status = 0;
for (const name of selected) {
  const result = spawnSync(process.execPath, [path.join(root, 'dist-bench', 'bench', `${name}.js`), ...args], { cwd: root, stdio: 'inherit' });
  if (result.status !== 0) status = result.status ?? 1;
}
process.exit(status);
