/**
 * Local copies and thumbnails of files whose row is gone are removed from the disk: a removed printer takes its
 * files' rows with it (ON DELETE CASCADE) and a deleted local file takes its row, and neither removed the copy or
 * the picture, so a farm that changes printers and files filled its data dir for good. The sweep runs at start
 * and with the periodic file refresh (FileCatalog.sweepOrphans); what other files have stays.
 */
import fs from 'node:fs';
import path from 'node:path';
import { startFarm, type SimulatedFarm } from '../../service/simulators';
import { seedFiles } from '../../service/simulators/seed-files';
import { quickDrivers, until } from '../helpers/farm';
import { startService, type Harness } from '../helpers/service';

describe('copies and thumbnails of files that are gone', () => {
  let farm: SimulatedFarm | undefined;
  let h: Harness;
  afterEach(async () => {
    await h?.close();
    await farm?.close();
    farm = undefined;
  });

  async function upload(name: string, data: Buffer): Promise<string> {
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(data)]), name);
    const res = await fetch(`${h.base}/api/v1/files/upload`, { method: 'POST', body: form });
    expect(res.status).toBe(201);
    return ((await res.json()) as { id: string }).id;
  }

  const thumbnail = (id: string) => h.service.context.files.thumbnailPath(id);

  test("a deleted local file's thumbnail is removed at the next start; a kept file's stays", async () => {
    h = await startService();
    const gcode = seedFiles().find((f) => f.name.endsWith('.gcode'))!;
    const [gone, kept] = [await upload('gone.gcode', gcode.data), await upload('kept.gcode', gcode.data)];
    for (const id of [gone, kept]) expect((await h.post(`/api/v1/files/${id}/thumbnail/extract`)).status).toBe(200);
    expect((await h.del(`/api/v1/files/${gone}`)).status).toBe(200);
    // Deleting the file left its picture behind.
    expect(fs.existsSync(thumbnail(gone))).toBe(true);

    h = await h.restart();
    await until(() => !fs.existsSync(thumbnail(gone)), 'the orphan thumbnail removed at start');
    expect(fs.existsSync(thumbnail(kept))).toBe(true);
    expect((await fetch(`${h.base}/api/v1/files/${kept}/thumbnail`)).status).toBe(200);
  });

  test("a removed printer's downloaded copies are removed by the sweep; another printer's copy and a fresh orphan stay", async () => {
    farm = await startFarm({ bambu: 0, prusa: 2, speed: 50 });
    h = await startService({ ...quickDrivers(), downloads: { attempts: 2, retryDelayMs: 100, frameIntervalMs: 50 } });
    const copies: string[] = [];
    for (const { printer } of farm.printers) {
      expect((await h.post('/api/v1/printers', printer)).status).toBe(201);
      const file = await until(async () => (await h.get(`/api/v1/files?printer_id=${printer.id}`)).body.files[0], `files of ${printer.id}`);
      expect((await h.post(`/api/v1/files/${file.id}/download`)).status).toBe(202);
      const done = await until(async () => {
        const detail = (await h.get(`/api/v1/files/${file.id}`)).body as { status: string; local_path: string };
        return detail.status === 'downloaded' && detail;
      }, `${file.filename} downloaded`);
      copies.push(path.join(h.dataDir, done.local_path));
    }
    const [removedCopy, keptCopy] = copies;
    expect((await h.del(`/api/v1/printers/${farm.printers[0].printer.id}`)).status).toBe(200);
    expect(fs.existsSync(removedCopy)).toBe(true);

    // Younger than the sweep's bound: left alone (a download or a preview could be finishing it).
    expect(await h.service.context.files.sweepOrphans(Date.now() - 60_000)).toEqual({ copies: 0, thumbnails: 0 });
    expect(fs.existsSync(removedCopy)).toBe(true);

    expect(await h.service.context.files.sweepOrphans(Date.now() + 1000)).toEqual({ copies: 1, thumbnails: 0 });
    expect(fs.existsSync(removedCopy)).toBe(false);
    expect(fs.existsSync(path.dirname(removedCopy))).toBe(false);
    expect(fs.existsSync(keptCopy)).toBe(true);
  }, 30_000);
});
