/**
 * A Klipper printer's camera is the webcam Moonraker lists (server.webcams.list), as a Bambu or PrusaLink
 * printer's camera is its own: the service shows it in the printer detail and answers snapshots from it without
 * a camera_url; a webcam given as a path on the web frontend (crowsnest's default) is read on the printer's
 * address; an operator's camera_url still wins. Over the simulated Moonraker's real JSON-RPC WebSocket and HTTP.
 */
import { until } from '../helpers/farm';
import { closeAfterEach, driverFor, simulator } from '../helpers/klipper-e2e';
import { startService, type Harness } from '../helpers/service';
import { addPrinters, klipperSim, queueServiceOptions, type SimPrinter } from './queue-helpers';

describe("a Klipper printer's webcam", () => {
  closeAfterEach();

  test('a webcam path on the web frontend is read on the printer address; a full URL is kept', async () => {
    const relative = await simulator({ apiKey: undefined, camera: true });
    const a = driverFor(relative, { access_code: null });
    await a.driver.connect();
    // mjpegstreamer: its stream is MJPEG, so the stream is the camera.
    expect(a.driver.state?.camera_url).toBe('http://127.0.0.1/webcam/?action=stream');
    const served = await simulator({ cameraServed: true });
    const b = driverFor(served);
    await b.driver.connect();
    // An adaptive (snapshot-polling) webcam: its snapshot.
    expect(b.driver.state?.camera_url).toBe(`${served.url}/webcam/?action=snapshot`);
    const none = await simulator();
    const c = driverFor(none);
    await c.driver.connect();
    expect(c.driver.state?.camera_url).toBeUndefined();
  });

  describe('through the service', () => {
    let printer: SimPrinter;
    let h: Harness;
    afterEach(async () => {
      await h?.close();
      await printer?.close();
    });

    test('shows the webcam in the detail and answers a snapshot from it; a camera_url wins', async () => {
      printer = await klipperSim('voron-cam', 'Voron Cam', 'Voron 2.4 350', 20, { cameraServed: true });
      h = await startService(queueServiceOptions);
      await addPrinters(h, [printer]);
      const detail = await until(async () => {
        const d = (await h.get(`/api/v1/printers/${printer.id}`)).body;
        return d.camera?.available && d;
      }, 'camera available', 10_000);
      expect(detail.camera).toEqual({ available: true, source: 'snapshot', fps: 1 });
      expect(detail.capabilities.has_camera).toBe(true);
      const res = await fetch(`${h.base}/api/v1/printers/${printer.id}/camera/snapshot`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('image/jpeg');
      const jpeg = Buffer.from(await res.arrayBuffer());
      expect(jpeg.subarray(0, 2)).toEqual(Buffer.from([0xff, 0xd8]));
      const sim = (await (await fetch(`${printer.control}/state`)).json()) as { stats: { webcam_snapshots: number } };
      expect(sim.stats.webcam_snapshots).toBeGreaterThanOrEqual(1);

      // The operator's camera_url replaces it (an unreachable one here: the printer's webcam is no longer asked).
      expect((await h.put(`/api/v1/printers/${printer.id}`, { camera_url: 'http://127.0.0.1:9/cam/?action=stream' })).status).toBe(200);
      const replaced = await until(async () => {
        const d = (await h.get(`/api/v1/printers/${printer.id}`)).body;
        return d.camera?.source === 'mjpeg' && d;
      }, 'camera_url camera', 10_000);
      expect(replaced.camera.source).toBe('mjpeg');
    }, 60_000);
  });
});
