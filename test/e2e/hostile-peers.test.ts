/**
 * Hostile peers of the service's OUTBOUND connections, as raw sockets on
 * loopback: a webhook target, Moonraker and PrusaLink over HTTP, the Bambu
 * MQTT broker and camera, Moonraker's WebSocket, Spoolman and the usage
 * aggregator. They reset during the TLS handshake or half-way through an
 * answer, drip their answer a byte at a time, stream without end or never
 * speak. Whatever they do, the real module under test gives up within its
 * deadline with an error of its own, lets go of its sockets and files, and
 * nothing reaches the process.
 */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import pino from 'pino';
import { BambuTlsSource } from '../../service/cameras/bambu-tls';
import { CameraError } from '../../service/cameras/source';
import { SpoolmanClient, SpoolmanError } from '../../service/filament/spoolman/client';
import { WebhookSender, type WebhookResult } from '../../service/notify/webhooks';
import { MqttConnection } from '../../service/printers/bambu/mqtt-connection';
import { DriverError } from '../../service/printers/driver';
import { MoonrakerHttp } from '../../service/printers/klipper/http';
import { RpcLink } from '../../service/printers/klipper/rpc';
import { PrusaHttpClient } from '../../service/printers/prusa/http';
import { BambuSimulator } from '../../service/simulators/bambu';
import { AttemptError, requestJson } from '../../service/usage/submitter';
import type { Notification } from '../../service/notify/kinds';
import { drip, hostileKit, neverSpeaks, outcome, resetOnHello, tcpOf, until } from '../helpers/hostile-socket';

const kit = hostileKit();
const { serve, cleanups } = kit;
let credentials: { key: string; cert: string };
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hostile-peers-'));

