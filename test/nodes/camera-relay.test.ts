/**
 * The printer node's `stream` relay (nodes/printer-camera.ts), which the
 * dashboard's camera routes use, between a real HTTP server and a real
 * service with a simulated P1S camera (port-6000 TLS protocol): the browser
 * gets the MJPEG parts; closing the browser's connection ends the relay's
 * upstream stream at once (the service's viewer count goes back to 0, so a
 * wall screen that reloads never uses up camera_max_viewers); the service's
 * refusals (429 beyond camera_max_viewers, 404 for an unknown printer) reach
 * the browser with their status and error body.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { PrintfarmClient } from '../../service/client';
import { BambuSimulator } from '../../service/simulators/bambu';
import { relayCameraStream } from '../../nodes/printer-camera';
import { addConnected, cameraService, openStream, until } from '../helpers/cameras';

jest.setTimeout(60_000);

test('the relay streams the camera, lets go of it when the browser leaves, and passes the service\'s refusals on', async () => {
  const p1s = await BambuSimulator.start({ model: 'P1S', ftps: false });
  const h = await cameraService({ CAMERA_MAX_VIEWERS: '1' });
  const relay = http.createServer((req, res) => {
    const id = decodeURIComponent(req.url!.slice(1));
    void relayCameraStream(new PrintfarmClient(h.base), id, res);
  });
  try {
    const id = await addConnected(h, p1s.printerConfig());
    await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(relay.address() as AddressInfo).port}`;
    const hub = h.service.context.cameras;

    const first = await openStream(base, `/${id}`);
    expect(first.status).toBe(200);
    expect(first.headers['content-type']).toMatch(/^multipart\/x-mixed-replace; boundary=printfarm-frame/);
    expect(first.headers['cache-control']).toBe('no-store');
    await until(() => first.parts.length >= 2, 'two frames through the relay');
    expect(first.parts[0].subarray(0, 2).toString('hex')).toBe('ffd8');
    expect(hub.viewerCount).toBe(1);

    // camera_max_viewers = 1: a second viewer gets the service's 429 and its error body.
    const refused = await openStream(base, `/${id}`);
    expect(refused.status).toBe(429);
    expect(JSON.parse(refused.body).error.code).toBe('CAMERA_VIEWERS_EXCEEDED');

    // The browser leaves: the relay's upstream viewer ends, and the next viewer is let in.
    first.close();
    await until(() => hub.viewerCount === 0, 'the upstream viewer gone');
    const again = await openStream(base, `/${id}`);
    expect(again.status).toBe(200);
    again.close();

    const unknown = await openStream(base, '/no-such-printer');
    expect(unknown.status).toBe(404);
    expect(JSON.parse(unknown.body).error.code).toBe('PRINTER_NOT_FOUND');
  } finally {
    relay.closeAllConnections();
    await new Promise<void>((resolve) => relay.close(() => resolve()));
    await h.close();
    await p1s.close();
  }
});
