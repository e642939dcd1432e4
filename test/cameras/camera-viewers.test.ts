/**
 * Viewers that misbehave and viewers that may not look: a viewer that never
 * reads makes the service skip frames for it and then drop it (its queued
 * bytes stay bounded by about one frame), while a reading viewer of the same
 * camera keeps its frames; camera routes obey access control.
 */
import net from 'node:net';
import { BambuSimulator } from '../../service/simulators/bambu';
import { addConnected, cameraService, openStream, until } from '../helpers/cameras';
import { expectError, startService, type Harness } from '../helpers/service';

jest.setTimeout(60_000);

const opened: Array<{ close(): Promise<unknown> }> = [];
afterEach(async () => {
  for (const o of opened.splice(0).reverse()) await o.close();
});

test('a viewer that never reads is skipped, then dropped; its queued bytes stay bounded and other viewers keep their frames', async () => {
  // Big pictures, many of them: the stuck viewer's socket buffers fill within seconds.
  const p1s = await BambuSimulator.start({ model: 'P1S', ftps: false, cameraSize: { width: 1920, height: 1080 }, cameraIntervalMs: 20 });
  opened.push(p1s);
  const h = await cameraService({ CAMERA_MAX_FPS: '30' });
  opened.push(h);
  const id = await addConnected(h, p1s.printerConfig());
  // A picture's size, from the camera itself (a loaded machine can answer the first snapshot with an error body,
  // which once made the bound below a few hundred bytes).
  const snapshot = await until(async () => {
    const res = await fetch(`${h.base}/api/v1/printers/${id}/camera/snapshot`);
    const body = Buffer.from(await res.arrayBuffer());
    return res.status === 200 && body;
  }, 'a snapshot');

  const reader = await openStream(h.base, `/api/v1/printers/${id}/camera/stream`);
  const stuck = net.connect(h.service.port, '127.0.0.1');
  opened.push({ close: async () => stuck.destroy() });
  stuck.on('error', () => undefined);
  await new Promise<void>((resolve) => stuck.once('connect', () => resolve()));
  stuck.write(`GET /api/v1/printers/${id}/camera/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
  stuck.pause();
  await until(() => h.service.context.cameras.viewerCount === 2, 'two viewers');
  // The snapshot's link may still be open (and shared) or may have reached its idle close
  // on a loaded machine; either way, from here on the two viewers share one link.
  const cameraStats = () => p1s.stateView().stats as Record<string, number>;
  const connectionsWithTwoViewers = cameraStats().camera_connections;

  const hub = h.service.context.cameras;
  let largest = 0;
  // About one frame beyond the socket's own buffer: the largest picture either viewer could be sent.
  const frameBytes = Math.max(snapshot.length, ...reader.parts.map((part) => part.length));
  const bound = 16 * 1024 + frameBytes + 256;
  await until(
    () => {
      for (const q of hub.queuedBytes()) largest = Math.max(largest, q);
      return hub.viewerCount === 1;
    },
    'the stuck viewer dropped',
    45_000,
  );
  expect(largest).toBeLessThanOrEqual(bound);
  // The reading viewer was never held up by the stuck one.
  const before = reader.parts.length;
  await until(() => reader.parts.length >= before + 5, 'more frames for the reading viewer');
  expect(hub.upstreamCount).toBe(1);
  expect(cameraStats().camera_open_connections).toBe(1);
  expect(cameraStats().camera_connections).toBe(connectionsWithTwoViewers);
  reader.close();
});

test('a client that leaves before its first frame gives its viewer slot back', async () => {
  const p1s = await BambuSimulator.start({ model: 'P1S', ftps: false });
  opened.push(p1s);
  const h = await cameraService({ CAMERA_MAX_VIEWERS: '1', CAMERA_TIMEOUT_S: '5' });
  opened.push(h);
  const id = await addConnected(h, p1s.printerConfig());
  p1s.setFaults({ camera_stalled: true });
  const abort = new AbortController();
  const leaving = fetch(`${h.base}/api/v1/printers/${id}/camera/stream`, { signal: abort.signal }).catch((e: Error) => e);
  await until(() => h.service.context.cameras.upstreamOpen(id), 'the camera opened for the first viewer');
  abort.abort();
  expect(await leaving).toMatchObject({ name: 'AbortError' });
  p1s.setFaults({ camera_stalled: false });
  const next = await until(async () => {
    const v = await openStream(h.base, `/api/v1/printers/${id}/camera/stream`);
    if (v.status === 200) return v;
    expect(v.status).toBe(429);
    return null;
  }, 'the slot given back');
  expect(next.parts.length).toBeGreaterThanOrEqual(1);
  next.close();
});

describe('access control', () => {
  const TOKENS = { viewer: 'viewer-token-0123456789', operator: 'operator-token-0123456789' };
  let h: Harness;
  beforeAll(async () => {
    h = await startService({ env: { AUTH_TOKENS: `viewer:${TOKENS.viewer},operator:${TOKENS.operator}` } });
  });
  afterAll(() => h.close());

  test.each(['snapshot', 'stream'])('GET camera/%s needs a token; a viewer may look', async (what) => {
    expectError(await h.request('GET', `/api/v1/printers/p/camera/${what}`), 401, 'UNAUTHORIZED');
    expectError(await h.request('GET', `/api/v1/printers/p/camera/${what}`, undefined, { authorization: 'Bearer wrong-token-0123456789' }), 401, 'UNAUTHORIZED');
    // Past the check: the printer does not exist.
    expectError(await h.request('GET', `/api/v1/printers/p/camera/${what}`, undefined, { authorization: `Bearer ${TOKENS.viewer}` }), 404, 'PRINTER_NOT_FOUND');
    // An <img src> cannot send headers: the token may come as access_token (camera routes only).
    expectError(await h.request('GET', `/api/v1/printers/p/camera/${what}?access_token=${TOKENS.viewer}`), 404, 'PRINTER_NOT_FOUND');
    expectError(await h.request('GET', `/api/v1/printers/p?access_token=${TOKENS.viewer}`), 401, 'UNAUTHORIZED');
  });
});