beforeAll(async () => {
  credentials = await BambuSimulator.tlsCredentials('01P00A000000042');
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const note = {
  kind: 'print_finished',
  title: 'P1: print finished',
  message: 'Job 1 finished on P1.',
  printer_id: 'p1',
  printer_name: 'P1',
  severity: 'info',
  at: new Date().toISOString(),
  data: {},
  texts: {},
} as unknown as Notification;

function webhooks(port: number, results: WebhookResult[]): WebhookSender {
  const sender = new WebhookSender(() => [{ url: `http://127.0.0.1:${port}/hook`, kinds: [] }], (r) => results.push(r), pino({ level: 'silent' }), { timeoutMs: 300, retries: 0 });
  cleanups.push(() => sender.close());
  return sender;
}

/** Which of this process's file descriptors are open on `file`. */
const descriptorsOn = (file: string): string[] =>
  fs.readdirSync('/proc/self/fd').filter((fd) => {
    try {
      return fs.readlinkSync(`/proc/self/fd/${fd}`) === file;
    } catch {
      return false;
    }
  });

describe('a webhook target', () => {
  test('that drips its answer headers a byte at a time: the attempt ends at its timeout and counts as failed', async () => {
    const port = await serve(net.createServer((s) => drip(s, 'HTTP/1.1 200 OK\r\nX-Slow: ')));
    const results: WebhookResult[] = [];
    webhooks(port, results).send(note);
    await until('the attempt to fail', () => results.length > 0);
    expect(results).toEqual(['failed']);
  });

  test('that answers 200 and streams its body without end: counted sent, and its connection is closed, not kept', async () => {
    let open = 0;
    const port = await serve(
      net.createServer((s) => {
        open++;
        s.once('close', () => open--);
        drip(s, 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n', '1\r\nx\r\n');
      }),
    );
    const results: WebhookResult[] = [];
    webhooks(port, results).send(note);
    await until('the delivery', () => results.length > 0);
    expect(results).toEqual(['sent']);
    await until('the connection to close', () => open === 0);
  });
});

describe('Moonraker over HTTP', () => {
  test.each([
    ['its headers', 'HTTP/1.1 200 OK\r\nX-Slow: '],
    ['its body', 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"result":"'],
  ])('dripping %s a byte at a time: a JSON request is a TIMEOUT at its deadline, not a wait without end', async (_what, head) => {
    const port = await serve(net.createServer((s) => drip(s, head)));
    const http = new MoonrakerHttp({ host: '127.0.0.1', port, apiKey: null, timeoutMs: 300 });
    cleanups.push(() => http.close());
    const err = await outcome(http.json('GET', '/server/info'));
    expect(err).toBeInstanceOf(DriverError);
    expect((err as DriverError).code).toBe('TIMEOUT');
  });

  test('resetting an upload half-way: the upload fails OFFLINE and the local file is closed again', async () => {
    const file = path.join(dir, 'upload.gcode');
    fs.writeFileSync(file, Buffer.alloc(8 * 1024 * 1024, 0x47));
    const port = await serve(
      net.createServer((s) => {
        let got = 0;
        s.on('data', (chunk) => {
          got += chunk.length;
          if (got > 200_000 && !s.destroyed) s.resetAndDestroy();
        });
      }),
    );
    const http = new MoonrakerHttp({ host: '127.0.0.1', port, apiKey: null, timeoutMs: 2000 });
    cleanups.push(() => http.close());
    const err = await outcome(http.upload({ fields: { root: 'gcodes' }, fileName: 'upload.gcode', localPath: file }, 2000));
    expect((err as DriverError).code).toBe('OFFLINE');
    await until('no descriptor left open on the local file', () => descriptorsOn(file).length === 0);
  });
});

describe('plain HTTP peers that break mid-answer (Moonraker, PrusaLink, Spoolman)', () => {
  const answers = {
    'resets in the middle of the headers': (s: net.Socket) => s.write('HTTP/1.1 200 OK\r\nContent-Le', () => s.resetAndDestroy()),
    'resets in the middle of the body': (s: net.Socket) => s.write('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"result":', () => s.resetAndDestroy()),
    'closes in the middle of the body': (s: net.Socket) => s.end('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"result":'),
    'accepts and never answers': () => undefined,
  };
  test.each(Object.keys(answers) as (keyof typeof answers)[])('a peer that %s: every client fails with its own error, within its deadline', async (kind) => {
    const port = await serve(net.createServer((s) => s.once('data', () => answers[kind](s))));
    const moonraker = new MoonrakerHttp({ host: '127.0.0.1', port, apiKey: null, timeoutMs: 500 });
    const prusa = new PrusaHttpClient({ host: '127.0.0.1', port, username: 'maker', password: 'code', authMethod: 'api_key', timeoutMs: 500 });
    cleanups.push(() => moonraker.close(), () => prusa.close());
    for (const work of [
      () => moonraker.json('GET', '/server/info'),
      () => moonraker.download('/server/files/gcodes/a.gcode', path.join(dir, `m-${kind}`), 1e6),
      () => prusa.json('/api/v1/status'),
      () => prusa.download('/api/v1/files/usb/A.BGC', path.join(dir, `p-${kind}`)),
    ]) {
      const err = await outcome(work());
      expect(err).toBeInstanceOf(DriverError);
      expect(['OFFLINE', 'TIMEOUT']).toContain((err as DriverError).code);
    }
    expect(fs.readdirSync(dir).filter((f) => f.endsWith(kind))).toEqual([]);
    // Spoolman's client (fetch): its own error, a body cut short too (undici says TypeError "terminated").
    expect(await outcome(new SpoolmanClient(`http://127.0.0.1:${port}`, 500).spools())).toBeInstanceOf(SpoolmanError);
  });
});

describe('TLS and WebSocket peers that reset or fall silent', () => {
  const peers = {
    'resets during the TLS handshake (or the upgrade request)': resetOnHello,
    'accepts TCP and never speaks': neverSpeaks,
    'completes TLS, then resets after half a packet': () =>
      tls.createServer({ ...credentials }, (s) => s.once('data', () => s.write(Buffer.from([0x20, 0x02, 0x00, 0x00, 0x30, 0x50, 0x00]), () => setImmediate(() => tcpOf(s).resetAndDestroy())))),
    'answers half an HTTP upgrade, then resets': () => net.createServer((s) => s.once('data', () => s.write('HTTP/1.1 101 Switching Protocols\r\nUpgr', () => s.resetAndDestroy()))),
  };
  test.each(Object.keys(peers) as (keyof typeof peers)[])('a peer that %s', async (kind) => {
    const port = await serve(peers[kind]());
    // The Bambu MQTT connection: closes (the session's connect deadline covers a broker that never speaks).
    const closed = new Promise<string>((resolve) => {
      const conn = new MqttConnection(
        { host: '127.0.0.1', port, clientId: 'hostile', username: 'bblp', password: '12345678', keepaliveSeconds: 1, maxPacketBytes: 1 << 20, tls: { rejectUnauthorized: false, maxVersion: 'TLSv1.2' } },
        { connack: () => undefined, message: () => undefined, error: () => undefined, refused: () => undefined, close: () => resolve('closed') },
        (fn) => fn,
      );
      cleanups.push(() => conn.end());
    });
    if (kind !== 'accepts TCP and never speaks') expect(await outcome(closed)).toEqual({ resolved: 'closed' });
    // The Bambu camera: one CameraError.
    const camera = new BambuTlsSource({ host: '127.0.0.1', port, accessCode: '12345678', connectTimeoutMs: 500 });
    cleanups.push(() => camera.close());
    expect(await outcome(new Promise((_, reject) => (camera.onError(reject), camera.start())))).toBeInstanceOf(CameraError);
    // Moonraker's WebSocket: open() rejects.
    const rpc = new RpcLink({ url: `ws://127.0.0.1:${port}/websocket`, headers: {}, connectTimeoutMs: 500, requestTimeoutMs: 500, maxFrameBytes: 1 << 20, maxPending: 4, maxFramesPerSecond: 100, pingMs: 200, silenceMs: 500 });
    cleanups.push(() => rpc.close());
    expect(await outcome(rpc.open())).toBeInstanceOf(DriverError);
    // The usage aggregator (HTTPS): an AttemptError.
    expect(await outcome(requestJson('POST', new URL(`https://127.0.0.1:${port}/v1/submissions`), {}, { apiKey: 'k', timeoutMs: 500 }))).toBeInstanceOf(AttemptError);
  });
});
