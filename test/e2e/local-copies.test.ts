/**
 * Every local copy of a printer file has a path of its own: two files of one name in different folders
 * keep their own bytes and checksums, and a printer whose id is `local` cannot write into the uploads.
 * Copies stored by earlier versions (files/<printer id>/<name>) move to the new layout at start; a copy
 * that several files shared stays with the one whose checksum matches. Real PrusaLink simulator.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { driverFactory } from '../../service/printers/drivers';
import { PrusaSimulator } from '../../service/simulators/prusa/simulator';
import { startService, type Harness } from '../helpers/service';
import { until } from '../helpers/farm';

const sha = (b: Buffer) => `sha256:${createHash('sha256').update(b).digest('hex')}`;
const BYTES_A = Buffer.from(';A\nG1 X1\n'.repeat(500));
const BYTES_B = Buffer.from(';B\nG1 Y2\n'.repeat(700));
const UPLOAD = Buffer.from(';uploaded\nG1 Z3\n'.repeat(300));

let sim: PrusaSimulator;
beforeAll(async () => {
  sim = await PrusaSimulator.start({
    id: 'local',
    name: 'Printer called local',
    files: [
      { name: 'A/same.gcode', data: BYTES_A },
      { name: 'B/same.gcode', data: BYTES_B },
    ],
  });
});
afterAll(() => sim.close());

const options = {
  driverFactory: driverFactory({ backoffBaseMs: 100, backoffMaxMs: 1000 }),
  fleet: { watchdogMs: 5000, commandTimeoutMs: 5000, pollMs: 200, connectTimeoutMs: 4000 },
  downloads: { attempts: 1, frameIntervalMs: 20 },
};

async function content(h: Harness, id: string): Promise<Buffer> {
  return Buffer.from(await (await fetch(`${h.base}/api/v1/files/${id}/content`)).arrayBuffer());
}

async function upload(h: Harness, name: string, data: Buffer) {
  const form = new FormData();
  form.append('file', new Blob([data]), name);
  const res = await fetch(`${h.base}/api/v1/files/upload`, { method: 'POST', body: form });
  expect(res.status).toBe(201);
  return ((await res.json()) as { id?: string; file_id?: string }) as Record<string, string>;
}

describe('local copies of printer files', () => {
  let h: Harness;
  beforeEach(async () => {
    h = await startService(options);
  });
  afterEach(() => h.close());

  const both = async () => {
    await h.post('/api/v1/printers', sim.printerConfig());
    const files = await until(async () => {
      const list = (await h.get('/api/v1/files?printer_id=local')).body.files as { id: string; printer_path: string }[];
      return list.length >= 2 ? list : null;
    }, 'the two files listed');
    const a = files.find((f) => f.printer_path.includes('/A/'))!;
    const b = files.find((f) => f.printer_path.includes('/B/'))!;
    return { a: a.id, b: b.id };
  };

  test('two files of one name in different folders keep their own bytes and checksums', async () => {
    const { a, b } = await both();
    for (const id of [a, b]) expect((await h.post(`/api/v1/files/${id}/download`)).status).toBe(202);
    for (const id of [a, b]) expect(await h.service.context.files.downloads.wait(id)).toMatchObject({ status: 'completed' });
    const [da, db] = [(await h.get(`/api/v1/files/${a}`)).body, (await h.get(`/api/v1/files/${b}`)).body];
    expect(da.local_path).not.toEqual(db.local_path);
    expect([da.checksum, db.checksum]).toEqual([sha(BYTES_A), sha(BYTES_B)]);
    expect((await content(h, a)).equals(BYTES_A)).toBe(true);
    expect((await content(h, b)).equals(BYTES_B)).toBe(true);
    // Deleting one copy leaves the other alone.
    expect((await h.del(`/api/v1/files/${a}`)).status).toBe(200);
    expect((await content(h, b)).equals(BYTES_B)).toBe(true);
  });

  test('a printer with the id "local" does not write into the uploads folder', async () => {
    const up = await upload(h, 'same.gcode', UPLOAD);
    const upId = up.id ?? up.file_id;
    const { a, b } = await both();
    for (const id of [a, b]) await h.post(`/api/v1/files/${id}/download`);
    for (const id of [a, b]) await h.service.context.files.downloads.wait(id);
    expect((await content(h, upId)).equals(UPLOAD)).toBe(true);
    const uploads = fs.readdirSync(path.join(h.dataDir, 'files', 'local'));
    expect(uploads).toEqual([expect.stringMatching(/same\.gcode$/)]);
  });

  test('copies stored by earlier versions move to the new layout; a shared copy stays with its true owner', async () => {
    const { a, b } = await both();
    // What an earlier version left: both rows pointing at files/local/same.gcode, holding B's bytes.
    const old = path.join(h.dataDir, 'files', 'local', 'same.gcode');
    fs.mkdirSync(path.dirname(old), { recursive: true });
    fs.writeFileSync(old, BYTES_B);
    const { files } = h.service.context.store;
    const at = new Date().toISOString();
    await files.update(a, { status: 'downloaded', local_path: old, checksum: sha(BYTES_A), downloaded_at: at });
    await files.update(b, { status: 'downloaded', local_path: old, checksum: sha(BYTES_B), downloaded_at: at });
    h = await h.restart(options);
    await until(() => h.logs.some((l) => l.msg === 'moved local copies of printer files to files/printers/<file id>/'), 'the move');
    const [da, db] = [(await h.get(`/api/v1/files/${a}`)).body, (await h.get(`/api/v1/files/${b}`)).body];
    expect(da).toMatchObject({ status: 'available', local_path: null });
    expect(db).toMatchObject({ status: 'downloaded', checksum: sha(BYTES_B) });
    expect(db.local_path).not.toEqual(old);
    expect(fs.existsSync(old)).toBe(false);
    expect((await content(h, b)).equals(BYTES_B)).toBe(true);
  });
});
