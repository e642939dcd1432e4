/**
 * The camera routes end to end: a service with the real Bambu driver and a
 * simulated P1S over real MQTT/TLS and the real port-6000 camera protocol.
 */
import jpeg from 'jpeg-js';
import { BambuSimulator, type BambuSimulatorOptions, type SimTlsCredentials } from '../../service/simulators/bambu';
import { addConnected, cameraService, openStream, until } from '../helpers/cameras';
import { expectError, type Harness } from '../helpers/service';
import { connectWs } from '../helpers/ws';
import { PrintfarmClient } from '../../service/client';

jest.setTimeout(30_000);

const opened: Array<{ close(): Promise<unknown> }> = [];
afterEach(async () => {
  for (const o of opened.splice(0).reverse()) await o.close();
});

// One key pair for every simulator: making a pair is the slow part of starting one.
let tls: SimTlsCredentials;
beforeAll(async () => {
  tls = await BambuSimulator.tlsCredentials();
});

async function sim(options: BambuSimulatorOptions = {}): Promise<BambuSimulator> {
  const s = await BambuSimulator.start({ model: 'P1S', ftps: false, tls, ...options });
  opened.push(s);
  return s;
}

async function service(env: Record<string, string> = {}): Promise<Harness> {
  const h = await cameraService(env);
  opened.push(h);
  return h;
}

const cameraStats = (s: BambuSimulator) => s.stateView().stats as Record<string, number>;

