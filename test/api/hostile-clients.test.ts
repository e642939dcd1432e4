/**
 * Clients that misbehave on the service's own sockets: they reset mid-request,
 * mid-handshake or mid-stream, or stop reading. None of them may crash the
 * process (an uncaught ECONNRESET / EPIPE / ERR_STREAM_* here is one in this
 * test's process), hang it, or make it hold what they do not read.
 */
import fs from 'node:fs';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import path from 'node:path';
import tls from 'node:tls';
import { relayCameraStream } from '../../nodes/printer-camera';
import { PrintfarmClient } from '../../service/client';
import { BambuSimulator } from '../../service/simulators/bambu';
import { addConnected, cameraService, openStream } from '../helpers/cameras';
import { until } from '../helpers/farm';
import { startService, uploadFile, type Harness } from '../helpers/service';
import { ADMIN_KEY, API_KEY, startAggregator, type AggregatorHarness } from '../helpers/usage';

jest.setTimeout(30_000);

const openDescriptors = () => fs.readdirSync('/proc/self/fd').length;

const uncaught: unknown[] = [];
const onUncaught = (err: unknown) => uncaught.push(err);
beforeAll(() => process.on('uncaughtException', onUncaught));
afterAll(() => process.off('uncaughtException', onUncaught));

const opened: Array<{ close(): Promise<unknown> | void }> = [];
afterEach(async () => {
  for (const o of opened.splice(0).reverse()) await o.close();
});

/** A raw connection to `port` that has written `bytes` (and is connected). */
function rawConnect(port: number, bytes: string | Buffer = ''): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => (bytes.length ? socket.write(bytes, () => resolve(socket)) : resolve(socket)));
    socket.on('error', () => undefined);
    socket.once('error', reject);
    opened.push({ close: () => void socket.destroy() });
  });
}

/** Writes `bytes` on a fresh connection and resets it once they are written, or once the answer starts (`onAnswer`). */
async function writeAndReset(port: number, bytes: string | Buffer, onAnswer = false): Promise<void> {
  const socket = await rawConnect(port, onAnswer ? '' : bytes);
  if (onAnswer) {
    const answered = new Promise((resolve) => socket.once('data', resolve));
    socket.write(bytes);
    await answered;
  }
  const closed = new Promise((resolve) => socket.once('close', resolve));
  socket.resetAndDestroy();
  await closed;
}

/** `promise`, or a failure naming `what` after `ms`. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms)));
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/** Writes `bytes` on `socket`, ends its side (a half-close) and reads the answer until the service closes. */
function halfClose(socket: net.Socket, bytes: string): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    socket.on('data', (d: Buffer) => (text += d.toString('latin1')));
    socket.once('close', () => resolve(text));
    socket.end(bytes);
  });
}

const ok = async (h: Harness) => {
  expect((await h.get('/api/v1/health')).status).toBe(200);
  expect(uncaught).toEqual([]);
};

