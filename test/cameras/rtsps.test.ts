/**
 * The RTSPS camera end to end over real TLS sockets: a simulated X1C serves
 * RTSP 1.0 with H.264 from a child ffmpeg, and createRtspSource reads it
 * with the system ffmpeg into JPEG frames. Skipped with a message where
 * ffmpeg is missing, except with CI=true (CI installs Debian's package),
 * where a missing ffmpeg fails. What needs no ffmpeg runs everywhere.
 */
import net from 'node:net';
import tls from 'node:tls';
import jpeg from 'jpeg-js';
import { probeFfmpeg } from '../../service/cameras/ffmpeg';
import { createRtspSource, type RtspSourceOptions } from '../../service/cameras/rtsp';
import type { CameraError, CameraFrame, CameraSource } from '../../service/cameras/source';
import { BambuSimulator } from '../../service/simulators/bambu';
import { selfSignedTls } from '../../service/simulators/bambu/options';
import { SimRtspsCamera } from '../../service/simulators/bambu/rtsps-camera';
import { childProcesses, eventually, ffmpegUnavailable } from '../helpers/ffmpeg';

jest.setTimeout(40_000);

const missing = ffmpegUnavailable();
if (missing) console.warn(`RTSPS camera tests skipped: ${missing}`);
const describeFfmpeg = missing ? describe.skip : describe;

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function source(options: RtspSourceOptions): CameraSource {
  const s = createRtspSource(options);
  cleanups.push(() => s.close());
  return s;
}

/** Starts the source; its first frame or first error (or nothing by the deadline). */
function firstEvent(s: CameraSource, ms = 30_000): Promise<{ frame?: CameraFrame; error?: CameraError; waitedMs: number }> {
  const t0 = Date.now();
  return new Promise((resolve) => {
    const done = (result: { frame?: CameraFrame; error?: CameraError }) => {
      clearTimeout(timer);
      offFrame();
      offError();
      resolve({ ...result, waitedMs: Date.now() - t0 });
    };
    const timer = setTimeout(() => done({}), ms);
    const offFrame = s.onFrame((frame) => done({ frame }));
    const offError = s.onError((error) => done({ error }));
    s.start();
  });
}

const readers = () => childProcesses().filter((c) => c.cmdline.includes('image2pipe'));
/** No lasting zombie: a child the simulator is ending this instant may show as Z until Node reaps it. */
const noZombies = () => eventually(() => !childProcesses().some((c) => c.state === 'Z'));

async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('without ffmpeg', () => {
  const none = probeFfmpeg({ PATH: '/nonexistent-dir' });

  test('a source fails with UNSUPPORTED naming the package, and starts nothing', async () => {
    const { error, frame } = await firstEvent(source({ url: 'rtsps://bblp:12345678@127.0.0.1:322/streaming/live/1', ffmpeg: none }));
    expect(frame).toBeUndefined();
    expect(error?.code).toBe('UNSUPPORTED');
    expect(error?.message).toContain('apt-get install ffmpeg');
    expect(error?.message).not.toContain('12345678');
    expect(readers()).toEqual([]);
  });

  test('the simulated camera stays off and says why', async () => {
    const camera = new SimRtspsCamera({ label: 'X1C', accessCode: '12345678', ...(await selfSignedTls('x')), ffmpeg: none });
    expect(await camera.start()).toBe(false);
    expect(camera.running).toBe(false);
    expect(camera.unavailableReason).toContain('apt-get install ffmpeg');
  });
});

