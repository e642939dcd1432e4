/**
 * `printfarm serve` and its data directory as an operator meets them: a second
 * service on the same folder, a corrupt database file, a folder it may not
 * write. Each exits with status 2 and one message naming the path and what to
 * do, never a stack trace.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { killChildren, spawnService } from '../helpers/child-service';
import { tempDir } from '../helpers/service';

const BIN = path.join(__dirname, '../../bin/printfarm.js');
const serve = (dataDir: string) =>
  spawnSync(process.execPath, [BIN, 'serve', '--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir], { encoding: 'utf8', env: { PATH: process.env.PATH, LOG_LEVEL: 'warn' }, timeout: 30_000 });
const noStack = (text: string) => expect(text).not.toMatch(/\n\s+at |node_modules|\.js:\d+/);

/** Whether a user other than the owner can reach and read `file` (every folder above it searchable). */
function readableByOthers(file: string): boolean {
  if ((fs.statSync(file).mode & 0o004) === 0) return false;
  for (let dir = path.dirname(path.resolve(file)); ; dir = path.dirname(dir)) {
    if ((fs.statSync(dir).mode & 0o001) === 0) return false;
    if (dir === path.dirname(dir)) return true;
  }
}

/** Makes `dir` a read-only bind mount of itself (root with the mount capability); false where that can't be done. */
function readOnlyMount(dir: string): boolean {
  if (spawnSync('mount', ['--bind', dir, dir]).status !== 0) return false;
  if (spawnSync('mount', ['-o', 'remount,bind,ro', dir]).status === 0) return true;
  spawnSync('umount', [dir]);
  return false;
}

describe('printfarm serve and its data directory', () => {
  afterEach(async () => {
    await killChildren();
  });

  test('a second printfarm serve on the same data dir exits with status 2 naming the dir and the other process', async () => {
    const dir = tempDir();
    const first = await spawnService(dir);
    const second = serve(dir);
    expect(second.status).toBe(2);
    expect(second.stderr).toContain(`printfarm: the data directory ${dir} is in use by another Printfarm service (pid ${first.child.pid}`);
    expect(second.stderr).toContain('--data-dir');
    noStack(second.stderr);
    expect((await first.get('/api/v1/health')).status).toBe(200);
  });

  test('a corrupt database file exits with status 2 naming the file and what to do', () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, 'printfarm.db'), Buffer.alloc(8192, 0x5a));
    const run = serve(dir);
    expect(run.status).toBe(2);
    expect(run.stderr).toContain(`printfarm: the database ${path.join(dir, 'printfarm.db')} cannot be used (SQLITE_NOTADB`);
    expect(run.stderr).toMatch(/move .*printfarm\.db aside \(or restore it from a backup\)/);
    noStack(run.stderr);
  });

  test('a data directory the service may not write exits with status 2 naming it and what to do', () => {
    const parent = tempDir();
    const dir = path.join(parent, 'data');
    fs.mkdirSync(dir);
    fs.chmodSync(dir, 0o555);
    const asRoot = process.getuid?.() === 0;
    // As root, permissions do not stop writes. Run the service as nobody when nobody can read the package;
    // a checkout in a private folder (mktemp -d) can't be, so the folder becomes a read-only mount instead.
    const asNobody = asRoot && readableByOthers(BIN);
    const mounted = asRoot && !asNobody && readOnlyMount(dir);
    if (asRoot && !asNobody && !mounted) {
      console.warn('skipped: running as root, the package is not readable by nobody and a read-only mount is not possible here');
      return;
    }
    try {
      if (asNobody) fs.chmodSync(parent, 0o755);
      const run = spawnSync(process.execPath, [BIN, 'serve', '--port', '0', '--host', '127.0.0.1', '--data-dir', dir], {
        encoding: 'utf8',
        env: { PATH: process.env.PATH, LOG_LEVEL: 'warn' },
        timeout: 30_000,
        ...(asNobody ? { uid: 65534, gid: 65534 } : {}),
      });
      expect(run.stderr).toContain(`printfarm: the data directory ${dir} cannot be written (${mounted ? 'EROFS' : 'EACCES'})`);
      expect(run.stderr).toContain('write access');
      expect(run.status).toBe(2);
      noStack(run.stderr);
    } finally {
      if (mounted) spawnSync('umount', [dir]);
    }
  });
});
