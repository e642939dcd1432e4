/**
 * What the /ws hub queues for a client, and when it gives up on one. A client in the service's own process
 * (the Node-RED config node's) cannot read while a turn of the event loop publishes: a burst of frames in one
 * turn piles up for it beyond the backlog limit, and it must not be taken for a client that stopped reading.
 * A client that really stopped reading is still dropped once its backlog stays over the limit.
 */
import net from 'node:net';
import { RealtimeClient } from '../../service/client/realtime';
import type { Frame } from '../../service/client/types';
import type { JobUpdateEvent, PrinterStatusEvent } from '../../service/events';
import { until } from '../helpers/farm';
import { prusa, startService, type Harness } from '../helpers/service';
import { connectWs, type WsClient } from '../helpers/ws';

const LIMIT = 4 * 1024 * 1024;

describe('/ws backlog', () => {
  let h: Harness;
  const clients: RealtimeClient[] = [];
  const opened: WsClient[] = [];
  const raw: net.Socket[] = [];
  afterEach(async () => {
    for (const socket of raw.splice(0)) socket.destroy();
    for (const c of clients.splice(0)) await c.close();
    for (const ws of opened.splice(0)) {
      // A paused socket would not see the close handshake.
      (ws.socket as unknown as { _socket?: { resume(): void } })._socket?.resume();
      await ws.close();
    }
    await h.close();
  });

  /** A RealtimeClient (what the config node follows /ws with) of this process, open, with the frames it got. */
  async function follow(): Promise<{ client: RealtimeClient; frames: Frame[]; closes: number[] }> {
    const client = new RealtimeClient(h.base.replace(/^http/, 'ws') + '/ws', { reconnectMinMs: 60_000 });
    clients.push(client);
    const frames: Frame[] = [];
    const closes: number[] = [];
    client.on('frame', (f: Frame) => frames.push(f));
    client.on('close', (code: number) => closes.push(code));
    const opened = new Promise((resolve) => client.once('open', resolve));
    client.start();
    await opened;
    return { client, frames, closes };
  }

  /** Resolves once `frames` holds `count` frames that match (checked as they come). */
  function framesCome(client: RealtimeClient, frames: Frame[], match: (f: Frame) => boolean, count: number): Promise<void> {
    let n = frames.filter(match).length;
    if (n >= count) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const onFrame = (f: Frame) => {
        if (match(f) && ++n >= count) done(null);
      };
      const onClose = () => done(new Error(`the connection closed after ${n} of ${count} frames`));
      const done = (err: Error | null) => {
        client.off('frame', onFrame);
        client.off('close', onClose);
        if (err) reject(err);
        else resolve();
      };
      client.on('frame', onFrame);
      client.on('close', onClose);
    });
  }

  const logged = (msg: string) => h.logs.filter((l) => l.msg === msg).length;
  const OVER = 'a /ws client has more than the limit queued: dropped unless it drains';
  const DRAINED = 'a /ws client drained its backlog';
  const DROPPED = 'dropping a /ws client that stopped reading';

  test('a burst of frames over the backlog limit in one turn: a client in the service\'s own process stays connected and gets every frame in order, a client that stopped reading is dropped', async () => {
    h = await startService();
    await h.post('/api/v1/printers', prusa('mk4-01', { is_active: false }));
    const job = await h.post('/api/v1/jobs', { printer_id: 'mk4-01', job_name: 'Gear', status: 'printing' });
    const follower = await follow();
    // A dashboard elsewhere that stopped reading: its TCP socket takes nothing more.
    const stalled = await connectWs(h.base);
    opened.push(stalled);
    const stalledTcp = (stalled.socket as unknown as { _socket: { pause(): void; resume(): void } })._socket;
    stalledTcp.pause();

    // A farm reconnecting: 60 000 job updates and 12 000 printer reports in one turn, about 14 MB of frames,
    // while the follower (this process) cannot read before the turn ends. The kernel takes a few MB of them
    // (loopback buffers); the rest is the service's backlog for the follower, over the 4 MiB limit.
    const N = 60_000;
    const bus = h.service.context.bus;
    let bytes = 0;
    const countBytes = (type: string, data: object) => (bytes += JSON.stringify({ type, timestamp: new Date().toISOString(), data }).length);
    for (let i = 0; i < N; i++) {
      const update: JobUpdateEvent = { id: job.body.id, job_id: job.body.id, printer_id: 'mk4-01', change: 'progress', status: 'printing', progress: Math.floor((i * 100) / N), sequence: i };
      bus.emit('job_update', update);
      countBytes('job_update', update);
      if (i % 5) continue;
      const report: PrinterStatusEvent = { printer_id: 'mk4-01', change: 'state', status: 'printing', connection_status: 'connected', progress: update.progress, temperatures: { nozzle: 215, bed: 60 }, sequence: i };
      bus.emit('printer_status', report, true);
      countBytes('printer_status', report);
    }
    expect(bytes).toBeGreaterThan(3 * LIMIT);

    const sequence = (type: string) => (f: Frame) => f.type === type && typeof f.data.sequence === 'number';
    await framesCome(follower.client, follower.frames, sequence('job_update'), N);
    await framesCome(follower.client, follower.frames, sequence('printer_status'), N / 5);
    expect(follower.frames.filter(sequence('job_update')).map((f) => f.data.sequence)).toEqual([...Array(N).keys()]);
    expect(follower.frames.filter(sequence('printer_status')).map((f) => f.data.sequence)).toEqual([...Array(N).keys()].filter((i) => i % 5 === 0));

    // Both were over the limit; at the checks the follower had drained and is read again, the stalled one had not.
    const stalledClosed = new Promise<number>((resolve) => stalled.socket.once('close', (code) => resolve(code)));
    await until(() => logged(DRAINED) === 1 && logged(DROPPED) === 1, 'the checks of both backlogs', 30_000);
    expect(logged(OVER)).toBe(2);
    expect(follower.closes).toEqual([]);
    expect(follower.client.connected).toBe(true);
    const subscribed = new Promise<Frame>((resolve) => follower.client.once('frame', resolve));
    follower.client.subscribe(['mk4-01']);
    expect(await subscribed).toMatchObject({ type: 'subscribed', data: { printer_ids: ['mk4-01'] } });
    stalledTcp.resume();
    expect(await stalledClosed).toBe(1006);
  }, 60_000);

  test('a client that sends requests and never reads the answers is not read while over the limit: what waits for it when it is dropped stays near the limit', async () => {
    // Two checks a second apart: time enough for a flood to have had megabytes of answers queued if it were read.
    h = await startService({ wsSlowClientMs: 1000 });
    const socket = net.connect(h.service.port, '127.0.0.1');
    raw.push(socket);
    socket.on('error', () => undefined);
    await new Promise((resolve) => socket.once('connect', resolve));
    const upgraded = new Promise((resolve) => socket.once('data', resolve));
    socket.write('GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n');
    await upgraded;
    socket.pause();
    // {"type":"ping"} as masked text frames (mask 0), each answered with a pong frame; sent until the service hangs up.
    const text = Buffer.from('{"type":"ping"}');
    const frame = Buffer.concat([Buffer.from([0x81, 0x80 | text.length, 0, 0, 0, 0]), text]);
    const burst = Buffer.concat(Array.from({ length: Math.ceil((128 * 1024) / frame.length) }, () => frame));
    let refused: (Error & { code?: string }) | null | undefined = null;
    for (let sent = 0; !refused && sent < 256 * 1024 * 1024; sent += burst.length) {
      refused = await new Promise<Error | null | undefined>((resolve) => socket.write(burst, resolve));
    }
    expect(refused?.code).toMatch(/^(ECONNRESET|EPIPE)$/);
    const dropped = h.logs.filter((l) => l.msg === DROPPED);
    expect(dropped).toHaveLength(1);
    // Read on, the flood had tens of megabytes of answers queued by the second check.
    expect(dropped[0].buffered).toBeLessThan(LIMIT + 1024 * 1024);
  });
});
