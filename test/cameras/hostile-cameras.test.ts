/**
 * Hostile and broken cameras as peers of the service: raw HTTP servers on
 * loopback that script what a user-configured camera_url (MJPEG stream or
 * snapshot) can do, and a raw TLS server for the Bambu camera. Whatever a
 * camera does, the source reports one CameraError with a cause (never a
 * hang, never an escape to the process), holds a bounded number of bytes, and
 * no message names the credentials of the camera URL.
 */
import net from 'node:net';
import tls from 'node:tls';
import zlib, { crc32, deflateSync } from 'node:zlib';
import { BambuTlsSource } from '../../service/cameras/bambu-tls';
import { selfSignedTls } from '../../service/simulators/bambu/options';
import { HttpCameraSource } from '../../service/cameras/http-camera';
import { MjpegParser } from '../../service/cameras/mjpeg-parser';
import { toJpeg } from '../../service/cameras/polling';
import { CameraError, type CameraFrame, type CameraSource } from '../../service/cameras/source';
import { hostileKit, outcome, tcpOf } from '../helpers/hostile-socket';

const kit = hostileKit();

const JPEG = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x04, 0x00, 0x00, 0xff, 0xd9]);
const SECRET = 'hunter2-secret';

/** A camera that answers every request with `script` (the raw bytes of its HTTP answer, written as it likes). */
async function camera(script: (socket: net.Socket) => void): Promise<number> {
  return kit.serve(net.createServer((socket) => socket.once('data', () => script(socket))));
}

function httpSource(port: number, kind: 'mjpeg' | 'snapshot', extra: Partial<{ timeoutMs: number; maxFrameBytes: number; path: string }> = {}): HttpCameraSource {
  const source = new HttpCameraSource({
    url: `http://admin:${SECRET}@127.0.0.1:${port}${extra.path ?? '/stream'}`,
    kind,
    // Long: each test's failure must come from the camera's behaviour, not from this deadline.
    timeoutMs: extra.timeoutMs ?? 30_000,
    pollMs: 60_000,
    ...(extra.maxFrameBytes ? { maxFrameBytes: extra.maxFrameBytes } : {}),
  });
  kit.cleanups.push(() => source.close());
  return source;
}

/** The first error of `source` (started here); its frames are collected in `frames`. */
function firstError(source: CameraSource, frames: CameraFrame[] = []): Promise<CameraError> {
  return new Promise((resolve) => {
    source.onFrame((f) => frames.push(f));
    source.onError(resolve);
    source.start();
  });
}

async function expectCameraError(source: CameraSource, code: string, message: RegExp, frames: CameraFrame[] = []): Promise<CameraError> {
  // outcome() gives { resolved } for the error heard, 'HUNG' when none came in time.
  const heard = await outcome(firstError(source, frames), 5000);
  const error = (heard as { resolved?: unknown }).resolved ?? heard;
  expect(error).toBeInstanceOf(CameraError);
  const e = error as CameraError;
  expect({ code: e.code, message: e.message }).toEqual({ code, message: expect.stringMatching(message) });
  expect(e.message).not.toContain(SECRET);
  expect(e.message).not.toContain('admin');
  return e;
}

const MULTIPART = 'HTTP/1.1 200 OK\r\nContent-Type: multipart/x-mixed-replace; boundary=frame\r\nConnection: close\r\n\r\n';

