/**
 * One printer's channel in the hub, driven by a scripted camera source (the
 * frames' times are chosen by the test) and read by a real HTTP client: the
 * frame-rate cap, the fresh-frame rule of snapshots, and the stall watchdog.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { CameraChannel } from '../../service/cameras/channel';
import { CameraError, type CameraFrame, type CameraSource } from '../../service/cameras/source';
import { MjpegViewer } from '../../service/cameras/viewer';
import { MjpegParser } from '../../service/cameras/mjpeg-parser';
import { until } from '../helpers/farm';

/** A camera whose frames the test sends, with the times it chooses. */
class ScriptedSource implements CameraSource {
  readonly kind = 'mjpeg' as const;
  started = 0;
  closed = 0;
  private frameListeners: Array<(f: CameraFrame) => void> = [];
  private errorListeners: Array<(e: CameraError) => void> = [];
  start(): void {
    this.started++;
  }
  onFrame(listener: (f: CameraFrame) => void) {
    this.frameListeners.push(listener);
    return () => undefined;
  }
  onError(listener: (e: CameraError) => void) {
    this.errorListeners.push(listener);
    return () => undefined;
  }
  send(frame: CameraFrame): void {
    for (const l of this.frameListeners) l(frame);
  }
  async close(): Promise<void> {
    this.closed++;
  }
}

const JPEG = (n: number) => Buffer.from([0xff, 0xd8, n, 0xff, 0xd9]);

let server: http.Server;
let channel: CameraChannel;
let sources: ScriptedSource[];
let availability: boolean[];

beforeEach(async () => {
  sources = [];
  availability = [];
  channel = new CameraChannel(
    { kind: 'mjpeg', key: 'k', create: () => sources[sources.push(new ScriptedSource()) - 1] },
    { timeoutMs: () => 500, idleMs: () => 50, maxFps: () => 5 },
    { availability: (a) => availability.push(a), opened: () => undefined },
  );
  server = http.createServer((_req, res) => {
    const viewer = new MjpegViewer(res, 5000, (v) => channel.removeViewer(v));
    viewer.open();
    channel.addViewer(viewer);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
});

afterEach(async () => {
  await channel.close();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

function watch(): Promise<{ parts: Buffer[]; close(): void }> {
  return new Promise((resolve) => {
    const req = http.get(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`, { agent: false }, (res) => {
      const out = { parts: [] as Buffer[], close: () => req.destroy() };
      const parser = new MjpegParser('printfarm-frame', 1024, (p) => out.parts.push(p));
      res.on('data', (c: Buffer) => parser.push(c));
      resolve(out);
    });
    req.on('error', () => undefined);
  });
}

test('viewers get at most camera_max_fps frames a second, by the frames\' own times; snapshots take the latest', async () => {
  const viewer = await watch();
  await until(() => sources.length === 1, 'the upstream opened for the viewer');
  const t0 = Date.now();
  // Ten frames 100 ms apart (10 fps) under a 5 fps cap: every other one goes out.
  for (let i = 0; i < 10; i++) sources[0].send({ jpeg: JPEG(i), at: t0 + i * 100 });
  await until(() => viewer.parts.length === 5, 'five parts');
  expect(viewer.parts.map((p) => p[2])).toEqual([0, 2, 4, 6, 8]);
  // A snapshot gets the latest frame even when the viewers did not (fresh: at most 2 s old).
  sources[0].send({ jpeg: JPEG(42), at: Date.now() });
  expect((await channel.frame(2000)).jpeg[2]).toBe(42);
  expect(sources.length).toBe(1);
  expect(availability).toEqual([true]);
  viewer.close();
});

test('a snapshot with nothing fresh opens the upstream and waits; a silent upstream fails with TIMEOUT and is closed', async () => {
  const waiting = channel.frame(2000);
  expect(sources.length).toBe(1);
  sources[0].send({ jpeg: JPEG(7), at: Date.now() - 1000 });
  expect((await waiting).jpeg[2]).toBe(7);
  // A frame older than the snapshot allows is not used: the next snapshot waits for a new one, which never comes.
  const stale = channel.frame(500);
  await expect(stale).rejects.toMatchObject({ code: 'TIMEOUT' });
  await until(() => sources[0].closed === 1, 'the silent upstream closed');
  expect(availability).toEqual([true, false]);
  expect(channel.failure?.code).toBe('TIMEOUT');
});

test('a camera that cannot be opened at all (an RTSPS camera without ffmpeg) fails its snapshot at once', async () => {
  const failing = new CameraChannel(
    { kind: 'rtsp', key: 'r', create: () => { throw new CameraError('UNSUPPORTED', 'no ffmpeg'); } },
    { timeoutMs: () => 60_000, idleMs: () => 50, maxFps: () => 5 },
    { availability: (a) => availability.push(a), opened: () => undefined },
  );
  await expect(failing.frame(2000)).rejects.toMatchObject({ code: 'UNSUPPORTED', message: 'no ffmpeg' });
  expect(failing.failure?.code).toBe('UNSUPPORTED');
  expect(availability).toEqual([false]);
  await failing.close();
});
