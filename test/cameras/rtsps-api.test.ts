/**
 * The RTSPS camera through the whole service: createService with the real
 * Bambu driver and a simulated X1C over real MQTT/TLS, whose printerConfig()
 * carries the port of its RTSPS camera. GET /camera/snapshot makes the
 * service's ffmpeg read the simulator's H.264 into a JPEG; without ffmpeg
 * the same route answers 501 CAMERA_UNSUPPORTED naming the package.
 * The streaming part is skipped with a message where ffmpeg is missing
 * (except with CI=true, see test/helpers/ffmpeg.ts).
 */
import jpeg from 'jpeg-js';
import { resetFfmpegStatus } from '../../service/cameras/ffmpeg';
import { BambuSimulator, type SimTlsCredentials } from '../../service/simulators/bambu';
import { SimRtspsCamera } from '../../service/simulators/bambu/rtsps-camera';
import { addConnected, cameraService } from '../helpers/cameras';
import { childProcesses, eventually, ffmpegUnavailable } from '../helpers/ffmpeg';
import { expectError, type Harness } from '../helpers/service';

jest.setTimeout(40_000);

const missing = ffmpegUnavailable();
if (missing) console.warn(`RTSPS camera API test skipped: ${missing}`);
const testFfmpeg = missing ? test.skip : test;

const opened: Array<{ close(): Promise<unknown> }> = [];
afterEach(async () => {
  for (const o of opened.splice(0).reverse()) await o.close();
});

let tls: SimTlsCredentials;
beforeAll(async () => {
  tls = await BambuSimulator.tlsCredentials();
});

async function x1c(name: string): Promise<BambuSimulator> {
  const s = await BambuSimulator.start({ model: 'X1C', name, ftps: false, tls });
  opened.push(s);
  return s;
}

/** A service whose camera has time for TLS, RTSP, probing and the encoder's first picture. */
async function service(): Promise<Harness> {
  const h = await cameraService({ CAMERA_TIMEOUT_S: '20' });
  opened.push(h);
  return h;
}

/** The service's ffmpeg children that read a camera (the simulator's encoders write H.264, not image2pipe). */
const readers = () => childProcesses().filter((c) => c.cmdline.includes('image2pipe'));

testFfmpeg('a snapshot of a simulated X1C over RTSPS is a decodable JPEG of the stream size; the printer shows an rtsp camera', async () => {
  const sim = await x1c('Snap X1C');
  expect(sim.camera).toBeInstanceOf(SimRtspsCamera);
  const config = sim.printerConfig();
  expect(config.camera_port).toBe(sim.camera!.port);
  const h = await service();
  const id = await addConnected(h, config);

  const res = await fetch(`${h.base}/api/v1/printers/${id}/camera/snapshot`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('image/jpeg');
  const picture = jpeg.decode(Buffer.from(await res.arrayBuffer()), { useTArray: true });
  expect([picture.width, picture.height]).toEqual([640, 360]);

  const detail = (await h.get(`/api/v1/printers/${id}`)).body;
  expect(detail.camera).toEqual({ available: true, source: 'rtsp', fps: 5 });
  expect(detail.camera_port).toBe(config.camera_port);
  const stats = sim.stateView().stats as Record<string, number>;
  expect(stats.camera_plays).toBeGreaterThanOrEqual(1);
  expect(stats.camera_auth_failures).toBe(0);
  // The access code travels in the RTSPS URL: it must not reach the log.
  expect(JSON.stringify(h.logs)).not.toContain(sim.accessCode);

  // Closing the service ends its ffmpeg.
  await h.close();
  expect(await eventually(() => readers().length === 0)).toBe(true);
});

test('without ffmpeg the snapshot of an X1C answers 501 CAMERA_UNSUPPORTED naming the package', async () => {
  const sim = await x1c('No-ffmpeg X1C');
  const h = await service();
  const id = await addConnected(h, sim.printerConfig());
  // The probe is cached for the process: point FFMPEG_PATH at nothing and forget the cache, then restore both.
  const saved = process.env.FFMPEG_PATH;
  process.env.FFMPEG_PATH = '/nonexistent/printfarm-test/ffmpeg';
  resetFfmpegStatus();
  try {
    const res = await h.get(`/api/v1/printers/${id}/camera/snapshot`);
    expectError(res, 501, 'CAMERA_UNSUPPORTED');
    expect(res.body.error.message).toContain('apt-get install ffmpeg');
    expect(res.body.error.message).not.toContain(sim.accessCode);
    expect(readers()).toEqual([]);
  } finally {
    if (saved === undefined) delete process.env.FFMPEG_PATH;
    else process.env.FFMPEG_PATH = saved;
    resetFfmpegStatus();
  }
});