describe('an HTTP/MJPEG camera_url', () => {
  test('a multipart stream without a boundary is PROTOCOL at once', async () => {
    const port = await camera((s) => s.write('HTTP/1.1 200 OK\r\nContent-Type: multipart/x-mixed-replace\r\n\r\n--frame\r\n'));
    await expectCameraError(httpSource(port, 'mjpeg'), 'PROTOCOL', /without a boundary/);
  });

  test('a boundary that never comes is PROTOCOL once a part\'s worth of bytes came', async () => {
    const port = await camera((s) => s.write(Buffer.concat([Buffer.from(MULTIPART), Buffer.alloc(64 * 1024, 0x41)])));
    await expectCameraError(httpSource(port, 'mjpeg', { maxFrameBytes: 16 * 1024 }), 'PROTOCOL', /no part boundary/);
  });

  test('a boundary line that never ends is bounded like a missing boundary', () => {
    const parser = new MjpegParser('frame', 16 * 1024, () => undefined);
    parser.push(Buffer.from('--frame'));
    // A camera that sends the delimiter and then no line end, ever.
    const push = () => {
      for (let i = 0; i < 64; i++) parser.push(Buffer.alloc(4096, 0x41));
    };
    expect(push).toThrow(CameraError);
    expect(parser.bufferedBytes).toBeLessThan(64 * 1024);
  });

  test('part headers without an end are PROTOCOL', async () => {
    const port = await camera((s) => s.write(`${MULTIPART}--frame\r\nContent-Type: image/jpeg\r\nX-Pad: ${'a'.repeat(20_000)}`));
    await expectCameraError(httpSource(port, 'mjpeg'), 'PROTOCOL', /headers are too long/);
  });

  test.each([
    ['negative', '-5'],
    ['non-numeric', 'lots'],
  ])('a %s part Content-Length is ignored: the part is cut at the next boundary', async (_, length) => {
    const part = (n: string) => Buffer.concat([Buffer.from(`--frame\r\nContent-Type: image/jpeg\r\nContent-Length: ${n}\r\n\r\n`), JPEG, Buffer.from('\r\n')]);
    const port = await camera((s) => s.write(Buffer.concat([Buffer.from(MULTIPART), part(length), part(length), Buffer.from('--frame\r\n')])));
    const frames: CameraFrame[] = [];
    const source = httpSource(port, 'mjpeg');
    source.onFrame((f) => frames.push(f));
    source.start();
    expect(await outcome(new Promise<void>((resolve) => source.onFrame(() => frames.length >= 2 && resolve())), 5000)).toEqual({ resolved: undefined });
    expect(frames.map((f) => f.jpeg.toString('hex'))).toEqual([JPEG.toString('hex'), JPEG.toString('hex')]);
  });

  test('a part Content-Length of 4 GB or more is PROTOCOL before anything is buffered', async () => {
    const port = await camera((s) => s.write(`${MULTIPART}--frame\r\nContent-Type: image/jpeg\r\nContent-Length: 99999999999999\r\n\r\n\xff\xd8`));
    await expectCameraError(httpSource(port, 'mjpeg'), 'PROTOCOL', /announced a part of \d+ bytes/);
  });

  test('a snapshot of hundreds of MB is refused once it passes the bound, and the download stops', async () => {
    let written = 0;
    const port = await camera((s) => {
      s.write('HTTP/1.1 200 OK\r\nContent-Type: image/jpeg\r\nContent-Length: 500000000\r\n\r\n');
      const chunk = Buffer.alloc(64 * 1024, 0x41);
      const pump = () => {
        while (!s.destroyed && written < 500_000_000 && s.write(chunk)) written += chunk.length;
      };
      s.on('drain', pump);
      pump();
    });
    await expectCameraError(httpSource(port, 'snapshot', { path: '/snapshot.jpg', maxFrameBytes: 256 * 1024 }), 'PROTOCOL', /over 262144 bytes/);
    expect(written).toBeLessThan(64 * 1024 * 1024);
  });

  test('a redirect is not followed: the camera answers PROTOCOL and the target gets no request', async () => {
    let followed = 0;
    const target = await kit.serve(net.createServer(() => followed++));
    const port = await camera((s) => s.end(`HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:${target}/elsewhere\r\nContent-Length: 0\r\n\r\n`));
    await expectCameraError(httpSource(port, 'mjpeg'), 'PROTOCOL', /answered HTTP 302/);
    expect(followed).toBe(0);
  });

  test('a camera that accepts and never answers is TIMEOUT after its deadline', async () => {
    const port = await kit.serve(net.createServer(() => undefined));
    await expectCameraError(httpSource(port, 'mjpeg', { timeoutMs: 300 }), 'TIMEOUT', /did not answer within/);
  });

  test('a stream that gives one frame and then stalls is TIMEOUT', async () => {
    const port = await camera((s) => s.write(Buffer.concat([Buffer.from(`${MULTIPART}--frame\r\nContent-Length: ${JPEG.length}\r\n\r\n`), JPEG, Buffer.from('\r\n--frame\r\n')])));
    const frames: CameraFrame[] = [];
    await expectCameraError(httpSource(port, 'mjpeg', { timeoutMs: 300 }), 'TIMEOUT', /did not answer/, frames);
    expect(frames).toHaveLength(1);
  });

  test.each([
    ['ended by the close', ''],
    ['chunked', 'Transfer-Encoding: chunked\r\n'],
  ])('a stream (%s) that resets mid-frame is OFFLINE at once, not after the stall deadline', async (_, framing) => {
    const body = Buffer.concat([Buffer.from(`--frame\r\nContent-Length: ${JPEG.length}\r\n\r\n`), JPEG, Buffer.from('\r\n--frame\r\nContent-Length: 1000\r\n\r\n\xff\xd8', 'latin1')]);
    const port = await camera((s) => {
      s.write(MULTIPART.replace('\r\n\r\n', `\r\n${framing}\r\n`));
      s.write(framing ? Buffer.concat([Buffer.from(`${body.length.toString(16)}\r\n`), body, Buffer.from('\r\n')]) : body);
      setImmediate(() => s.resetAndDestroy());
    });
    const frames: CameraFrame[] = [];
    await expectCameraError(httpSource(port, 'mjpeg'), 'OFFLINE', /127\.0\.0\.1/, frames);
    expect(frames).toHaveLength(1);
  });

  test('a snapshot that resets mid-picture is OFFLINE at once', async () => {
    const port = await camera((s) => {
      s.write('HTTP/1.1 200 OK\r\nContent-Type: image/jpeg\r\nContent-Length: 1000\r\n\r\n\xff\xd8\xff');
      setImmediate(() => s.resetAndDestroy());
    });
    await expectCameraError(httpSource(port, 'snapshot', { path: '/snapshot.jpg' }), 'OFFLINE', /127\.0\.0\.1/);
  });

  test('an unreachable camera names its host, never the user or password of its URL', async () => {
    const closed = await kit.serve(net.createServer());
    await new Promise((resolve) => setImmediate(resolve));
    // Take the port, then free it: nothing listens there any more.
    for (const cleanup of kit.cleanups.splice(-1)) await cleanup();
    await expectCameraError(httpSource(closed, 'mjpeg'), 'OFFLINE', /127\.0\.0\.1:\d+ cannot be reached \(ECONNREFUSED\)/);
  });
});

