/**
 * One service per data directory: a second service on the same folder is
 * refused with a message naming the folder and the other process, the first
 * one goes on; a lock left by a process that is gone is taken over.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { DataDirLockedError, LOCK_FILENAME } from '../../service/system/data-lock';
import { startService, tempDir, type Harness } from '../helpers/service';

describe('data directory lock', () => {
  const opened: Harness[] = [];
  afterEach(async () => {
    for (const h of opened.splice(0)) await h.close();
  });

  test('a second service on the same data dir is refused naming the dir and the holder; the first goes on; after it stops the dir is free', async () => {
    const dir = tempDir();
    const first = await startService({}, dir);
    opened.push(first);
    const lock = JSON.parse(fs.readFileSync(path.join(dir, LOCK_FILENAME), 'utf8'));
    expect(lock).toMatchObject({ pid: process.pid, host: expect.any(String), started_at: expect.any(String) });

    const second = startService({}, dir);
    await expect(second).rejects.toBeInstanceOf(DataDirLockedError);
    await expect(second).rejects.toMatchObject({ code: 'DATA_DIR_LOCKED', message: expect.stringContaining(`the data directory ${dir} is in use by another Printfarm service (pid ${process.pid}`) });
    expect((await first.get('/api/v1/health')).status).toBe(200);

    await first.stop();
    expect(fs.existsSync(path.join(dir, LOCK_FILENAME))).toBe(false);
    const again = await first.restart();
    opened.push(again);
    expect((await again.get('/api/v1/health')).status).toBe(200);
  });

  test('a lock left by a process that is gone (killed, crashed) is taken over', async () => {
    const dir = tempDir();
    const gone = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
    const deadPid = Number(gone.stdout);
    fs.writeFileSync(path.join(dir, LOCK_FILENAME), JSON.stringify({ pid: deadPid, host: require('node:os').hostname(), started_at: '2026-01-01T00:00:00.000Z', token: 'x' }));
    const h = await startService({}, dir);
    opened.push(h);
    expect(JSON.parse(fs.readFileSync(path.join(dir, LOCK_FILENAME), 'utf8')).pid).toBe(process.pid);
  });
});

describe('storage faults while running', () => {
  test('/health turns unhealthy (503) when printfarm.db is deleted or replaced under the running service', async () => {
    const h = await startService();
    try {
      const file = path.join(h.dataDir, 'printfarm.db');
      expect((await h.get('/api/v1/health')).body).toMatchObject({ status: 'healthy', database: 'connected' });
      // Replaced: another file (a restored backup) takes its name.
      fs.copyFileSync(file, `${file}.copy`);
      fs.renameSync(`${file}.copy`, file);
      const replaced = await h.get('/api/v1/health');
      expect(replaced.status).toBe(503);
      expect(replaced.body).toMatchObject({ status: 'unhealthy', database: 'error' });
      // Deleted.
      fs.rmSync(file);
      const deleted = await h.get('/api/v1/health');
      expect([deleted.status, deleted.body.status]).toEqual([503, 'unhealthy']);
    } finally {
      await h.close();
    }
  });
});