describeFfmpeg('RTSPS camera of a simulated X1C', () => {
  let sim: BambuSimulator;
  beforeAll(async () => {
    sim = await BambuSimulator.start({ model: 'X1C', name: 'Camera X1C', control: false, ftps: false });
  });
  afterAll(async () => {
    await sim.close();
    // The simulator's encoder ends with it.
    expect(await eventually(() => childProcesses().length === 0)).toBe(true);
  });

  const stats = () => sim.stateView().stats as Record<string, number | boolean>;
  const idle = () => eventually(() => stats().camera_players === 0 && stats().camera_encoder_running === false);
  /** The X1C's one camera, which is the RTSPS one. */
  const rtsps = (): SimRtspsCamera => {
    if (!(sim.camera instanceof SimRtspsCamera)) throw new Error('the X1C simulator has no RTSPS camera');
    return sim.camera;
  };

  test('the simulator listens and reports its port; a source yields a decodable JPEG of the stream’s size', async () => {
    expect(rtsps().running).toBe(true);
    expect(sim.stateView()).toMatchObject({ camera_port: rtsps().port, camera_enabled: true, camera_protocol: 'rtsps', camera_unavailable: null });
    // What a service is given for this printer leads to its RTSPS camera.
    expect(sim.printerConfig().camera_port).toBe(rtsps().port);
    const before = stats().camera_connections as number;
    const s = source({ url: rtsps().url(), maxFps: 5, connectTimeoutMs: 20_000 });
    const { frame, error } = await firstEvent(s);
    expect(error).toBeUndefined();
    expect(frame!.at).toBeLessThanOrEqual(Date.now());
    const image = jpeg.decode(frame!.jpeg);
    expect([image.width, image.height]).toEqual([640, 360]);
    // One source, one RTSP connection, one viewer playing.
    expect(stats().camera_connections).toBe(before + 1);
    expect(stats().camera_players).toBe(1);
    await s.close();
    expect(readers()).toEqual([]);
    expect(await noZombies()).toBe(true);
    // The last viewer gone, the simulator stops encoding.
    expect(await idle()).toBe(true);
  });

  test('a stream wider than maxWidth is scaled down, its aspect kept', async () => {
    const { frame, error } = await firstEvent(source({ url: rtsps().url(), maxWidth: 320, connectTimeoutMs: 20_000 }));
    expect(error).toBeUndefined();
    const image = jpeg.decode(frame!.jpeg);
    expect([image.width, image.height]).toEqual([320, 180]);
  });

  test('a wrong access code is AUTH, at once and clearly, without the code in the message', async () => {
    const failuresBefore = stats().camera_auth_failures as number;
    const s = source({ url: rtsps().url('99999999'), connectTimeoutMs: 20_000 });
    const { frame, error, waitedMs } = await firstEvent(s);
    expect(frame).toBeUndefined();
    expect(error?.code).toBe('AUTH');
    expect(error?.message).toMatch(/refused the credentials.*access code/);
    expect(error?.message).not.toContain('99999999');
    // Before the source's own 20 s deadline: the 401 ends it, not a timeout.
    expect(waitedMs).toBeLessThan(20_000);
    expect(stats().camera_auth_failures).toBeGreaterThan(failuresBefore);
    expect(await eventually(() => readers().length === 0)).toBe(true);
  });

  test('three sources: three connections and one encoder; closing them leaves no ffmpeg child and stops the encoder', async () => {
    expect(await idle()).toBe(true);
    const connections = stats().camera_connections as number;
    const encoderStarts = rtsps().stats.encoder_starts;
    const sources = [0, 1, 2].map(() => source({ url: rtsps().url(), maxFps: 2, connectTimeoutMs: 20_000 }));
    const events = await Promise.all(sources.map((s) => firstEvent(s)));
    expect(events.map((e) => e.error?.message ?? (e.frame ? 'frame' : 'nothing'))).toEqual(['frame', 'frame', 'frame']);
    expect(stats().camera_connections).toBe(connections + 3);
    expect(stats().camera_players).toBe(3);
    expect(rtsps().stats.encoder_starts).toBe(encoderStarts + 1);
    expect(readers()).toHaveLength(3);
    await Promise.all(sources.map((s) => s.close()));
    expect(readers()).toEqual([]);
    expect(await noZombies()).toBe(true);
    expect(await idle()).toBe(true);
  });

  test('a stalled printer gives TIMEOUT within the source’s deadline, and the hung ffmpeg is ended', async () => {
    await sim.setLink('stalled');
    try {
      const s = source({ url: rtsps().url(), connectTimeoutMs: 1500 });
      const { error } = await firstEvent(s);
      expect(error?.code).toBe('TIMEOUT');
      expect(error?.message).toMatch(/no frame from the camera at rtsps:\/\/bblp:\*\*\*@127\.0\.0\.1:\d+\/streaming\/live\/1 within 1\.5 s/);
      expect(await eventually(() => readers().length === 0)).toBe(true);
    } finally {
      await sim.setLink('online');
    }
  });

  test('a camera whose frames stall gives TIMEOUT after its last frame; lifted, a new run streams again', async () => {
    const s = source({ url: rtsps().url(), connectTimeoutMs: 20_000, stallTimeoutMs: 1500 });
    const first = await firstEvent(s);
    expect(first.frame).toBeDefined();
    const errors: CameraError[] = [];
    s.onError((e) => errors.push(e));
    rtsps().stallFrames(true);
    try {
      expect(await eventually(() => errors.length > 0, 20_000)).toBe(true);
      expect(errors.map((e) => e.code)).toEqual(['TIMEOUT']);
      expect(errors[0].message).toMatch(/sent no frame for 1\.5 s/);
      expect(await eventually(() => readers().length === 0)).toBe(true);
    } finally {
      rtsps().stallFrames(false);
    }
    const again = await firstEvent(s);
    expect(again.frame).toBeDefined();
  });

  test('the camera switched off refuses (OFFLINE); switched on again it serves on the same port', async () => {
    const port = rtsps().port;
    await rtsps().setEnabled(false);
    expect(rtsps().isEnabled).toBe(false);
    expect(sim.stateView()).toMatchObject({ camera_port: port, camera_enabled: false });
    const off = await firstEvent(source({ url: rtsps().url(), connectTimeoutMs: 20_000 }));
    expect(off.error?.code).toBe('OFFLINE');
    expect(off.error?.message).toMatch(/refused the connection/);
    await rtsps().setEnabled(true);
    expect(rtsps().isEnabled).toBe(true);
    expect(rtsps().port).toBe(port);
    const on = await firstEvent(source({ url: rtsps().url(), connectTimeoutMs: 20_000 }));
    expect(on.error).toBeUndefined();
    expect(jpeg.decode(on.frame!.jpeg).width).toBe(640);
  });

  test('a peer that answers garbage is PROTOCOL, quickly, and leaves no child', async () => {
    const { key, cert } = await selfSignedTls('garbage');
    const server = tls.createServer({ key, cert }, (socket) => {
      socket.on('error', () => undefined);
      socket.once('data', () => socket.end('HTTP/1.1 418 I am a teapot\r\n\r\n\u0000\u00ff garbage'));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise((resolve) => server.close(resolve)));
    const { port } = server.address() as net.AddressInfo;
    const { error, frame } = await firstEvent(source({ url: `rtsps://bblp:secret-code@127.0.0.1:${port}/streaming/live/1`, connectTimeoutMs: 20_000 }));
    expect(frame).toBeUndefined();
    expect(error?.code).toBe('PROTOCOL');
    expect(error?.message).toMatch(/^ffmpeg reading the camera at rtsps:\/\/bblp:\*\*\*@127\.0\.0\.1:\d+\/streaming\/live\/1 exited with code \d+/);
    expect(error?.message).not.toContain('secret-code');
    expect(await eventually(() => readers().length === 0)).toBe(true);
  });

  test('nothing listening is OFFLINE', async () => {
    const { error } = await firstEvent(source({ url: `rtsps://bblp:1@127.0.0.1:${await closedPort()}/streaming/live/1`, connectTimeoutMs: 20_000 }));
    expect(error?.code).toBe('OFFLINE');
  });

  test('models with the JPEG-over-TLS camera have that camera, no RTSPS server', async () => {
    const p1s = await BambuSimulator.start({ model: 'P1S', control: false, ftps: false });
    cleanups.push(() => p1s.close());
    expect(p1s.camera).not.toBeNull();
    expect(p1s.camera).not.toBeInstanceOf(SimRtspsCamera);
    expect(p1s.stateView()).toMatchObject({ camera_protocol: 'jpeg_tls', camera_unavailable: null });
    expect(p1s.stateView().stats).not.toHaveProperty('camera_plays');
  });
});