describe('the Bambu JPEG-over-TLS camera', () => {
  let credentials: { key: string; cert: string };
  beforeAll(async () => {
    credentials = await selfSignedTls('camera');
  });

  async function bambu(script: (socket: tls.TLSSocket) => void): Promise<number> {
    const { cert, key } = credentials;
    return kit.serve(tls.createServer({ cert, key }, (socket) => socket.once('data', () => script(socket))));
  }

  function bambuSource(port: number): BambuTlsSource {
    const source = new BambuTlsSource({ host: '127.0.0.1', port, accessCode: SECRET, connectTimeoutMs: 3000, maxFrameBytes: 64 * 1024 });
    kit.cleanups.push(() => source.close());
    return source;
  }

  function frame(payload: Buffer): Buffer {
    const header = Buffer.alloc(16);
    header.writeUInt32LE(payload.length, 0);
    return Buffer.concat([header, payload]);
  }

  test('a frame of garbage within the length bound is PROTOCOL', async () => {
    const port = await bambu((s) => s.write(frame(Buffer.alloc(1000, 0x41))));
    await expectCameraError(bambuSource(port), 'PROTOCOL', /not a JPEG/);
  });

  test('a camera that resets mid-frame after a good one is OFFLINE, its access code in no message', async () => {
    const port = await bambu((s) => {
      s.write(Buffer.concat([frame(JPEG), frame(Buffer.concat([JPEG, Buffer.alloc(5000)])).subarray(0, 100)]));
      setImmediate(() => tcpOf(s).resetAndDestroy());
    });
    const frames: CameraFrame[] = [];
    await expectCameraError(bambuSource(port), 'OFFLINE', /127\.0\.0\.1/, frames);
    expect(frames).toHaveLength(1);
  });
});

describe('a PNG snapshot (snapshot camera_url, PrusaLink snap)', () => {
  function chunk(type: string, data: Buffer): Buffer {
    const head = Buffer.alloc(8);
    head.writeUInt32BE(data.length, 0);
    head.write(type, 4, 'latin1');
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])) >>> 0, 0);
    return Buffer.concat([head, data, crc]);
  }

  /** A 1x1 RGB PNG whose pixel data inflates to `inflated` bytes. */
  function png(interlace: 0 | 1, inflated: number): Buffer {
    const ihdr = Buffer.from([0, 0, 0, 1, 0, 0, 0, 1, 8, 2, 0, 0, interlace]);
    return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', ihdr), chunk('IDAT', deflateSync(Buffer.alloc(inflated), { level: 9 })), chunk('IEND', Buffer.alloc(0))]);
  }

  test('a small PNG whose pixel data inflates far beyond its header (a zlib bomb) is refused before it is inflated, interlaced or not', () => {
    // 64 KiB on the wire, 64 MiB inflated, for one pixel: 4 MiB on the wire (the snapshot bound) would be 4 GiB.
    const bombs = [png(0, 64 * 1024 * 1024), png(1, 64 * 1024 * 1024)];
    expect(bombs.every((b) => b.length < 128 * 1024)).toBe(true);
    // What the service inflates for the camera (the PNG decoder inflates through node:zlib).
    const inflated: number[] = [];
    const real = zlib.inflateSync;
    const spy = jest.spyOn(zlib, 'inflateSync').mockImplementation((data, options) => {
      const out = real(data, options);
      inflated.push(out.length);
      return out;
    });
    try {
      for (const bomb of bombs) expect(() => toJpeg(bomb)).toThrow(CameraError);
    } finally {
      spy.mockRestore();
    }
    expect(Math.max(0, ...inflated)).toBeLessThan(1024 * 1024);
    // The same 1x1 picture without the bomb is a JPEG.
    expect(toJpeg(png(0, 4)).subarray(0, 2)).toEqual(Buffer.from([0xff, 0xd8]));
  });
});
