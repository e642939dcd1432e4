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
    // As root, permissions do not stop writes: run the service as nobody, who may read the package but not write there.
    const asRoot = process.getuid?.() === 0;
    if (asRoot) fs.chmodSync(parent, 0o755);
    const run = spawnSync(process.execPath, [BIN, 'serve', '--port', '0', '--host', '127.0.0.1', '--data-dir', dir], {
      encoding: 'utf8',
      env: { PATH: process.env.PATH, LOG_LEVEL: 'warn' },
      timeout: 30_000,
      ...(asRoot ? { uid: 65534, gid: 65534 } : {}),
    });
    expect(run.stderr).toContain(`printfarm: the data directory ${dir} cannot be written (EACCES)`);
    expect(run.stderr).toContain('write access');
    expect(run.status).toBe(2);
    noStack(run.stderr);
  });
});
