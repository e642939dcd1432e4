/**
 * Hostile peers of the LAN discovery and of the client library the Node-RED nodes use, all on loopback with
 * real sockets: anyone on the LAN sending SSDP datagrams (fake printers by the thousand, binary, oversized,
 * control characters in the names), and a broken or hostile "Printfarm server" (a wrong URL, a garbage
 * answer, a body reset half-way or without end, /ws handshakes cut, frames that are malformed or nested
 * deep enough to break whoever handles them). Nothing may reach the process and every wait ends.
 */
import { createHash } from 'node:crypto';
import dgram from 'node:dgram';
import http from 'node:http';
import net from 'node:net';
import pino from 'pino';
import { WebSocketServer } from 'ws';
import { bambuAnnouncement } from '../../service/discovery/bambu-ssdp';
import { probePrusaLink } from '../../service/discovery/prusa-probe';
import { DiscoveryRegistry, MAX_ENTRIES } from '../../service/discovery/registry';
import { SsdpListener } from '../../service/discovery/ssdp-listener';
import { EventBus } from '../../service/events';
import { FarmMonitor, JobEventStream, MAX_FRAME_BYTES, MAX_PRINTERS, MAX_TRACKED_JOBS, PrintfarmClient, PrintfarmError, RealtimeClient, type JobEvent } from '../../service/client';
import { relayCameraStream } from '../../nodes/printer-camera';
import { hostileKit, neverSpeaks, outcome, until } from '../helpers/hostile-socket';

const kit = hostileKit();

/** An HTTP server on 127.0.0.1 port 0 answering with `handler` (its sockets are destroyed after the test). */
async function httpPeer(handler: http.RequestListener): Promise<{ server: http.Server; base: string }> {
  const server = http.createServer(handler);
  const port = await kit.serve(server);
  return { server, base: `http://127.0.0.1:${port}` };
}

/** A raw TCP peer doing `onData(socket, firstBytes)` with what the client sends first. */
async function rawPeer(onData: (s: net.Socket, data: Buffer) => void): Promise<string> {
  const port = await kit.serve(net.createServer((s) => s.once('data', (d) => onData(s, d))));
  return `http://127.0.0.1:${port}`;
}

const code = (e: unknown) => (e instanceof PrintfarmError ? e.code : `not a PrintfarmError: ${String(e)}`);

describe('LAN discovery: SSDP datagrams from anyone', () => {
  test('thousands of fake printers, binary and oversized datagrams: at most MAX_ENTRIES kept, names cleaned, the listener stays up', async () => {
    const bus = new EventBus();
    let events = 0;
    bus.on('discovery_update', () => events++);
    const registry = new DiscoveryRegistry(bus, () => 3600);
    const listener = new SsdpListener(registry, pino({ level: 'silent' }), { port: 0, searchTargets: [] });
    await listener.start();
    kit.cleanups.push(() => listener.close());
    const sender = dgram.createSocket('udp4');
    kit.cleanups.push(() => new Promise<void>((resolve) => sender.close(() => resolve())));
    const send = (b: Buffer) => sender.send(b, listener.port, '127.0.0.1');
    const serial = (i: number) => `FAKE${String(i).padStart(8, '0')}`;
    const fake = (i: number) =>
      Buffer.from(
        bambuAnnouncement({ serial: serial(i), ip: '127.0.0.1', modelCode: 'C12', name: `evil\u0000\u001b[31m<img src=x onerror=alert(1)>${'n'.repeat(200)}` }).toString('latin1'),
        'latin1',
      );
    const junk = [Buffer.alloc(65000, 0xff), Buffer.from(Array.from({ length: 1500 }, (_, i) => (i * 7) % 256)), Buffer.from('NOTIFY * HTTP/1.1\r\n'.repeat(100))];
    const total = MAX_ENTRIES + 200;
    // In batches, each sent again until its last printer is listed (a full socket buffer drops datagrams).
    for (let from = 0; from < total; from += 100) {
      const to = Math.min(total, from + 100);
      await until(`printer ${to - 1} listed`, () => {
        for (let i = from; i < to; i++) send(fake(i));
        for (const j of junk) send(j);
        return registry.find(serial(to - 1)) !== undefined;
      });
    }
    expect(listener.listening).toBe(true);
    expect(listener.ignored).toBeGreaterThan(0);
    expect(registry.size).toBe(MAX_ENTRIES);
    // The longest unseen went first.
    expect(registry.find(serial(0))).toBeUndefined();
    const newest = registry.find(serial(total - 1))!;
    expect(newest.name).not.toMatch(/[\x00-\x1f\x7f]/);
    expect(newest.name!.length).toBeLessThanOrEqual(64);
    expect(newest.serial_number).toBe(serial(total - 1));
    expect(events).toBeLessThan(total);
  });
});

