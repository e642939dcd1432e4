/**
 * Printer downloads are bounded: a file over MAX_DOWNLOAD_SIZE_MB is refused, a full disk fails at once
 * as `disk_full` (not blamed on the printer, not retried), a printer that goes silent mid-transfer is
 * given up after the stall timeout, and a running download can be stopped (cancel, or DELETE of the
 * file). Real PrusaLink simulator over HTTP; the full disk is a real tmpfs mounted over the files folder
 * (needs root with CAP_SYS_ADMIN; skipped with a message otherwise).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { driverFactory } from '../../service/printers/drivers';
import { BambuSimulator } from '../../service/simulators/bambu';
import { PrusaSimulator } from '../../service/simulators/prusa/simulator';
import { startService, tempDir, type Harness } from '../helpers/service';
import { control, until } from '../helpers/farm';
import { connectWs } from '../helpers/ws';

const MB = 1024 * 1024;
const bigFile = (name: string, size: number) => ({ name, data: Buffer.alloc(size, 0x47) });

let sim: PrusaSimulator;
beforeAll(async () => {
  sim = await PrusaSimulator.start({
    id: 'dl-prusa',
    name: 'Download limits',
    files: [bigFile('huge.bgcode', Math.round(1.5 * MB)), bigFile('medium.bgcode', 600 * 1024), bigFile('small.bgcode', 40 * 1024)],
  });
});
afterAll(() => sim.close());

async function start(env: Record<string, string> = {}, dataDir = tempDir()): Promise<Harness> {
  const h = await startService(
    {
      env,
      driverFactory: driverFactory({ backoffBaseMs: 100, backoffMaxMs: 1000 }),
      fleet: { watchdogMs: 60_000, commandTimeoutMs: 20_000, pollMs: 200, connectTimeoutMs: 4000 },
      downloads: { attempts: 2, retryDelayMs: 50, frameIntervalMs: 20, stallTimeoutMs: 800 },
    },
    dataDir,
  );
  await h.post('/api/v1/printers', sim.printerConfig());
  await until(async () => (await h.get('/api/v1/files?printer_id=dl-prusa')).body.files.length >= 3, 'the printer files');
  return h;
}

const fileId = async (h: Harness, name: string) =>
  (await h.get('/api/v1/files?printer_id=dl-prusa')).body.files.find((f: { filename: string }) => f.filename === name).id as string;

const partials = (dir: string): string[] =>
  fs.existsSync(dir) ? fs.readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((n) => /\.part-/.test(n)) : [];

describe('download limits', () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
    await control(sim.controlUrl, 'online');
    await control(sim.controlUrl, 'faults', { transfer_bytes_per_sec: 0 });
  });

  test('a file over MAX_DOWNLOAD_SIZE_MB is refused with 413 FILE_TOO_LARGE and nothing starts', async () => {
    h = await start({ MAX_DOWNLOAD_SIZE_MB: '1' });
    const id = await fileId(h, 'huge.bgcode');
    const res = await h.post(`/api/v1/files/${id}/download`);
    expect(res.status).toBe(413);
    expect(res.body.error).toMatchObject({ code: 'FILE_TOO_LARGE', details: { file_id: id, limit_bytes: MB } });
    expect((await h.get(`/api/v1/files/${id}`)).body.status).toBe('available');
    // Under the cap it still works.
    const small = await fileId(h, 'small.bgcode');
    expect((await h.post(`/api/v1/files/${small}/download`)).status).toBe(202);
    expect(await h.service.context.files.downloads.wait(small)).toMatchObject({ status: 'completed', progress: 100, reason: null });
  });

  test('a printer that goes silent mid-transfer is given up (reason stalled) and its partial bytes removed', async () => {
    h = await start();
    const id = await fileId(h, 'medium.bgcode');
    await control(sim.controlUrl, 'faults', { transfer_bytes_per_sec: 100_000 });
    expect((await h.post(`/api/v1/files/${id}/download`)).status).toBe(202);
    await until(async () => (await h!.get(`/api/v1/files/${id}/download/status`)).body.bytes_downloaded > 0, 'the first bytes');
    await control(sim.controlUrl, 'stall');
    const task = await h.service.context.files.downloads.wait(id);
    expect(task).toMatchObject({ status: 'failed', reason: 'stalled', attempt: 2, error: expect.stringMatching(/no data from the printer/) });
    const status = (await h.get(`/api/v1/files/${id}/download/status`)).body;
    expect(status.progress).toBeGreaterThanOrEqual(0);
    expect(status.progress).toBeLessThanOrEqual(100);
    expect((await h.get(`/api/v1/files/${id}`)).body).toMatchObject({ status: 'error', local_path: null });
    expect(partials(path.join(h.dataDir, 'files'))).toEqual([]);
  });

  test('POST /files/{id}/download/cancel stops a drip-fed download; the file is available again', async () => {
    h = await start();
    const id = await fileId(h, 'medium.bgcode');
    await control(sim.controlUrl, 'faults', { transfer_bytes_per_sec: 20 });
    expect((await h.post(`/api/v1/files/${id}/download`)).status).toBe(202);
    await until(async () => (await h!.get(`/api/v1/files/${id}/download/status`)).body.bytes_downloaded > 0, 'the first bytes');
    const res = await h.post(`/api/v1/files/${id}/download/cancel`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ file_id: id, status: 'cancelled', reason: 'cancelled', completed_at: expect.any(String) });
    expect((await h.get(`/api/v1/files/${id}`)).body.status).toBe('available');
    expect(partials(path.join(h.dataDir, 'files'))).toEqual([]);
    const again = await h.post(`/api/v1/files/${id}/download/cancel`);
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('NO_DOWNLOAD_RUNNING');
  });

  test('DELETE of a file that is downloading stops the download instead of answering 409 FILE_BUSY', async () => {
    h = await start();
    const id = await fileId(h, 'medium.bgcode');
    await control(sim.controlUrl, 'faults', { transfer_bytes_per_sec: 20 });
    await h.post(`/api/v1/files/${id}/download`);
    await until(async () => (await h!.get(`/api/v1/files/${id}`)).body.status === 'downloading' && (await h!.get(`/api/v1/files/${id}/download/status`)).body.bytes_downloaded > 0, 'the download');
    const del = await h.del(`/api/v1/files/${id}`);
    expect(del.status).toBe(200);
    expect(del.body).toMatchObject({ id, status: 'available' });
    expect((await h.get(`/api/v1/files/${id}/download/status`)).body).toMatchObject({ status: 'cancelled' });
    expect(partials(path.join(h.dataDir, 'files'))).toEqual([]);
  });
});

/** A tmpfs of `kb` KiB mounted at `dir`, or null when this machine does not let us mount. */
function smallDisk(dir: string, kb: number): (() => void) | null {
  fs.mkdirSync(dir, { recursive: true });
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${kb}k`, 'tmpfs', dir], { stdio: 'ignore' });
  } catch {
    return null;
  }
  return () => execFileSync('umount', [dir], { stdio: 'ignore' });
}

describe('download onto a full disk', () => {
  test('over Bambu FTPS too: the transfer ends at the write error (no wait on back-pressure), reason disk_full', async () => {
    const dataDir = tempDir();
    const unmount = smallDisk(path.join(dataDir, 'files'), 256);
    if (!unmount) {
      console.warn('skipped: cannot mount a tmpfs here (needs root with CAP_SYS_ADMIN)');
      fs.rmSync(dataDir, { recursive: true, force: true });
      return;
    }
    const bambu = await BambuSimulator.start({ id: 'dl-bambu', speed: 50 });
    bambu.storage.put('/big.gcode.3mf', Buffer.alloc(2 * MB, 0x33));
    let h: Harness | undefined;
    try {
      h = await startService(
        {
          driverFactory: driverFactory({ backoffBaseMs: 100, backoffMaxMs: 1000 }),
          fleet: { watchdogMs: 60_000, commandTimeoutMs: 20_000, pollMs: 200, connectTimeoutMs: 4000 },
          downloads: { attempts: 3, retryDelayMs: 50, frameIntervalMs: 20, stallTimeoutMs: 20_000 },
        },
        dataDir,
      );
      await h.post('/api/v1/printers', bambu.printerConfig());
      const id = await until(async () => {
        const files = (await h!.get('/api/v1/files?printer_id=dl-bambu&limit=100')).body.files as { id: string; filename: string }[];
        return files.find((f) => f.filename === 'big.gcode.3mf')?.id;
      }, 'the big file listed');
      expect((await h.post(`/api/v1/files/${id}/download`)).status).toBe(202);
      const task = await h.service.context.files.downloads.wait(id);
      expect(task).toMatchObject({ status: 'failed', reason: 'disk_full', attempt: 1, error: expect.stringMatching(/local storage full \((ENOSPC|EFBIG)\)/) });
      expect(partials(path.join(dataDir, 'files'))).toEqual([]);
    } finally {
      await h?.stop();
      await bambu.close();
      unmount();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);

  test('fails at once as DOWNLOAD_FAILED with reason disk_full, not retried, not blamed on the printer', async () => {
    const dataDir = tempDir();
    const unmount = smallDisk(path.join(dataDir, 'files'), 256);
    if (!unmount) {
      console.warn('skipped: cannot mount a tmpfs here (needs root with CAP_SYS_ADMIN)');
      fs.rmSync(dataDir, { recursive: true, force: true });
      return;
    }
    let h: Harness | undefined;
    try {
      h = await start({}, dataDir);
      const ws = await connectWs(h.base);
      const id = await fileId(h, 'medium.bgcode');
      expect((await h.post(`/api/v1/files/${id}/download`)).status).toBe(202);
      const alert = await ws.next((f) => f.type === 'system_alert' && f.data.code === 'DOWNLOAD_FAILED', 15_000);
      expect(alert.data).toMatchObject({ reason: 'disk_full', file_id: id, message: expect.stringMatching(/local storage full \(ENOSPC\)/) });
      expect(alert.data.message).not.toMatch(/unreachable/);
      const status = (await h.get(`/api/v1/files/${id}/download/status`)).body;
      expect(status).toMatchObject({ status: 'failed', reason: 'disk_full', attempt: 1 });
      expect(status.progress).toBeGreaterThanOrEqual(0);
      expect(status.progress).toBeLessThanOrEqual(100);
      expect(h.logs.some((l) => l.msg === 'download failed' && l.reason === 'disk_full' && l.level === 50)).toBe(true);
      // The partial bytes are gone, so the disk has room again.
      expect(partials(path.join(dataDir, 'files'))).toEqual([]);
      for (const f of ws.frames.filter((fr) => fr.type === 'file_update')) {
        expect(f.data.progress as number).toBeGreaterThanOrEqual(0);
        expect(f.data.progress as number).toBeLessThanOrEqual(100);
      }
      await ws.close();
    } finally {
      await h?.stop();
      unmount();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
