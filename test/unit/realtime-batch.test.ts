/**
 * The /ws hub holds the frames of one event-loop turn and sends them in few
 * socket writes (a report's frame is small; the write is what costs): at most
 * BATCH_MAX frames wait, in order, and it flushes what it holds when it closes.
 */
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { EventBus } from '../../service/events';
import { BATCH_MAX, RealtimeHub } from '../../service/realtime';
import { connectWs, type WsClient } from '../helpers/ws';

const log = pino({ level: 'silent' });

describe('/ws frames of one turn', () => {
  let server: http.Server;
  let hub: RealtimeHub;
  let bus: EventBus;
  let client: WsClient | null = null;
  const writes = { count: 0, port: -1 };
  const proto = net.Socket.prototype as unknown as Record<'_writev' | '_write', (...args: unknown[]) => unknown>;
  const original = { writev: proto._writev, write: proto._write };

  beforeEach(async () => {
    writes.count = 0;
    // Counts the writes of the hub's socket to our client (stream implementers' hooks: one call per write to the kernel).
    proto._writev = function (this: net.Socket, ...args: unknown[]) {
      if (this.remotePort === writes.port) writes.count++;
      return original.writev.apply(this, args);
    };
    proto._write = function (this: net.Socket, ...args: unknown[]) {
      if (this.remotePort === writes.port) writes.count++;
      return original.write.apply(this, args);
    };
    bus = new EventBus();
    hub = new RealtimeHub(bus, log);
    server = http.createServer();
    hub.attach(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    client = await connectWs(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    writes.port = (client.socket as unknown as { _socket: net.Socket })._socket.localPort!;
  });

  afterEach(async () => {
    proto._writev = original.writev;
    proto._write = original.write;
    await client?.close();
    await hub.close();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const status = (i: number) => ({ printer_id: `p-${i}`, change: 'state' as const, status: 'online', connection_status: 'connected', progress: i % 100, temperatures: { nozzle: 200 + i, bed: 60 } });

  test('the frames of a quiet turn leave in one write when the turn ends', async () => {
    const n = BATCH_MAX - 1;
    for (let i = 0; i < n; i++) bus.emit('printer_status', status(i));
    expect(writes.count).toBe(0); // held until the turn ends
    await client!.next((f) => f.data.printer_id === `p-${n - 1}`);
    expect(client!.frames.map((f) => f.data.printer_id)).toEqual(Array.from({ length: n }, (_, i) => `p-${i}`));
    expect(writes.count).toBe(1);
    // The next turn's frames go out in a write of their own, after these.
    bus.emit('printer_status', status(n));
    await client!.next((f) => f.data.printer_id === `p-${n}`);
    expect(writes.count).toBe(2);
  });

  test('a busy turn does not hold its first frames to its end: at most BATCH_MAX wait, in order', async () => {
    for (let i = 0; i < 200; i++) bus.emit('printer_status', status(i));
    // Frames already left during the turn.
    expect(writes.count).toBeGreaterThanOrEqual(1);
    const last = await client!.next((f) => f.data.printer_id === 'p-199');
    expect(last.data).toMatchObject({ temperatures: { nozzle: 399, bed: 60 } });
    expect(client!.frames.map((f) => f.data.printer_id)).toEqual(Array.from({ length: 200 }, (_, i) => `p-${i}`));
    // One write per BATCH_MAX frames at the most (fewer when the kernel still holds a write and the rest queue up).
    expect(writes.count).toBeGreaterThanOrEqual(2);
    expect(writes.count).toBeLessThanOrEqual(Math.ceil(200 / BATCH_MAX));
  });

  test('frames held when the hub closes are sent before the close frame', async () => {
    const closed = new Promise<number>((resolve) => client!.socket.once('close', (code) => resolve(code)));
    for (let i = 0; i < 10; i++) bus.emit('printer_status', status(i));
    await hub.close();
    expect(await closed).toBe(1001);
    expect(client!.frames.map((f) => f.data.printer_id)).toEqual(Array.from({ length: 10 }, (_, i) => `p-${i}`));
    hub = new RealtimeHub(bus, log); // afterEach closes a hub
  });
});
