/**
 * The PrusaLink camera end to end: a simulated Core One with a camera over
 * real HTTP Digest (/api/v1/cameras, /api/v1/cameras/snap), one without, and
 * PNG pictures turned into JPEG.
 */
import jpeg from 'jpeg-js';
import { PNG } from 'pngjs';
import { toJpeg } from '../../service/cameras/polling';
import { PrusaSimulator } from '../../service/simulators/prusa';
import { addConnected, cameraService, until } from '../helpers/cameras';
import { expectError, type Harness } from '../helpers/service';

jest.setTimeout(30_000);

const opened: Array<{ close(): Promise<unknown> }> = [];
afterEach(async () => {
  for (const o of opened.splice(0).reverse()) await o.close();
});

async function start(camera: boolean): Promise<{ sim: PrusaSimulator; h: Harness; id: string }> {
  const sim = await PrusaSimulator.start({ password: 'Sup3r-Secr3t', model: 'Core One', camera });
  opened.push(sim);
  const h = await cameraService();
  opened.push(h);
  const id = await addConnected(h, sim.printerConfig());
  return { sim, h, id };
}

test('a snapshot of a PrusaLink printer with a camera is a decodable JPEG of the camera size, fetched with the printer\'s Digest auth', async () => {
  const { sim, h, id } = await start(true);
  await until(async () => (await h.get(`/api/v1/printers/${id}`)).body.capabilities.has_camera === true, 'the driver knows the camera');
  const res = await fetch(`${h.base}/api/v1/printers/${id}/camera/snapshot`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('image/jpeg');
  const picture = jpeg.decode(Buffer.from(await res.arrayBuffer()), { useTArray: true });
  expect([picture.width, picture.height]).toEqual([320, 180]);
  expect(sim.camera.stats.snaps).toBeGreaterThanOrEqual(1);
  expect(sim.stats.digest_ok).toBeGreaterThan(0);
  expect((await h.get(`/api/v1/printers/${id}`)).body.camera).toEqual({ available: true, source: 'prusalink', fps: 1 });
});

test('a stalled PrusaLink camera gives 502 CAMERA_ERROR, a disconnected one 502 too', async () => {
  const { sim, h, id } = await start(true);
  sim.setFaults({ camera_stalled: true });
  expect(expectError(await h.get(`/api/v1/printers/${id}/camera/snapshot`), 502, 'CAMERA_ERROR').message).toMatch(/no frame within 2 s|no answer/);
  sim.setFaults({ camera_stalled: false });
  sim.camera.enabled = false;
  expectError(await h.get(`/api/v1/printers/${id}/camera/snapshot`), 502, 'CAMERA_ERROR');
});

test('a PrusaLink printer without a camera answers 409 CAMERA_UNAVAILABLE', async () => {
  const { h, id } = await start(false);
  await until(async () => (await h.get(`/api/v1/printers/${id}`)).body.capabilities.has_camera === false, 'the driver knows there is no camera');
  const err = expectError(await h.get(`/api/v1/printers/${id}/camera/snapshot`), 409, 'CAMERA_UNAVAILABLE');
  expect(err.message).toMatch(/no camera/);
  expect((await h.get(`/api/v1/printers/${id}`)).body.camera).toEqual({ available: false, source: 'prusalink', fps: 0 });
});

test('PNG pictures become JPEGs of the same size; anything else is refused', () => {
  const png = new PNG({ width: 40, height: 30 });
  png.data.fill(200);
  const out = jpeg.decode(toJpeg(PNG.sync.write(png)), { useTArray: true });
  expect([out.width, out.height]).toEqual([40, 30]);
  expect(() => toJpeg(Buffer.from('<html>not a picture</html>'))).toThrow(/neither JPEG nor PNG/);
});
