/**
 * The house rule of ARCHITECTURE.md: small modules with one job, no source file over 400 lines. A file that
 * grows past it is split by what it does (as bambu/state.ts was into the mapping and merge.ts).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

const root = resolve(__dirname, '../..');
const MAX_LINES = 400;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : sourceFiles(path);
    return entry.isFile() && /\.(ts|js|vue)$/.test(entry.name) ? [path] : [];
  });
}

it(`no source file is over ${MAX_LINES} lines`, () => {
  const files = ['service', 'nodes', 'bench', 'bin', 'test', 'scripts'].flatMap((dir) => sourceFiles(join(root, dir)));
  expect(files.length).toBeGreaterThan(300);
  const long = files
    .map((file) => ({ file: relative(root, file), lines: readFileSync(file, 'utf8').split('\n').length - 1 }))
    .filter((f) => f.lines > MAX_LINES);
  expect(long).toEqual([]);
});
