/**
 * Files on a Prusa printer through the PrusaLink driver, against the
 * PrusaLink simulator over real HTTP with Digest on 127.0.0.1: listing every
 * storage and folder, byte-identical downloads with progress, throttled
 * transfers that outlast the request timeout, aborted ones that leave no file.
 */
import http from 'node:http';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PrusaSimulator } from '../../service/simulators/prusa';
import { seedFiles } from '../../service/simulators/seed-files';
import { BGCODE, closeAfterEach, driverFor, ok, rejection, simulator } from '../helpers/prusa-e2e';

closeAfterEach();

let tmp: string;

beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'printfarm-prusa-'));
});

afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

/** Raw upload with X-Api-Key (what PrusaSlicer does), to put a file in a folder. */
function upload(sim: PrusaSimulator, path: string, data: Buffer): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${sim.url}/api/v1/files/usb/${path.split('/').map(encodeURIComponent).join('/')}`,
      { method: 'PUT', agent: false, headers: { 'x-api-key': sim.password, 'content-type': 'application/octet-stream', 'content-length': data.length } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

describe('PrusaLink driver against the simulated printer', () => {
  test('listFiles walks storages and folders; a download is byte-identical, with progress', async () => {
    const sim = await simulator();
    const { driver } = driverFor(sim);
    await driver.connect();
    const nested = Buffer.from('; nested part\nG28\nG1 X10 Y10\n');
    expect(await upload(sim, 'models/Nested Part.gcode', nested)).toBe(201);

    const files = await driver.listFiles();
    const seeds = seedFiles({ prusa: sim.model }); // sliced for the simulated model
    expect(files.map((f) => f.name).sort()).toEqual([...seeds.map((s) => s.name), 'Nested Part.gcode'].sort());
    for (const seed of seeds) {
      const f = files.find((x) => x.name === seed.name)!;
      expect(f).toMatchObject({ size: seed.data.length, storage: 'usb' });
      expect(f.path).toMatch(/^\/usb\/[A-Z0-9_~-]{1,8}\.[A-Z0-9]{1,3}$/); // Buddy's 8.3 short names
      expect(Date.parse(f.modified!)).toBeGreaterThan(0);
    }
    const nestedFile = files.find((f) => f.name === 'Nested Part.gcode')!;
    expect(nestedFile.path).toBe('/usb/MODELS~1/NESTED~1.GCO');

    const bgcode = files.find((f) => f.name === BGCODE)!;
    const dest = join(tmp, 'download.bgcode');
    const progress: Array<[number, number]> = [];
    await driver.download(bgcode.path, dest, (bytes, total) => progress.push([bytes, total]));
    expect((await readFile(dest)).equals(seeds.find((s) => s.name === BGCODE)!.data)).toBe(true);
    expect(progress.at(-1)).toEqual([bgcode.size, bgcode.size]);

    // A path never listed is looked up through its metadata.
    const fresh = driverFor(sim).driver;
    await fresh.connect();
    const dest2 = join(tmp, 'nested.gcode');
    await fresh.download(nestedFile.path, dest2);
    expect((await readFile(dest2)).equals(nested)).toBe(true);
    expect((await rejection(fresh.download('/usb/NOPE.BGC', join(tmp, 'nope')))).code).toBe('NOT_FOUND');
  });

  test('a throttled transfer finishes even when it outlasts the request timeout; an aborted one leaves no file', async () => {
    const sim = await simulator();
    const { driver } = driverFor(sim, { command_timeout_ms: 800 });
    await driver.connect();
    const seed = seedFiles({ prusa: sim.model }).find((s) => s.name === BGCODE)!;
    await ok(sim, '/faults', { transfer_bytes_per_sec: 20_000 }); // ~1.5 s for 30 kB
    const dest = join(tmp, 'slow.bgcode');
    const progress: number[] = [];
    const t0 = Date.now();
    await driver.download('/usb/CUBE_0~1.BGC', dest, (bytes) => progress.push(bytes));
    const elapsed = Date.now() - t0;
    expect(elapsed).toBeGreaterThan(1000);
    expect((await readFile(dest)).equals(seed.data)).toBe(true);
    expect(progress.length).toBeGreaterThan(10);
    expect(progress).toEqual([...progress].sort((a, b) => a - b));

    const abort = new AbortController();
    const aborted = join(tmp, 'aborted.bgcode');
    const pending = driver.download('/usb/CUBE_0~1.BGC', aborted, (bytes) => {
      if (bytes > 5000) abort.abort();
    }, abort.signal);
    await expect(pending).rejects.toThrow();
    await expect(stat(aborted)).rejects.toMatchObject({ code: 'ENOENT' });
  });
});
