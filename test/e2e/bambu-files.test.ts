/**
 * Files on a Bambu printer, against the Bambu simulator's implicit FTPS on
 * 127.0.0.1: listing and byte-identical downloads one connection at a time,
 * vsftpd's TLS session reuse rule, the FTP commands clients use, throttled,
 * aborted and cut-off transfers.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import tls from 'node:tls';
import { Client } from 'basic-ftp';
import { cleanups, closeAfterEach, control, expectDriverError, simStats, startDriver, startSim } from '../helpers/bambu-e2e';

closeAfterEach();

describe('Bambu printer files', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'printfarm-bambu-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
  });

  const md5 = (b: Buffer) => createHash('md5').update(b).digest('hex');

  it('lists the printer folders and downloads files byte-identical, one FTP connection at a time', async () => {
    const sim = await startSim();
    const { driver } = startDriver(sim);

    const files = await driver.listFiles();
    const byPath = new Map(files.map((f) => [f.path, f]));
    expect([...byPath.keys()].sort()).toEqual(sim.stateView().files);
    expect(byPath.get('/Cube_PLA.gcode.3mf')).toEqual({
      path: '/Cube_PLA.gcode.3mf',
      name: 'Cube_PLA.gcode.3mf',
      size: sim.storage.get('/Cube_PLA.gcode.3mf')!.data.length,
      modified: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:00\.000Z$/),
      storage: '/',
    });
    expect(byPath.get('/cache/cube_0.2mm_PLA_MK4S_12m.gcode')?.storage).toBe('cache');
    expect(byPath.get('/model/cube_20mm.stl')?.storage).toBe('model');
    expect(byPath.get('/timelapse/video_2026-11-01_10-00-00.avi')?.storage).toBe('timelapse');

    const wanted = ['/Cube_PLA.gcode.3mf', '/cache/cube_0.2mm_PLA_MK4S_12m.gcode', '/model/cube_0.2mm_PLA_MK4S_12m.bgcode', '/model/cube_20mm.stl'];
    const sessionsBefore = simStats(sim).ftp_sessions;
    // Asked all at once; the driver queues them on one connection at a time.
    await Promise.all([...wanted.map((p, i) => driver.download(p, path.join(dir, `f${i}`))), driver.listFiles()]);
    for (const [i, p] of wanted.entries()) expect(md5(await readFile(path.join(dir, `f${i}`)))).toBe(md5(sim.storage.get(p)!.data));
    expect(simStats(sim).ftp_sessions - sessionsBefore).toBe(wanted.length + 1);
    expect(simStats(sim).ftp_max_concurrent_sessions).toBe(1);
    expect(simStats(sim).ftp_refused_data_connections).toBe(0);

    await expectDriverError(driver.download('/cache/missing.3mf', path.join(dir, 'missing')), 'NOT_FOUND');
  });

  it('refuses (522) a data connection that does not resume the control TLS session, like vsftpd', async () => {
    const sim = await startSim();
    const control = tls.connect({ host: '127.0.0.1', port: sim.ftpsPort, rejectUnauthorized: false });
    cleanups.push(async () => control.destroy());
    let session: Buffer | undefined;
    control.on('session', (s: Buffer) => (session = s));
    let buffer = '';
    const waiting: Array<(line: string) => void> = [];
    control.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      let at: number;
      while ((at = buffer.indexOf('\r\n')) >= 0) {
        const line = buffer.slice(0, at);
        buffer = buffer.slice(at + 2);
        if (/^\d{3} /.test(line)) waiting.shift()?.(line);
      }
    });
    const reply = () =>
      new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no FTP reply')), 3000);
        waiting.push((line) => {
          clearTimeout(timer);
          resolve(line);
        });
      });
    const send = (line: string) => {
      const r = reply();
      control.write(`${line}\r\n`);
      return r;
    };
    const dataConnection = async (resume: boolean, mode: 'EPSV' | 'PASV') => {
      const answer = await send(mode);
      const pasv = answer.match(/\((\d+),(\d+),(\d+),(\d+),(\d+),(\d+)\)/);
      const port = mode === 'EPSV' ? Number(answer.match(/\|\|\|(\d+)\|/)![1]) : Number(pasv![5]) * 256 + Number(pasv![6]);
      const data = tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false, ...(resume ? { session } : {}) });
      cleanups.push(async () => data.destroy());
      const chunks: Buffer[] = [];
      data.on('data', (c: Buffer) => chunks.push(c));
      data.on('error', () => undefined);
      await new Promise((resolve) => data.once('secureConnect', resolve));
      const closed = new Promise((resolve) => data.once('close', resolve));
      return { data, closed, text: () => Buffer.concat(chunks).toString() };
    };

    expect(await reply()).toMatch(/^220 /);
    expect(await send('USER bblp')).toMatch(/^331 /);
    expect(await send(`PASS ${sim.accessCode}`)).toMatch(/^230 /);
    expect(await send('PBSZ 0')).toMatch(/^200 /);
    expect(await send('PROT P')).toMatch(/^200 /);
    expect(session).toBeDefined();

    // A fresh TLS session on the data connection: refused.
    const fresh = await dataConnection(false, 'EPSV');
    expect(fresh.data.isSessionReused()).toBe(false);
    expect(await send('LIST /')).toBe('522 SSL connection failed: session reuse required');
    await fresh.closed;
    expect(fresh.text()).toBe('');
    expect(simStats(sim).ftp_refused_data_connections).toBe(1);

    // The control connection's session resumed: served.
    const resumed = await dataConnection(true, 'PASV');
    expect(resumed.data.isSessionReused()).toBe(true);
    const listing = send('LIST /');
    expect(await listing).toMatch(/^150 /);
    expect(await reply()).toMatch(/^226 /);
    await resumed.closed;
    expect(resumed.text()).toMatch(/^-rw-r--r-- +1 1000 +1000 +\d+ \w{3} \d\d \d\d:\d\d Cube_PLA\.gcode\.3mf\r$/m);
    expect(await send('QUIT')).toMatch(/^221 /);
  });

  it('serves the FTP commands clients use: upload, size, date, folders, delete', async () => {
    const sim = await startSim();
    const client = new Client(5000);
    cleanups.push(async () => client.close());
    await client.access({ host: '127.0.0.1', port: sim.ftpsPort, user: 'bblp', password: sim.accessCode, secure: 'implicit', secureOptions: { rejectUnauthorized: false } });
    const body = Buffer.from('G28\nG1 X10 Y10\n');
    await client.uploadFrom(Readable.from([body]), '/cache/uploaded.gcode');
    expect(sim.storage.get('/cache/uploaded.gcode')?.data.equals(body)).toBe(true);
    expect(await client.size('/cache/uploaded.gcode')).toBe(body.length);
    expect(Math.abs((await client.lastMod('/cache/uploaded.gcode')).getTime() - Date.now())).toBeLessThan(5000);
    await client.cd('/cache');
    expect(await client.pwd()).toBe('/cache');
    expect((await client.list()).map((f) => f.name)).toContain('uploaded.gcode');
    await client.cdup();
    expect(await client.pwd()).toBe('/');
    await expect(client.cd('/sdcard')).rejects.toMatchObject({ code: 550 });
    await client.remove('/cache/uploaded.gcode');
    expect(sim.storage.get('/cache/uploaded.gcode')).toBeNull();
    expect(await client.list('/no-such-folder')).toEqual([]); // vsftpd: an empty listing, not an error
    await expect(client.access({ host: '127.0.0.1', port: sim.ftpsPort, user: 'bblp', password: 'wrong', secure: 'implicit', secureOptions: { rejectUnauthorized: false } })).rejects.toMatchObject({ code: 530 });
  });

  it('reports progress through a slow (throttled) download and can abort one', async () => {
    const sim = await startSim();
    const { driver } = startDriver(sim);
    const file = '/cache/cube_0.2mm_PLA_MK4S_12m.gcode';
    const size = sim.storage.get(file)!.data.length;
    await control(sim, '/faults', { transfer_bytes_per_sec: Math.ceil(size / 1.2) });

    const progress: Array<[number, number]> = [];
    const started = Date.now();
    await driver.download(file, path.join(dir, 'slow.gcode'), (bytes, total) => progress.push([bytes, total]));
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect(progress.length).toBeGreaterThanOrEqual(5);
    expect(progress.every(([, total]) => total === size)).toBe(true);
    expect(progress.map(([b]) => b)).toEqual([...progress.map(([b]) => b)].sort((a, b) => a - b));
    expect(progress[progress.length - 1][0]).toBe(size);
    expect(md5(await readFile(path.join(dir, 'slow.gcode')))).toBe(md5(sim.storage.get(file)!.data));

    const abort = new AbortController();
    const aborted = driver.download(file, path.join(dir, 'aborted.gcode'), () => abort.abort(), abort.signal);
    await expect(aborted).rejects.toMatchObject({ name: 'AbortError' });
    // The queue is free again afterwards.
    expect((await driver.listFiles()).length).toBeGreaterThan(0);
  });

  it('fails a download cut off by the printer going offline mid-transfer', async () => {
    const sim = await startSim();
    const { driver } = startDriver(sim);
    const file = '/cache/cube_0.2mm_PLA_MK4S_12m.gcode';
    await control(sim, '/faults', { transfer_bytes_per_sec: 10_000 });
    let offline: Promise<unknown> | null = null;
    const download = driver.download(file, path.join(dir, 'cut.gcode'), () => {
      offline ??= control(sim, '/offline');
    });
    await expectDriverError(download, 'OFFLINE');
    await offline;
    expect(sim.stateView().link).toBe('offline');
  });
});
