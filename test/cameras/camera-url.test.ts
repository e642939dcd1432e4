/**
 * camera_url: a farm's own webcam over http (an MJPEG stream or a snapshot
 * URL, Basic auth from the URL's user and password) replaces the printer's
 * camera; the URL is shown with its credentials masked and validated.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import jpeg from 'jpeg-js';
import { MjpegParser } from '../../service/cameras/mjpeg-parser';
import { renderPicture } from '../../service/simulators/camera-picture';
import { openStream } from '../helpers/cameras';
import { expectError, prusa, startService, type Harness } from '../helpers/service';

jest.setTimeout(30_000);

const PICTURE = renderPicture({ name: 'Webcam', state: 'IDLE', progress: 0 }, { width: 160, height: 90 });
const AUTH = `Basic ${Buffer.from('cam:s3cret').toString('base64')}`;

let webcam: http.Server;
let port: number;
const timers = new Set<NodeJS.Timeout>();
let h: Harness;

beforeAll(async () => {
  webcam = http.createServer((req, res) => {
    if (req.headers.authorization !== AUTH) {
      res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="cam"' });
      return res.end();
    }
    if (req.url === '/snapshot.jpg') {
      res.writeHead(200, { 'Content-Type': 'image/jpeg', 'Content-Length': PICTURE.length });
      return res.end(PICTURE);
    }
    // mjpg-streamer's manners: a boundary with a leading "--" in the header, parts without Content-Length.
    res.writeHead(200, { 'Content-Type': 'multipart/x-mixed-replace;boundary=--boundarydonotcross' });
    const send = () => res.write(Buffer.concat([Buffer.from('--boundarydonotcross\r\nContent-Type: image/jpeg\r\n\r\n'), PICTURE, Buffer.from('\r\n')]));
    send();
    const timer = setInterval(send, 50);
    timers.add(timer);
    res.once('close', () => {
      clearInterval(timer);
      timers.delete(timer);
    });
  });
  await new Promise<void>((resolve) => webcam.listen(0, '127.0.0.1', resolve));
  port = (webcam.address() as AddressInfo).port;
  h = await startService({ env: { CAMERA_TIMEOUT_S: '2', CAMERA_IDLE_S: '1' } });
});

afterAll(async () => {
  await h.close();
  for (const t of timers) clearInterval(t);
  webcam.closeAllConnections();
  await new Promise((resolve) => webcam.close(resolve));
});

test('an MJPEG camera_url is shown masked, streams and gives snapshots', async () => {
  const url = `http://cam:s3cret@127.0.0.1:${port}/?action=stream`;
  const created = await h.post('/api/v1/printers', prusa('webcam-1', { camera_url: url }));
  expect(created.status).toBe(201);
  const detail = (await h.get('/api/v1/printers/webcam-1')).body;
  expect(detail.camera_url).toBe(`http://****:****@127.0.0.1:${port}/?action=stream`);
  expect(detail.camera).toEqual({ available: true, source: 'mjpeg', fps: 5 });
  expect(JSON.stringify((await h.get('/api/v1/printers')).body)).not.toContain('s3cret');

  const snap = await fetch(`${h.base}/api/v1/printers/webcam-1/camera/snapshot`);
  expect(snap.status).toBe(200);
  expect(jpeg.decode(Buffer.from(await snap.arrayBuffer()), { useTArray: true }).width).toBe(160);
  const stream = await openStream(h.base, '/api/v1/printers/webcam-1/camera/stream');
  await new Promise<void>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error('no second part')), 5000);
    const check = setInterval(() => {
      if (stream.parts.length >= 2) {
        clearTimeout(t);
        clearInterval(check);
        resolve();
      }
    }, 20);
  });
  stream.close();

  // Writing the shown (masked) URL back keeps the real one.
  expect((await h.put('/api/v1/printers/webcam-1', { camera_url: detail.camera_url })).status).toBe(200);
  expect((await fetch(`${h.base}/api/v1/printers/webcam-1/camera/snapshot`)).status).toBe(200);
});

test('a snapshot camera_url is polled; wrong credentials are 502 CAMERA_ERROR', async () => {
  await h.post('/api/v1/printers', prusa('webcam-2', { camera_url: `http://cam:s3cret@127.0.0.1:${port}/snapshot.jpg` }));
  expect((await h.get('/api/v1/printers/webcam-2')).body.camera).toEqual({ available: true, source: 'snapshot', fps: 1 });
  const snap = await fetch(`${h.base}/api/v1/printers/webcam-2/camera/snapshot`);
  expect(snap.status).toBe(200);
  expect(jpeg.decode(Buffer.from(await snap.arrayBuffer()), { useTArray: true }).height).toBe(90);

  await h.put('/api/v1/printers/webcam-2', { camera_url: `http://cam:wrong@127.0.0.1:${port}/snapshot.jpg` });
  const err = expectError(await h.get('/api/v1/printers/webcam-2/camera/snapshot'), 502, 'CAMERA_ERROR');
  expect(err.message).toMatch(/refused the credentials \(HTTP 401\)/);
  // Removing the URL goes back to the printer's own camera (here: a PrusaLink printer that is not connected).
  await h.put('/api/v1/printers/webcam-2', { camera_url: null });
  expect((await h.get('/api/v1/printers/webcam-2')).body).toMatchObject({ camera_url: null, camera: { source: 'prusalink' } });
});

test('changing or deleting a printer ends the streams of its old camera', async () => {
  await h.post('/api/v1/printers', prusa('webcam-3', { camera_url: `http://cam:s3cret@127.0.0.1:${port}/stream` }));
  const first = await openStream(h.base, '/api/v1/printers/webcam-3/camera/stream');
  expect(first.status).toBe(200);
  await h.put('/api/v1/printers/webcam-3', { camera_url: `http://cam:s3cret@127.0.0.1:${port}/snapshot.jpg` });
  await first.ended;
  const second = await openStream(h.base, '/api/v1/printers/webcam-3/camera/stream');
  expect(second.status).toBe(200);
  expect((await h.del('/api/v1/printers/webcam-3')).status).toBe(200);
  await second.ended;
  expect(h.service.context.cameras.viewerCount).toBe(0);
});

test('camera_url and camera_port are validated', async () => {
  expectError(await h.post('/api/v1/printers', prusa('bad-1', { camera_url: 'ftp://cam.local/x' })), 422, 'VALIDATION_ERROR');
  expectError(await h.post('/api/v1/printers', prusa('bad-2', { camera_url: 'not a url' })), 422, 'VALIDATION_ERROR');
  expectError(await h.post('/api/v1/printers', prusa('bad-3', { camera_port: 6000 })), 400, 'INVALID_PRINTER_CONFIG');
  expectError(await h.post('/api/v1/printers', prusa('bad-4', { camera_url: `http://x/${'a'.repeat(2100)}` })), 422, 'VALIDATION_ERROR');
});

test('the MJPEG parser cuts parts with and without Content-Length and bounds them', () => {
  const parts: Buffer[] = [];
  const parser = new MjpegParser('b', 1000, (p) => parts.push(p));
  const jpegBytes = Buffer.from([0xff, 0xd8, 1, 2, 0xff, 0xd9]);
  const stream = Buffer.concat([
    Buffer.from('--b\r\nContent-Type: image/jpeg\r\nContent-Length: 6\r\n\r\n'),
    jpegBytes,
    Buffer.from('\r\n--b\r\nContent-Type: image/jpeg\r\n\r\n'),
    jpegBytes,
    Buffer.from('\r\n--b\r\n'),
  ]);
  for (let i = 0; i < stream.length; i += 7) parser.push(stream.subarray(i, i + 7));
  expect(parts.map((p) => p.toString('hex'))).toEqual([jpegBytes.toString('hex'), jpegBytes.toString('hex')]);
  const big = new MjpegParser('b', 1000, () => undefined);
  expect(() => big.push(Buffer.from('--b\r\nContent-Length: 5000\r\n\r\n'))).toThrow(/5000 bytes/);
  const endless = new MjpegParser('b', 1000, () => undefined);
  endless.push(Buffer.from('--b\r\n\r\n'));
  expect(() => endless.push(Buffer.alloc(2000, 0xff))).toThrow(/larger than 1000/);
});