describe('LAN discovery: PrusaLink probes answered by anyone', () => {
  test('garbage, silence, drips, resets, endless or nested bodies: no hit, no escape, the scan ends; a hit keeps only clean short fields', async () => {
    const MiB = 1024 * 1024;
    const ports = [
      await kit.serve(neverSpeaks()),
      await kit.serve(net.createServer((s) => s.once('data', () => s.end(Buffer.from([0xff, 0, 13, 10, 13, 10]))))),
      await kit.serve(net.createServer((s) => s.once('data', () => s.resetAndDestroy()))),
      await kit.serve(net.createServer((s) => s.once('data', () => (s.write('HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\n{"text":'), setImmediate(() => s.resetAndDestroy()))))),
    ];
    for (const body of [(res: http.ServerResponse) => res.end(Buffer.alloc(8 * MiB, 0x20)), (res: http.ServerResponse) => res.end(`{"x":${'['.repeat(7000)}${']'.repeat(7000)}}`)]) {
      ports.push(Number(new URL((await httpPeer((req, res) => (res.writeHead(200, { 'content-type': 'application/json' }), body(res)))).base).port));
    }
    const drip = net.createServer((s) =>
      s.once('data', () => {
        s.write('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n');
        const timer = setInterval(() => (s.destroyed ? clearInterval(timer) : s.write('1\r\n \r\n')), 50);
        s.once('close', () => clearInterval(timer));
      }),
    );
    ports.push(await kit.serve(drip));
    const evil = await httpPeer((req, res) => res.end(JSON.stringify({ text: 'PrusaLink', hostname: `a\u0000\r\nSet-Cookie: x=1\u001b[2J${'h'.repeat(500)}`, firmware: 'f'.repeat(500) })));
    const evilPort = Number(new URL(evil.base).port);
    const hits = await outcome(probePrusaLink([...ports, evilPort].map((port) => ({ ip: '127.0.0.1', port })), new AbortController().signal), 5000);
    expect(hits).toEqual({ resolved: [expect.objectContaining({ port: evilPort })] });
    const [hit] = (hits as { resolved: Array<{ name: string; firmware_version: string }> }).resolved;
    expect(hit.name).not.toMatch(/[\x00-\x1f\x7f]/);
    expect(hit.name.length).toBeLessThanOrEqual(64);
    expect(hit.firmware_version.length).toBeLessThanOrEqual(32);
  });
});