test('a snapshot of a simulated P1S is a fresh, decodable JPEG of the camera size; the printer shows its camera', async () => {
  const p1s = await sim({ name: 'Snap P1S', cameraSize: { width: 240, height: 136 } });
  const h = await service();
  const id = await addConnected(h, p1s.printerConfig());
  const res = await fetch(`${h.base}/api/v1/printers/${id}/camera/snapshot`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('image/jpeg');
  expect(res.headers.get('cache-control')).toBe('no-store');
  const picture = jpeg.decode(Buffer.from(await res.arrayBuffer()), { useTArray: true });
  expect([picture.width, picture.height]).toEqual([240, 136]);
  const detail = (await h.get(`/api/v1/printers/${id}`)).body;
  expect(detail.camera).toEqual({ available: true, source: 'bambu_tls', fps: 1 });
  expect(detail.camera_port).toBe(p1s.camera!.port);
  expect((await h.get('/api/v1/printers')).body.printers[0].camera).toEqual({ available: true, source: 'bambu_tls', fps: 1 });
  // A second snapshot within 2 s comes from the cached frame: still one connection to the camera.
  expect((await fetch(`${h.base}/api/v1/printers/${id}/camera/snapshot`)).status).toBe(200);
  expect(cameraStats(p1s).camera_connections).toBe(1);
  // The client gives the bytes (what the Node-RED printer node sends on), and the error code when there is no camera.
  const client = new PrintfarmClient(h.base);
  expect(jpeg.decode(await client.printers.snapshot(id), { useTArray: true }).width).toBe(240);
  await expect(client.printers.snapshot('nope')).rejects.toMatchObject({ status: 404, code: 'PRINTER_NOT_FOUND' });
  // Frames never reach the log.
  expect(JSON.stringify(h.logs)).not.toMatch(/\/9j\/|ffd8ff/);
});

test('10 viewers of one printer share one upstream connection, closed camera_idle_s after the last one left; more than camera_max_viewers get 429', async () => {
  const p1s = await sim({ cameraIntervalMs: 100 });
  const h = await service({ CAMERA_MAX_VIEWERS: '10' });
  const id = await addConnected(h, p1s.printerConfig());
  const viewers = await Promise.all(Array.from({ length: 10 }, () => openStream(h.base, `/api/v1/printers/${id}/camera/stream`)));
  for (const v of viewers) {
    expect(v.status).toBe(200);
    expect(v.headers['content-type']).toBe('multipart/x-mixed-replace; boundary=printfarm-frame');
  }
  // Every viewer keeps getting frames.
  await until(() => viewers.every((v) => v.parts.length >= 3), 'three frames per viewer');
  expect(jpeg.decode(viewers[9].parts[2], { useTArray: true }).width).toBe(320);
  expect(cameraStats(p1s).camera_connections).toBe(1);
  expect(cameraStats(p1s).camera_open_connections).toBe(1);
  const metrics = await (await fetch(`${h.base}/metrics`)).text();
  expect(metrics).toMatch(/^printfarm_camera_streams 10$/m);
  expect(metrics).toMatch(/^printfarm_camera_connections 1$/m);
  const refused = await openStream(h.base, `/api/v1/printers/${id}/camera/stream`);
  expect(refused.status).toBe(429);
  expect(JSON.parse(refused.body).error.code).toBe('CAMERA_VIEWERS_EXCEEDED');
  for (const v of viewers) v.close();
  await until(() => h.service.context.cameras.viewerCount === 0, 'viewers gone');
  await until(() => cameraStats(p1s).camera_open_connections === 0 && !h.service.context.cameras.upstreamOpen(id), 'upstream closed after the idle time');
  expect(cameraStats(p1s).camera_connections).toBe(1);
});

test('a camera that refuses the access code answers 502 CAMERA_ERROR with the cause, at once', async () => {
  const p1s = await sim();
  const other = await sim({ accessCode: '87654321' });
  const h = await service();
  // The printer is fine; its camera_port leads to a camera with another access code.
  const id = await addConnected(h, { ...p1s.printerConfig(), camera_port: other.camera!.port });
  const res = await h.get(`/api/v1/printers/${id}/camera/snapshot`);
  const err = expectError(res, 502, 'CAMERA_ERROR');
  expect(err.message).toMatch(/refused.*access code/);
  expect(err.details).toMatchObject({ printer_id: id, cause: 'auth' });
  expect(cameraStats(other).camera_auth_failures).toBe(1);
  expect((await h.get(`/api/v1/printers/${id}`)).body.camera.available).toBe(false);
});

test('a printer with a wrong access code answers 502 PRINTER_OFFLINE naming it, without trying the camera', async () => {
  const p1s = await sim();
  const h = await service();
  const created = await h.post('/api/v1/printers', { ...p1s.printerConfig(), access_code: '00000000' });
  await until(async () => (await h.get(`/api/v1/printers/${created.body.id}`)).body.connection_status === 'error', 'connection error');
  const err = expectError(await h.get(`/api/v1/printers/${created.body.id}/camera/snapshot`), 502, 'PRINTER_OFFLINE');
  expect(err.message).toMatch(/access code/);
  expect(cameraStats(p1s).camera_connections).toBe(0);
});

test('a stalled camera answers 502 within camera_timeout_s, and printer_status says the camera is unavailable', async () => {
  const p1s = await sim();
  const h = await service();
  const id = await addConnected(h, p1s.printerConfig());
  const ws = await connectWs(h.base);
  opened.push(ws);
  p1s.setFaults({ camera_stalled: true });
  const err = expectError(await h.get(`/api/v1/printers/${id}/camera/snapshot`), 502, 'CAMERA_ERROR');
  expect(err.message).toMatch(/no frame within 2 s/);
  const frame = await ws.next((f) => f.type === 'printer_status' && (f.data.camera as { available?: boolean } | undefined)?.available === false);
  expect(frame.data).toMatchObject({ printer_id: id, camera: { available: false, source: 'bambu_tls' } });
  expect(JSON.stringify(ws.frames)).not.toMatch(/jpeg"|\/9j\//);
  // Back to normal: the next snapshot works and the camera is announced again.
  p1s.setFaults({ camera_stalled: false });
  expect((await fetch(`${h.base}/api/v1/printers/${id}/camera/snapshot`)).status).toBe(200);
  await ws.next((f) => f.type === 'printer_status' && (f.data.camera as { available?: boolean } | undefined)?.available === true);
});

test('unknown printers are 404, printers without a camera source 409, an inactive printer 409', async () => {
  const h = await service();
  expectError(await h.get('/api/v1/printers/nope/camera/snapshot'), 404, 'PRINTER_NOT_FOUND');
  expectError(await h.get('/api/v1/printers/nope/camera/stream'), 404, 'PRINTER_NOT_FOUND');
  const created = await h.post('/api/v1/printers', { name: 'Idle', type: 'bambu_lab', model: 'P1S', ip_address: '127.0.0.1', serial_number: '01P00A000000001', access_code: '1', is_active: false });
  const err = expectError(await h.get(`/api/v1/printers/${created.body.id}/camera/snapshot`), 409, 'CAMERA_UNAVAILABLE');
  expect(err.message).toMatch(/inactive/);
});

test('a viewer stays connected while the camera drops off the network, and gets frames again when it is back', async () => {
  const p1s = await sim({ cameraIntervalMs: 200 });
  const h = await service();
  const id = await addConnected(h, p1s.printerConfig());
  const ws = await connectWs(h.base);
  opened.push(ws);
  const viewer = await openStream(h.base, `/api/v1/printers/${id}/camera/stream`);
  opened.push({ close: async () => viewer.close() });
  await until(() => viewer.parts.length >= 2, 'frames before the drop');
  await fetch(`${p1s.controlUrl}/camera`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"enabled":false}' });
  await ws.next((f) => f.type === 'printer_status' && (f.data.camera as { available?: boolean } | undefined)?.available === false, 10_000);
  expect((await h.get(`/api/v1/printers/${id}`)).body.camera.available).toBe(false);
  const before = viewer.parts.length;
  await fetch(`${p1s.controlUrl}/camera`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"enabled":true}' });
  await until(() => viewer.parts.length >= before + 2, 'frames after the camera came back', 15_000);
  expect(h.service.context.cameras.viewerCount).toBe(1);
  expect((await h.get(`/api/v1/printers/${id}`)).body.camera.available).toBe(true);
});