describe('HTTP requests reset half-way', () => {
  test('requests reset in their headers, in a JSON body or in a chunked body leave nothing behind and the service answering', async () => {
    const h = await startService();
    opened.push(h);
    const port = h.service.port;
    const json = JSON.stringify({ id: 'x1c-01', name: 'Half', type: 'bambu_lab', model: 'X1C', ip_address: '192.168.1.20', access_code: '12345678', serial_number: '01S00A000000001' });
    const requests = [
      'GET /api/v1/printers HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: appl',
      `POST /api/v1/printers HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${json.length}\r\n\r\n${json.slice(0, 40)}`,
      `POST /api/v1/printers HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n${json.length.toString(16)}\r\n${json.slice(0, 30)}`,
      'GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Ver',
    ];
    for (let i = 0; i < 20; i++) await Promise.all(requests.map((r) => writeAndReset(port, r)));
    // Answers reset as soon as they start: a long list, a 404, an error body.
    const answered = ['GET /api/v1/openapi.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n', 'GET /nowhere HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n', 'POST /api/v1/printers HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{]'];
    for (let i = 0; i < 20; i++) await Promise.all(answered.map((r) => writeAndReset(port, r, true)));
    await ok(h);
    expect((await h.get('/api/v1/printers')).body.printers).toEqual([]);
    // A client that ends its side after half a request (a half-close) still reads why it was refused.
    const answer = await within(halfClose(await rawConnect(port), requests[1]), 5000, 'the answer to a half-closed request');
    expect(answer).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n[^]*\r\n\r\n\{"error":\{"code":"BAD_REQUEST"/);
  });
});

describe('/ws handshakes and frames reset half-way', () => {
  const handshake = 'GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n';
  const clients = async (h: Harness) => Number(/^printfarm_ws_clients (\d+)$/m.exec(await (await fetch(`${h.base}/metrics`)).text())![1]);

  test('resets before the 101, right after it and mid-frame give every connection slot back', async () => {
    const h = await startService({ env: { WS_MAX_CLIENTS_PER_IP: '2' } });
    opened.push(h);
    const port = h.service.port;
    // Half a masked text frame: FIN+text, masked, 100 bytes announced, 10 sent.
    const halfFrame = Buffer.concat([Buffer.from([0x81, 0x80 | 100, 1, 2, 3, 4]), Buffer.alloc(10, 0x41)]);
    for (let i = 0; i < 20; i++) {
      await writeAndReset(port, handshake);
      await writeAndReset(port, handshake, true);
      const socket = await rawConnect(port);
      const upgraded = new Promise((resolve) => socket.once('data', resolve));
      socket.write(handshake);
      await upgraded;
      socket.write(halfFrame, () => socket.resetAndDestroy());
      await new Promise((resolve) => socket.once('close', resolve));
    }
    await until(async () => (await clients(h)) === 0, 'no /ws client left');
    // Both slots of this address are free: two clients get in.
    const sockets = await Promise.all([0, 1].map(() => rawConnect(port)));
    const answers = await Promise.all(
      sockets.map((s) => {
        const first = new Promise<string>((resolve) => s.once('data', (d: Buffer) => resolve(d.toString('latin1'))));
        s.write(handshake);
        return first;
      }),
    );
    expect(answers.map((a) => a.split('\r\n')[0])).toEqual(['HTTP/1.1 101 Switching Protocols', 'HTTP/1.1 101 Switching Protocols']);
    await ok(h);
  });

  test('upgrade requests whose target is no URL are refused, not thrown at the process', async () => {
    const h = await startService();
    opened.push(h);
    // A socket its upgrade listener threw on stays open, and would hold the service's close: cut it first.
    const accepted: net.Socket[] = [];
    h.service.server.on('connection', (s: net.Socket) => accepted.push(s));
    opened.push({ close: () => accepted.forEach((s) => s.destroy()) });
    // The HTTP parser takes these targets; \`new URL(target, base)\` throws on every one of them.
    for (const target of ['//', '///ws', '//[', '//a%', 'http://', 'http://[::1/ws']) {
      const socket = await rawConnect(h.service.port);
      const answer = new Promise<string>((resolve) => {
        let text = '';
        socket.on('data', (d: Buffer) => (text += d.toString('latin1')));
        socket.once('close', () => resolve(text));
      });
      socket.write(handshake.replace('GET /ws ', `GET ${target} `));
      expect((await within(answer, 5000, `the answer to ${target}`)).split('\r\n')[0]).toBe('HTTP/1.1 404 Not Found');
    }
    await ok(h);
  });

  /** Sends `frame` over a fresh /ws connection, over and over, never reading: the write error that ends it, once the service hung up. */
  async function floodUnread(h: Harness, frame: Buffer): Promise<(Error & { code?: string }) | null | undefined> {
    const socket = await rawConnect(h.service.port);
    const upgraded = new Promise((resolve) => socket.once('data', resolve));
    socket.write(handshake);
    await upgraded;
    socket.pause();
    const burst = Buffer.concat(Array.from({ length: Math.ceil(128 * 1024 / frame.length) }, () => frame));
    // The kernel's buffers take megabytes before the service holds a byte of its answers: send until it
    // hangs up (a write fails once it reset the connection), or give up at 64 MB.
    let sent = 0;
    let refused: Error | null | undefined = null;
    while (!refused && sent < 64 * 1024 * 1024) {
      refused = await new Promise<Error | null | undefined>((resolve) => socket.write(burst, resolve));
      sent += burst.length;
    }
    return refused;
  }

  test('a client that sends pings and never reads the pongs is dropped, not buffered for', async () => {
    const h = await startService();
    opened.push(h);
    // Masked ping frames with 125-byte payloads; each asks the server for a 127-byte pong (ws answers them itself).
    const ping = Buffer.concat([Buffer.from([0x89, 0x80 | 125, 9, 8, 7, 6]), Buffer.alloc(125, 0x50)]);
    expect((await floodUnread(h, ping))?.code).toMatch(/^(ECONNRESET|EPIPE)$/);
    await until(async () => (await clients(h)) === 0, 'the ping flooder dropped');
    await ok(h);
  });

  test('a client that sends requests and never reads the answers is dropped, not buffered for', async () => {
    // Once its answers pass the limit it is not read (its requests wait in TCP), and dropped when they stay
    // over it at two checks 200 ms apart (5 s by default).
    const h = await startService({ wsSlowClientMs: 200 });
    opened.push(h);
    // {"type":"ping"} as a text frame (mask 0: the payload as is); each gets a pong frame from the hub.
    const text = Buffer.from('{"type":"ping"}');
    const request = Buffer.concat([Buffer.from([0x81, 0x80 | text.length, 0, 0, 0, 0]), text]);
    expect((await floodUnread(h, request))?.code).toMatch(/^(ECONNRESET|EPIPE)$/);
    await until(async () => (await clients(h)) === 0, 'the flooder dropped');
    expect(h.logs.some((l) => l.msg === 'dropping a /ws client that stopped reading')).toBe(true);
    await ok(h);
  });
});

describe('file bodies', () => {
  test('downloads reset after their first bytes close their files; a download that is not read is not buffered whole', async () => {
    const h = await startService();
    opened.push(h);
    const size = 48 * 1024 * 1024;
    const id = await uploadFile(h.base, 'big.gcode', Buffer.alloc(size, 'G'));
    const request = `GET /api/v1/files/${id}/content HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`;
    await writeAndReset(h.service.port, request, true);
    const before = openDescriptors();
    for (let i = 0; i < 30; i++) await writeAndReset(h.service.port, request, true);
    await until(() => openDescriptors() <= before + 2, `open descriptors back to ${before} (now ${openDescriptors()})`, 5000);

    const serverSockets: net.Socket[] = [];
    const track = (s: net.Socket) => serverSockets.push(s);
    h.service.server.on('connection', track);
    opened.push({ close: () => void h.service.server.off('connection', track) });
    const reader = await rawConnect(h.service.port);
    reader.pause();
    reader.write(request);
    const served = await until(() => serverSockets[0]?.writableNeedDrain && serverSockets[0], 'the server held back by the reader');
    expect(served.writableLength).toBeLessThan(1024 * 1024);
    expect(served.bytesWritten).toBeLessThan(size / 2);
    reader.resetAndDestroy();
    await until(() => served.destroyed, 'the server socket closed');
    await ok(h);
  });
});

describe('uploads', () => {
  test('an upload reset after its file part, before the form ends, leaves no file and no record', async () => {
    const h = await startService();
    opened.push(h);
    const localDir = path.join(h.dataDir, 'files', 'local');
    const stored = () => (fs.existsSync(localDir) ? fs.readdirSync(localDir) : []);
    const B = 'hostile-clients-boundary';
    for (let i = 0; i < 10; i++) {
      const part = `--${B}\r\nContent-Disposition: form-data; name="file"; filename="cut-${i}.gcode"\r\nContent-Type: application/octet-stream\r\n\r\nG28\nG1 X10\n\r\n--${B}\r\n`;
      const socket = await rawConnect(
        h.service.port,
        `POST /api/v1/files/upload HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: multipart/form-data; boundary=${B}\r\nContent-Length: 100000\r\n\r\n${part}`,
      );
      // The file part is complete (and stored under its final name) when the client goes.
      await until(() => stored().some((f) => f.includes(`cut-${i}`) && !f.includes('.part-')), `cut-${i} stored`);
      socket.resetAndDestroy();
      await until(() => stored().length === 0, `cut-${i} removed`);
    }
    expect((await h.get('/api/v1/files?limit=100')).body.files).toEqual([]);
    await ok(h);
  });
});

describe('camera streams', () => {
  test('viewers and snapshot clients that reset mid-answer give their slots back; the camera closes when nobody watches', async () => {
    const p1s = await BambuSimulator.start({ model: 'P1S', ftps: false, cameraIntervalMs: 20 });
    opened.push(p1s);
    const h = await cameraService({ CAMERA_MAX_VIEWERS: '2', CAMERA_MAX_FPS: '30' });
    opened.push(h);
    const id = await addConnected(h, p1s.printerConfig());
    const port = h.service.port;
    const stream = `GET /api/v1/printers/${id}/camera/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`;
    const snapshot = `GET /api/v1/printers/${id}/camera/snapshot HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`;
    for (let i = 0; i < 15; i++) {
      await Promise.all([writeAndReset(port, stream, true), writeAndReset(port, stream, true), writeAndReset(port, snapshot, true)]);
      // Before any answer: the request is in, the frame not yet.
      await Promise.all([writeAndReset(port, stream), writeAndReset(port, snapshot)]);
    }
    // The printer node's relay (nodes/printer-camera.ts) on a Node-RED-like server: browsers that reset it.
    const relay = http.createServer((req, res) => void relayCameraStream(new PrintfarmClient(h.base), id, res));
    await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
    opened.push({ close: () => new Promise((resolve) => (relay.closeAllConnections(), relay.close(resolve))) });
    const relayPort = (relay.address() as AddressInfo).port;
    for (let i = 0; i < 10; i++) await writeAndReset(relayPort, 'GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n', true);
    const hub = h.service.context.cameras;
    await until(() => hub.viewerCount === 0, 'no viewer left');
    // Both viewer slots are free again.
    const viewers = await until(async () => {
      const v = await Promise.all([0, 1].map(() => openStream(h.base, `/api/v1/printers/${id}/camera/stream`)));
      if (v.every((c) => c.status === 200)) return v;
      v.forEach((c) => c.close());
      return null;
    }, 'two viewers admitted');
    viewers.forEach((v) => v.close());
    await until(() => !hub.upstreamOpen(id), 'the camera closed once nobody watches');
    await ok(h);
  });
});

describe('the aggregation service', () => {
  let a: AggregatorHarness;
  beforeEach(async () => {
    a = await startAggregator();
  });
  afterEach(() => a.close());
  const serverConnections = () => new Promise<number>((resolve) => a.agg.server.getConnections((_, n) => resolve(n)));

  /** A TLS connection (over a TCP socket the test can cut under it) that has written `bytes`. */
  async function tlsConnect(bytes: string) {
    const tcp = await rawConnect(a.agg.port);
    const secure = tls.connect({ socket: tcp, rejectUnauthorized: false });
    secure.on('error', () => undefined);
    opened.push({ close: () => void secure.destroy() });
    await new Promise((resolve) => secure.once('secureConnect', resolve));
    if (bytes) await new Promise((resolve) => secure.write(bytes, resolve));
    return { tcp, secure };
  }
  const body = JSON.stringify({ installation_id: 'x'.repeat(36), filler: 'y'.repeat(2000) });
  const halfSubmission = `POST /submit HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-Key: ${API_KEY}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 1000)}`;

  test('TLS handshakes, requests and answers reset half-way do not take it down', async () => {
    for (let i = 0; i < 6; i++) {
      // Not TLS at all; half a ClientHello.
      await writeAndReset(a.agg.port, 'GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
      await writeAndReset(a.agg.port, Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03]));
      // Half a submission; an export reset once its answer starts.
      (await tlsConnect(halfSubmission)).tcp.resetAndDestroy();
      const exp = await tlsConnect('');
      const answered = new Promise((resolve) => exp.secure.once('data', resolve));
      exp.secure.write(`GET /stats/export HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-Key: ${ADMIN_KEY}\r\n\r\n`);
      await answered;
      exp.tcp.resetAndDestroy();
    }
    expect((await a.call('GET', '/health', undefined, null)).status).toBe(200);
    expect(uncaught).toEqual([]);
  });

  test('a client whose connection is cut under its TLS session mid-request leaves no socket open; one that half-closes still reads the 400', async () => {
    for (let i = 0; i < 20; i++) {
      // The TCP connection ends under the TLS session: the service reads an end of stream with no close_notify.
      const { tcp } = await tlsConnect(halfSubmission);
      tcp.resetAndDestroy();
    }
    await until(async () => (await serverConnections()) === 0, 'every cut-off connection closed by the service', 5000);
    // A client that only ends its side (TLS close, then FIN) still reads why it was refused.
    const { secure } = await tlsConnect(halfSubmission);
    const answer = await within(
      new Promise<string>((resolve) => {
        let text = '';
        secure.on('data', (d: Buffer) => (text += d.toString('latin1')));
        secure.once('close', () => resolve(text));
        secure.end();
      }),
      5000,
      'the answer to a half-closed submission',
    );
    expect(answer).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n[^]*\r\n\r\n\{"error":\{"code":"BAD_REQUEST"/);
    expect((await a.call('GET', '/health', undefined, null)).status).toBe(200);
    expect(uncaught).toEqual([]);
  });
});