describe('REST client against a broken server', () => {
  test('garbage, silence, not JSON: a PrintfarmError each, within the timeout', async () => {
    const garbage = await rawPeer((s) => s.end(Buffer.from([0, 1, 2, 255, 13, 10, 13, 10])));
    expect(code(await outcome(new PrintfarmClient(garbage).health()))).toBe('NETWORK_ERROR');
    const silent = `http://127.0.0.1:${await kit.serve(neverSpeaks())}`;
    expect(code(await outcome(new PrintfarmClient(silent, { timeoutMs: 300 }).health()))).toBe('TIMEOUT');
    const html = await httpPeer((req, res) => res.end('<html>not the service</html>'));
    expect(code(await outcome(new PrintfarmClient(html.base).health()))).toBe('BAD_RESPONSE');
    // The camera stream: headers that never come end at the client's timeout too.
    expect(code(await outcome(new PrintfarmClient(silent, { timeoutMs: 300 }).printers.cameraStream('p', new AbortController().signal)))).toBe('TIMEOUT');
  });

  test('an answer reset half-way through its body rejects with a PrintfarmError', async () => {
    const base = await rawPeer((s) => {
      s.write('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{"printers":[');
      setImmediate(() => s.resetAndDestroy());
    });
    expect(code(await outcome(new PrintfarmClient(base).printers.list()))).toBe('NETWORK_ERROR');
  });

  test('a body dripping past the timeout rejects with TIMEOUT', async () => {
    const base = await rawPeer((s) => {
      s.write('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n1\r\n[\r\n');
      const timer = setInterval(() => (s.destroyed ? clearInterval(timer) : s.write('1\r\n \r\n')), 20);
      s.once('close', () => clearInterval(timer));
    });
    expect(code(await outcome(new PrintfarmClient(base, { timeoutMs: 300 }).printers.list()))).toBe('TIMEOUT');
  });

  test('a JSON answer without end, or a snapshot of 64 MiB, is refused without being held', async () => {
    const MiB = 1024 * 1024;
    const { base } = await httpPeer((req, res) => {
      let written = 0;
      res.writeHead(200, { 'content-type': req.url!.includes('snapshot') ? 'image/jpeg' : 'application/json' });
      const chunk = Buffer.alloc(MiB, 0x20);
      // 64 MiB of valid JSON (spaces around an empty list): read whole, it would be a good answer.
      res.write('{"printers":[]');
      const more = () => {
        while (written < 64 * MiB && !res.destroyed) {
          written += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', more);
        }
        if (!res.destroyed) res.end('}');
      };
      more();
    });
    const client = new PrintfarmClient(base);
    expect(code(await outcome(client.printers.list()))).toBe('RESPONSE_TOO_LARGE');
    expect(code(await outcome(client.printers.snapshot('p')))).toBe('RESPONSE_TOO_LARGE');
  });
});

/** A "service" whose GET /api/v1/printers lists `printers` and whose /ws does `onWs(ws)`. */
async function wsPeer(printers: unknown[], onWs: (ws: import('ws').WebSocket) => void): Promise<string> {
  const { server, base } = await httpPeer((req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ printers }));
  });
  const wss = new WebSocketServer({ noServer: true });
  server.on('upgrade', (req, socket, head) => wss.handleUpgrade(req, socket, head, onWs));
  kit.cleanups.push(() => new Promise<void>((resolve) => wss.close(() => resolve())));
  return base;
}

