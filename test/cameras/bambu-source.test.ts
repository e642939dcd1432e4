/**
 * The Bambu "JPEG over TLS" source against the simulated P1S camera over real
 * TLS on loopback: frames are decodable JPEGs of the camera's size; a wrong
 * access code, a camera taken off the network and a hostile frame length are
 * errors with a clear cause, never a hang.
 */
import tls from 'node:tls';
import jpeg from 'jpeg-js';
import { authPacket, BambuFrameReader } from '../../service/cameras/bambu-protocol';
import { BambuTlsSource } from '../../service/cameras/bambu-tls';
import { CameraError, type CameraFrame } from '../../service/cameras/source';
import { BambuSimulator } from '../../service/simulators/bambu';
import { cleanups, closeAfterEach, control, simStats, startSim } from '../helpers/bambu-e2e';

closeAfterEach();

function sourceFor(port: number, accessCode: string, serial: string | null = null): BambuTlsSource {
  const source = new BambuTlsSource({ host: '127.0.0.1', port, accessCode, serial, connectTimeoutMs: 3000 });
  cleanups.push(() => source.close());
  return source;
}

/** The first frame or error of a source (started here). */
function firstEvent(source: BambuTlsSource, timeoutMs = 5000): Promise<CameraFrame | CameraError> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no frame and no error')), timeoutMs);
    source.onFrame((f) => {
      clearTimeout(timer);
      resolve(f);
    });
    source.onError((e) => {
      clearTimeout(timer);
      resolve(e);
    });
    source.start();
  });
}

test('the auth packet has the documented layout', () => {
  const packet = authPacket('12345678');
  expect(packet.length).toBe(80);
  expect(packet.readUInt32LE(0)).toBe(0x40);
  expect(packet.readUInt32LE(4)).toBe(0x3000);
  expect(packet.subarray(8, 16).every((b) => b === 0)).toBe(true);
  expect(packet.subarray(16, 20).toString()).toBe('bblp');
  expect(packet.subarray(20, 48).every((b) => b === 0)).toBe(true);
  expect(packet.subarray(48, 56).toString()).toBe('12345678');
  expect(packet.subarray(56).every((b) => b === 0)).toBe(true);
  expect(() => authPacket('x'.repeat(33))).toThrow(CameraError);
});

test('a simulated P1S sends decodable JPEG frames of its picture size', async () => {
  const sim = await startSim({ model: 'P1S', name: 'Cam P1S', ftps: false, control: true, cameraSize: { width: 256, height: 144 }, cameraIntervalMs: 200 });
  const source = sourceFor(sim.camera!.port, sim.accessCode, sim.serial);
  const frames: CameraFrame[] = [];
  await new Promise<void>((resolve, reject) => {
    source.onError(reject);
    source.onFrame((f) => {
      frames.push(f);
      if (frames.length === 2) resolve();
    });
    source.start();
  });
  const picture = jpeg.decode(frames[0].jpeg, { useTArray: true });
  expect([picture.width, picture.height]).toEqual([256, 144]);
  expect(frames[0].at).toBeLessThanOrEqual(Date.now());
  expect(simStats(sim).camera_connections).toBe(1);
  await source.close();
});

test('a wrong access code is an AUTH error: the camera closes without a frame', async () => {
  const sim = await startSim({ ftps: false });
  const event = await firstEvent(sourceFor(sim.camera!.port, 'wrong-code'));
  expect(event).toBeInstanceOf(CameraError);
  expect((event as CameraError).code).toBe('AUTH');
  expect((event as CameraError).message).toMatch(/access code/);
  expect(simStats(sim).camera_auth_failures).toBe(1);
});

test('a camera taken off the network is OFFLINE, and comes back when enabled', async () => {
  const sim = await startSim({ ftps: false });
  expect((await control(sim, '/camera', { enabled: false })).status).toBe(200);
  const event = await firstEvent(sourceFor(sim.camera!.port, sim.accessCode));
  expect(event).toBeInstanceOf(CameraError);
  expect((event as CameraError).code).toBe('OFFLINE');
  await control(sim, '/camera', { enabled: true });
  const again = await firstEvent(sourceFor(sim.camera!.port, sim.accessCode));
  expect(Buffer.isBuffer((again as CameraFrame).jpeg)).toBe(true);
});

test('a frame length over the limit is a PROTOCOL error before anything is buffered', async () => {
  const reader = new BambuFrameReader(1000, () => undefined);
  const header = Buffer.alloc(16);
  header.writeUInt32LE(1001, 0);
  expect(() => reader.push(header)).toThrow(/1001 bytes/);
  // A frame split over many chunks is put together.
  const got: Buffer[] = [];
  const ok = new BambuFrameReader(1000, (j) => got.push(j));
  const body = Buffer.from([0xff, 0xd8, 1, 2, 3, 0xff, 0xd9]);
  const h = Buffer.alloc(16);
  h.writeUInt32LE(body.length, 0);
  for (const byte of Buffer.concat([h, body, h, body])) ok.push(Buffer.from([byte]));
  expect(got.map((b) => b.toString('hex'))).toEqual([body.toString('hex'), body.toString('hex')]);
  expect(ok.bufferedBytes).toBe(0);
});

test('a hostile camera announcing a huge frame ends the source with PROTOCOL', async () => {
  const { key, cert } = await BambuSimulator.tlsCredentials('hostile');
  const server = tls.createServer({ key, cert }, (socket) => {
    socket.on('error', () => undefined);
    socket.once('data', () => {
      const header = Buffer.alloc(16);
      header.writeUInt32LE(0xffffffff, 0);
      socket.write(header);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(() => new Promise<void>((r) => server.close(() => r())));
  const event = await firstEvent(sourceFor((server.address() as { port: number }).port, '1234'));
  expect((event as CameraError).code).toBe('PROTOCOL');
  expect((event as CameraError).message).toMatch(/4294967295 bytes/);
});
