/**
 * The file catalog and downloads against simulated printers: files appear when
 * a printer connects, download in the background with progress, survive no
 * interruption half-written, and local copies can be deleted and cleaned up.
 */
import { describeDialects } from '../helpers/dialects';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { driverFactory } from '../../service/printers/drivers';
import { seedFiles } from '../../service/simulators/seed-files';
import { startFarm, type SimulatedFarm } from '../../service/simulators';
import { startService, type Harness } from '../helpers/service';
import { connectWs } from '../helpers/ws';
import { control, until } from '../helpers/farm';


const sha = (b: Buffer) => `sha256:${createHash('sha256').update(b).digest('hex')}`;
// Simulators hold files sliced for their model: printer 0 is the farm's X1C, printer 1 an MK4S (with the default 3MF).
const seed = (suffix: string, index = 0) => seedFiles(index === 0 ? { bambu: 'X1C' } : { prusa: 'MK4S' }).find((f) => f.name.endsWith(suffix))!.data;

describeDialects('files on simulated printers', (db) => {
  let farm: SimulatedFarm;
  let h: Harness;
  beforeAll(async () => {
    farm = await startFarm({ bambu: 1, prusa: 1, speed: 50 });
  });
  afterAll(() => farm.close());
  beforeEach(async () => {
    h = await startService({
      driverFactory: driverFactory({ backoffBaseMs: 100, backoffMaxMs: 1000 }),
      fleet: { watchdogMs: 1500, commandTimeoutMs: 3000, pollMs: 200, connectTimeoutMs: 4000 },
      downloads: { attempts: 2, retryDelayMs: 100, frameIntervalMs: 50 },
      ...(await db.options()),
    });
  });
  afterEach(async () => {
    await h.close();
    for (const p of farm.printers) {
      await control(p.control_url, 'online');
      await control(p.control_url, 'faults', { transfer_bytes_per_sec: 0 });
    }
  });

  const filesOf = async (printerId: string) => (await h.get(`/api/v1/files?printer_id=${printerId}&limit=100`)).body;
  const addPrinter = async (index: number) => {
    const { printer } = farm.printers[index];
    await h.post('/api/v1/printers', printer);
    return until(async () => {
      const body = await filesOf(printer.id);
      return body.files.length >= 4 ? body : null;
    }, 'files listed after connect');
  };

  test.each([0, 1])('a connected printer (%#) lists its files with the spec fields', async (index) => {
    const body = await addPrinter(index);
    const file = body.files.find((f: { filename: string }) => /\.3mf$/i.test(f.filename))!;
    expect(file).toMatchObject({
      id: expect.any(String),
      printer_id: farm.printers[index].printer.id,
      printer_name: expect.any(String),
      file_type: '.3mf',
      status: 'available',
      status_icon: expect.any(String),
      file_size: seed('.gcode.3mf', index).length,
      local_path: null,
      download_url: `/api/v1/files/${file.id}/download`,
      metadata: { estimated_print_time: null, layer_height: null, infill: null },
    });
    expect(body.pagination).toMatchObject({ page: 1, limit: 100, total_items: body.files.length });
    expect(body.summary).toMatchObject({ available_count: body.files.length, downloaded_count: 0, local_count: 0, total_size: expect.any(Number) });
    const filtered = await h.get(`/api/v1/files?printer_id=${farm.printers[index].printer.id}&file_type=.stl`);
    expect(filtered.body.files.map((f: { file_type: string }) => f.file_type)).toEqual(['.stl']);
    const search = await h.get(`/api/v1/files?search=${encodeURIComponent('%')}`);
    expect(search.body.files).toEqual([]);
  });

  test.each([0, 1])('a download (%#) runs in the background with progress and ends byte-identical, checksummed', async (index) => {
    const body = await addPrinter(index);
    const file = body.files.find((f: { filename: string }) => /\.3mf$/i.test(f.filename))!;
    const ws = await connectWs(h.base);
    await control(farm.printers[index].control_url, 'faults', { transfer_bytes_per_sec: 20_000 });
    const started = await h.post(`/api/v1/files/${file.id}/download`);
    expect(started.status).toBe(202);
    expect(started.body).toMatchObject({ id: file.id, status: 'downloading', download_id: expect.any(String), started_at: expect.any(String) });
    // A second request joins the running task.
    const again = await h.post(`/api/v1/files/${file.id}/download`);
    expect(again.body.download_id).toBe(started.body.download_id);
    const progress = await ws.next((f) => f.type === 'file_update' && f.data.file_id === file.id && Number(f.data.bytes_downloaded) > 0 && f.data.status === 'downloading');
    expect(progress.data).toMatchObject({ bytes_total: file.file_size, speed_mbps: expect.any(Number) });
    await until(async () => (await h.get(`/api/v1/files/${file.id}/download/status`)).body.status === 'completed', 'completed');
    const detail = (await h.get(`/api/v1/files/${file.id}`)).body;
    expect(detail).toMatchObject({ status: 'downloaded', checksum: sha(seed('.gcode.3mf', index)), download_attempts: 1, downloaded_at: expect.any(String) });
    // local_path is relative to the data dir: the server's absolute path is not shown.
    expect(detail.local_path).toMatch(/^files\/[^/]/);
    expect(fs.readFileSync(path.join(h.dataDir, detail.local_path)).equals(seed('.gcode.3mf', index))).toBe(true);
    const content = await fetch(`${h.base}/api/v1/files/${file.id}/content`);
    expect(Buffer.from(await content.arrayBuffer()).equals(seed('.gcode.3mf', index))).toBe(true);
    await ws.close();

    // Deleting the local copy leaves the printer's copy: the file is available again.
    const del = await h.del(`/api/v1/files/${file.id}`);
    expect(del.body).toMatchObject({ id: file.id, status: 'available', deleted_at: expect.any(String) });
    expect(fs.existsSync(path.join(h.dataDir, detail.local_path))).toBe(false);
    expect((await h.get(`/api/v1/files/${file.id}`)).body.status).toBe('available');
  });

  test('an interrupted transfer never leaves a file marked downloaded, and failure is reported', async () => {
    const body = await addPrinter(0);
    const file = body.files.find((f: { filename: string }) => /\.3mf$/i.test(f.filename))!;
    const ws = await connectWs(h.base);
    await control(farm.printers[0].control_url, 'faults', { transfer_bytes_per_sec: 20_000 });
    await h.post(`/api/v1/files/${file.id}/download`);
    await ws.next((f) => f.type === 'file_update' && Number(f.data.bytes_downloaded) > 0);
    await control(farm.printers[0].control_url, 'offline');
    const status = await until(async () => {
      const s = (await h.get(`/api/v1/files/${file.id}/download/status`)).body;
      return s.status === 'failed' ? s : null;
    }, 'failed', 20_000);
    expect(status.error).toEqual(expect.any(String));
    const detail = (await h.get(`/api/v1/files/${file.id}`)).body;
    expect(detail).toMatchObject({ status: 'error', local_path: null, download_attempts: 2 });
    const alert = await ws.next((f) => f.type === 'system_alert' && f.data.code === 'DOWNLOAD_FAILED');
    expect(alert.data.file_id).toBe(file.id);
    const dir = path.join(h.dataDir, 'files');
    const leftovers = fs.existsSync(dir) ? fs.readdirSync(dir, { recursive: true }).map(String).filter((n) => /\.part-|\.3mf$/i.test(n)) : [];
    expect(leftovers).toEqual([]);
    await ws.close();
  });

  test('the current print file is fetched on request; an idle printer is not_printing', async () => {
    await addPrinter(0);
    const { printer, control_url } = farm.printers[0];
    const idle = await h.post('/api/v1/files/download', { printer_id: printer.id });
    expect(idle.body).toMatchObject({ status: 'not_printing', file_id: null, has_thumbnail: false });
    await control(control_url, 'print', { file: 'Cube_PLA.gcode.3mf' });
    await until(async () => (await h.get(`/api/v1/printers/${printer.id}`)).body.status === 'printing', 'printing');
    const fetched = await h.post('/api/v1/files/download', { printer_id: printer.id });
    expect(fetched.body).toMatchObject({ status: 'success', filename: 'Cube_PLA.gcode.3mf', file_id: expect.any(String) });
    const again = await h.post('/api/v1/files/download', { printer_id: printer.id });
    expect(again.body.status).toMatch(/^exists_/);
    const missing = await h.post('/api/v1/files/download', { printer_id: printer.id, file_path: '/nothing-here.3mf' });
    expect(missing.body.status).toBe('no_file');
    await control(control_url, 'cancel');
  });

  test('uploads are stored as local files; hostile names stay inside the data dir', async () => {
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(seed('.stl'))]), '../../../etc/evil model.stl');
    const res = await fetch(`${h.base}/api/v1/files/upload`, { method: 'POST', body: form });
    expect(res.status).toBe(201);
    const body = (await res.json()) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
    expect(body).toMatchObject({ status: 'local', file_type: '.stl', printer_id: null, upload_url: '/api/v1/files/upload', checksum: sha(seed('.stl')) });
    expect(body.local_path).toMatch(/^files\/local\/[0-9a-f]{20}-evil model\.stl$/);
    expect(path.resolve(h.dataDir, body.local_path).startsWith(path.join(h.dataDir, 'files') + path.sep)).toBe(true);
    expect(fs.readFileSync(path.join(h.dataDir, body.local_path)).equals(seed('.stl'))).toBe(true);

    const bad = new FormData();
    bad.append('file', new Blob(['MZ']), 'tool.exe');
    const refused = await fetch(`${h.base}/api/v1/files/upload`, { method: 'POST', body: bad });
    expect(refused.status).toBe(422);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('VALIDATION_ERROR');
    const notMultipart = await h.post('/api/v1/files/upload', { file: 'x' });
    expect(notMultipart.status).toBe(422);

    // Cleanup: candidates include the upload (age 0 with older_than_days=0); refused without confirm.
    const candidates = (await h.get('/api/v1/files/cleanup/candidates?older_than_days=0')).body;
    expect(candidates.cleanup_candidates.map((c: { id: string }) => c.id)).toContain(body.id);
    expect((await h.post('/api/v1/files/cleanup', { file_ids: [body.id], confirm: false })).status).toBe(422);
    const cleaned = await h.post('/api/v1/files/cleanup', { file_ids: [body.id, 'nope'], confirm: true });
    expect(cleaned.body).toMatchObject({ cleaned_files: 1, failed_cleanups: [{ file_id: 'nope', error: expect.any(String) }] });
    expect(fs.existsSync(path.join(h.dataDir, body.local_path))).toBe(false);
    expect((await h.get(`/api/v1/files/${body.id}`)).status).toBe(404);
  });

  test('unknown files are 404 FILE_NOT_FOUND; a printer that is offline cannot download (502)', async () => {
    const body = await addPrinter(1);
    expect((await h.get('/api/v1/files/nope')).body.error.code).toBe('FILE_NOT_FOUND');
    await control(farm.printers[1].control_url, 'offline');
    await until(async () => (await h.get(`/api/v1/printers/${farm.printers[1].printer.id}`)).body.status === 'offline', 'offline');
    const res = await h.post(`/api/v1/files/${body.files[0].id}/download`);
    expect(res.status).toBe(502);
    expect(res.body.error.code).toBe('PRINTER_OFFLINE');
    expect((await h.get(`/api/v1/files/${body.files[0].id}`)).body.status).toBe('available');
  });
});