describe('/ws client against a broken server', () => {
  test('a handshake reset, answered with a web page, never answered or answered with garbage: connect-failed, nothing escapes, close() ends', async () => {
    const peers = [
      await rawPeer((s) => s.resetAndDestroy()),
      await rawPeer((s) => s.end('HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: 5\r\n\r\nhello')),
      await rawPeer((s) => s.end('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: nope\r\n\r\n\x00\xff\x81')),
      await rawPeer((s) => s.end(Buffer.from([0x89, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]))),
      `http://127.0.0.1:${await kit.serve(neverSpeaks())}`,
    ];
    for (const base of peers) {
      const rt = new RealtimeClient(`${base.replace(/^http/, 'ws')}/ws`, { connectTimeoutMs: 300, reconnectMinMs: 60_000 });
      kit.cleanups.push(() => rt.close());
      const failed = new Promise((resolve) => rt.once('connect-failed', resolve));
      rt.start();
      expect(await outcome(failed, 5000)).toEqual({ resolved: undefined });
      expect(await outcome(rt.close(), 3000)).toEqual({ resolved: undefined });
    }
  });

  test('malformed, binary, huge and deeply nested frames: nothing escapes from the socket and the next good frame is applied', async () => {
    const printer = { id: 'p1', name: 'P1', type: 'bambu_lab', model: 'P1S', status: 'idle', connection_status: 'connected', temperatures: { nozzle: 20, bed: 20 }, current_job: null, is_active: true, last_seen: null };
    const status = (data: Record<string, unknown>) => JSON.stringify({ type: 'printer_status', timestamp: new Date().toISOString(), data: { printer_id: 'p1', name: 'P1', type: 'bambu_lab', ...data } });
    const deep = 100_000;
    const base = await wsPeer([printer], (ws) => {
      ws.on('error', () => undefined);
      ws.send('not json');
      ws.send(Buffer.from([0, 1, 2, 3]), { binary: true });
      ws.send('null');
      ws.send('{"type":5}');
      ws.send(JSON.stringify({ type: 'printer_status', data: 'x' }));
      ws.send(JSON.stringify({ type: 'job_update', data: null }));
      ws.send(JSON.stringify({ type: 'spool_update', data: { id: 1, printer_id: null, __proto__: { polluted: true } } }));
      ws.send(`{"type":"x","data":{"pad":"${'x'.repeat(4 * 1024 * 1024)}"}}`);
      // Nested deeper than any stack: comparing it with what was known overflows the stack.
      ws.send(status({ status: 'error', error: 'DEEP' }).replace('"DEEP"', `{"a":${'['.repeat(deep)}${']'.repeat(deep)}}`));
      ws.send(status({ status: 'printing', job_name: 'after the flood', progress: 5 }));
    });
    const client = new PrintfarmClient(base);
    const monitor = new FarmMonitor(client, { realtimeOptions: { reconnectMinMs: 60_000 } });
    monitor.on('poll-error', () => undefined);
    const jobs = new JobEventStream(monitor);
    kit.cleanups.push(async () => {
      jobs.close();
      await monitor.close();
    });
    await monitor.start();
    await until('the good frame after the bad ones applied', () => monitor.printers.get('p1')?.current_job?.name === 'after the flood');
    expect(kit.escaped).toEqual([]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('/ws client: a frame larger than MAX_FRAME_BYTES', () => {
  test('is refused as too long (the link closes) without being held, and the client connects again', async () => {
    let connections = 0;
    const base = await wsPeer([], (ws) => {
      ws.on('error', () => undefined);
      if (++connections === 1) ws.send(Buffer.alloc(MAX_FRAME_BYTES + 1, 0x20).toString('latin1'));
    });
    const rt = new RealtimeClient(`${base.replace(/^http/, 'ws')}/ws`, { reconnectMinMs: 50, reconnectMaxMs: 50 });
    kit.cleanups.push(() => rt.close());
    const refused = new Promise((resolve) => rt.once('error', (err: { code?: string }) => resolve(err.code)));
    const closed = new Promise((resolve) => rt.once('close', resolve));
    rt.start();
    expect(await outcome(refused, 5000)).toEqual({ resolved: 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH' });
    expect(await outcome(closed, 5000)).toMatchObject({ resolved: expect.any(Number) });
    await until('the second connection', () => connections === 2 && rt.connected);
  });
});

describe('/ws client: a server that goes silent after the handshake', () => {
  test('a connection that answers no ping is dropped (close 1006; reconnect and polling follow as for any drop)', async () => {
    // Completes the handshake, then never reads nor writes again (a half-open link, a hung server).
    const base = await rawPeer((s, data) => {
      const key = /sec-websocket-key:\s*(\S+)/i.exec(data.toString('latin1'))?.[1] ?? '';
      const accept = createHash('sha1').update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64');
      s.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
      s.pause();
    });
    const rt = new RealtimeClient(`${base.replace(/^http/, 'ws')}/ws`, { heartbeatMs: 200, reconnectMinMs: 60_000 });
    kit.cleanups.push(() => rt.close());
    const opened = new Promise((resolve) => rt.once('open', resolve));
    const closed = new Promise((resolve) => rt.once('close', resolve));
    rt.start();
    expect(await outcome(opened, 5000)).toEqual({ resolved: undefined });
    expect(await outcome(closed, 5000)).toEqual({ resolved: 1006 });
    expect(rt.connected).toBe(false);
  });
});

describe('/ws client: a server inventing printers and jobs without end', () => {
  test('the farm monitor and the job event stream keep a bounded number of them', async () => {
    const count = MAX_PRINTERS + 500;
    // The frames come once the monitor has read the (empty) list twice (at start and when /ws opened): a
    // later answer would drop the invented printers again.
    let lists = 0;
    let listed: () => void;
    const twice = new Promise<void>((resolve) => (listed = resolve));
    const { server, base } = await httpPeer((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ printers: [] }), () => ++lists === 2 && listed());
    });
    const wss = new WebSocketServer({ noServer: true });
    kit.cleanups.push(() => new Promise<void>((resolve) => wss.close(() => resolve())));
    server.on('upgrade', (req, socket, head) =>
      wss.handleUpgrade(req, socket, head, async (ws) => {
        ws.on('error', () => undefined);
        await twice;
        for (let i = 0; i < count; i++) {
          ws.send(JSON.stringify({ type: 'printer_status', data: { printer_id: `ghost-${i}`, name: `Ghost ${i}`, type: 'bambu_lab', status: 'idle' } }));
          ws.send(JSON.stringify({ type: 'job_update', data: { job_id: i + 1, printer_id: `ghost-${i}`, change: 'status', status: 'printing', progress: 1 } }));
        }
        ws.send(JSON.stringify({ type: 'job_update', data: { job_id: count + 1, printer_id: 'last', change: 'status', status: 'printing' } }));
      }),
    );
    const monitor = new FarmMonitor(new PrintfarmClient(base), { realtimeOptions: { reconnectMinMs: 60_000 } });
    monitor.on('poll-error', () => undefined);
    const jobs = new JobEventStream(monitor);
    let last = false;
    jobs.on('event', (e: JobEvent) => (last ||= e.job_id === count + 1));
    kit.cleanups.push(async () => {
      jobs.close();
      await monitor.close();
    });
    await monitor.start();
    await until('the last frame heard', () => last, 15_000);
    expect(monitor.printers.size).toBeLessThanOrEqual(MAX_PRINTERS);
    // What the stream remembers of unfinished jobs (white box: nothing else shows it).
    expect((jobs as unknown as { jobs: Map<number, unknown> }).jobs.size).toBeLessThanOrEqual(MAX_TRACKED_JOBS);
  }, 30_000);
});

describe('camera relay (printer node) with an upstream that resets mid-stream', () => {
  test('the browser gets its answer ended and the relay lets go', async () => {
    const upstream = await rawPeer((s) => {
      s.write('HTTP/1.1 200 OK\r\ncontent-type: multipart/x-mixed-replace; boundary=frame\r\ntransfer-encoding: chunked\r\n\r\n');
      s.write('1a\r\n--frame\r\ncontent-type: ima\r\n');
      setImmediate(() => s.resetAndDestroy());
    });
    let relayed: Promise<void> | null = null;
    const { base } = await httpPeer((req, res) => void (relayed = relayCameraStream(new PrintfarmClient(upstream), 'p1', res)));
    const browser = await new Promise<{ status: number; ended: Promise<string> }>((resolve, reject) => {
      http.get(base, (res) => {
        const ended = new Promise<string>((done) => {
          res.on('data', () => undefined);
          res.once('end', () => done('end'));
          res.once('error', () => done('error'));
          res.once('close', () => done('close'));
        });
        resolve({ status: res.statusCode!, ended });
      }).on('error', reject);
    });
    expect(browser.status).toBe(200);
    expect(await outcome(browser.ended, 5000)).toEqual({ resolved: expect.any(String) });
    expect(await outcome(relayed!, 5000)).toEqual({ resolved: undefined });
  });
});
