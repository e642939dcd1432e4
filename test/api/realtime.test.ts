import net from 'node:net';
import WebSocket from 'ws';
import { bambu, prusa, startService, type Harness } from '../helpers/service';
import { until } from '../helpers/farm';
import { connectWs, type Frame } from '../helpers/ws';

describe('/ws real-time channel', () => {
  let h: Harness;
  afterEach(() => h.close());

  test('a client sees printer_status when a printer is created, changed and deleted', async () => {
    h = await startService();
    const ws = await connectWs(h.base);
    await h.post('/api/v1/printers', bambu());
    const created = await ws.next((f) => f.type === 'printer_status' && f.data.change === 'created');
    expect(created).toEqual({
      type: 'printer_status',
      timestamp: expect.any(String),
      data: expect.objectContaining({
        printer_id: 'x1c-01',
        status: 'configuring',
        progress: expect.any(Number),
        temperatures: { nozzle: expect.any(Number), bed: expect.any(Number) },
      }),
    });
    expect(Date.parse(created.timestamp)).not.toBeNaN();
    await h.put('/api/v1/printers/x1c-01', { name: 'Renamed' });
    await ws.next((f) => f.type === 'printer_status' && f.data.change === 'updated' && f.data.name === 'Renamed');
    await h.del('/api/v1/printers/x1c-01');
    await ws.next((f) => f.type === 'printer_status' && f.data.change === 'deleted');
    // No frame carries the access code.
    expect(JSON.stringify(ws.frames)).not.toContain('12345678');
    await ws.close();
  });

  test('job changes send job_update', async () => {
    h = await startService();
    await h.post('/api/v1/printers', prusa('mk4-01', { is_active: false }));
    const ws = await connectWs(h.base);
    const job = await h.post('/api/v1/jobs', { printer_id: 'mk4-01', job_name: 'Gear', status: 'printing' });
    const created = await ws.next((f) => f.type === 'job_update' && f.data.change === 'created');
    expect(created.data).toMatchObject({ id: job.body.id, job_id: job.body.id, printer_id: 'mk4-01', status: 'printing', progress: 0 });
    await h.post(`/api/v1/jobs/${job.body.id}/cancel`);
    const cancelled = await ws.next((f) => f.type === 'job_update' && f.data.change === 'cancelled');
    expect(cancelled.data.status).toBe('cancelled');
    await ws.close();
  });

  test('subscribe narrows printer events to the chosen printers', async () => {
    h = await startService();
    const ws = await connectWs(h.base);
    ws.send({ type: 'subscribe', printer_ids: ['mk4-01'] });
    const ack = await ws.next((f) => f.type === 'subscribed');
    expect(ack.data).toEqual({ printer_ids: ['mk4-01'] });
    await h.post('/api/v1/printers', bambu());
    await h.post('/api/v1/printers', prusa());
    await ws.next((f) => f.type === 'printer_status' && f.data.printer_id === 'mk4-01');
    // Frames arrive in order: the Bambu printer's frame, sent first, would be here already.
    expect(ws.frames.filter((f: Frame) => f.type === 'printer_status').map((f) => f.data.printer_id)).toEqual(['mk4-01']);

    ws.send({ type: 'subscribe', printer_ids: [] });
    await ws.next((f) => f.type === 'subscribed' && f.data.printer_ids === null);
    await h.put('/api/v1/printers/x1c-01', { name: 'Everyone again' });
    await ws.next((f) => f.type === 'printer_status' && f.data.printer_id === 'x1c-01');
    await ws.close();
  });

  test('bad client frames get an error frame and the connection stays usable', async () => {
    h = await startService();
    const ws = await connectWs(h.base);
    ws.send('not json');
    await ws.next((f) => f.type === 'error');
    ws.send({ type: 'subscribe', printer_ids: 'all' });
    await ws.next((f) => f.type === 'error' && /printer_ids/.test(String(f.data.message)));
    ws.send({ type: 'ping' });
    await ws.next((f) => f.type === 'pong');
    await ws.close();
  });

  test('other paths are not upgraded', async () => {
    h = await startService();
    const socket = new WebSocket(h.base.replace('http', 'ws') + '/elsewhere');
    socket.on('error', () => undefined);
    const status = await new Promise<number>((resolve) =>
      socket.on('unexpected-response', (req, res) => {
        res.resume();
        req.destroy();
        resolve(res.statusCode ?? 0);
      }),
    );
    expect(status).toBe(404);
  });

  test('a client that resets the connection after an upgrade is refused does not take the service down', async () => {
    h = await startService();
    const { port } = new URL(h.base);
    // Node leaves an upgraded socket without an error listener: an RST from the peer while the refusal is
    // written (or after it) would be an uncaught exception in the service's process, which is this test's.
    for (let i = 0; i < 30; i++) {
      await new Promise<void>((resolve) => {
        const socket = net.connect(Number(port), '127.0.0.1', () =>
          socket.write(`GET /elsewhere HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`),
        );
        socket.on('error', () => undefined);
        socket.once('data', () => {
          socket.resetAndDestroy();
          resolve();
        });
      });
    }
    await new Promise((r) => setTimeout(r, 100));
    expect((await h.get('/api/v1/health')).status).toBe(200);
  });

  test('heartbeats drop a client that stops answering pings', async () => {
    h = await startService({ heartbeatMs: 50 });
    const ws = await connectWs(h.base);
    // A dead peer: the socket stays open but never answers pings.
    (ws.socket as unknown as { _receiver: { removeAllListeners(e: string): void } })._receiver.removeAllListeners('ping');
    ws.socket.pong = () => undefined;
    const closed = new Promise<number>((resolve) => ws.socket.once('close', (code) => resolve(code)));
    expect(await closed).toBe(1006);
  });

  test('a client that stops reading is dropped once too much stays queued for it; the others get every frame', async () => {
    // Over the limit at two checks 200 ms apart: dropped (the default period is 5 s).
    h = await startService({ wsSlowClientMs: 200 });
    const stuck = await connectWs(h.base);
    const reader = await connectWs(h.base);
    // The stuck client's TCP socket stops reading: frames pile up in the kernel, then in the server's queue.
    const tcp = (stuck.socket as unknown as { _socket: { pause(): void; resume(): void } })._socket;
    tcp.pause();
    const clients = async () => Number(/^printfarm_ws_clients (\d+)$/m.exec(await (await fetch(`${h.base}/metrics`)).text())![1]);
    expect(await clients()).toBe(2);
    const big = 'x'.repeat(100_000);
    let emitted = 0;
    const over = () => h.logs.some((l) => l.msg === 'a /ws client has more than the limit queued: dropped unless it drains');
    while (emitted < 400 && !over()) {
      h.service.context.bus.emit('system_alert', { level: 'info', code: 'TEST', message: big, sequence: emitted++ } as never);
      // Let the socket write between events, as real events come spread over time.
      await new Promise((r) => setImmediate(r));
    }
    expect(over()).toBe(true);
    // Nothing more is sent: what is queued stays queued, and the client is dropped at the second check.
    await until(async () => (await clients()) === 1, 'the stuck client dropped');
    await reader.next((f) => f.type === 'system_alert' && f.data.sequence === emitted - 1, 10_000);
    expect(reader.frames.filter((f) => f.type === 'system_alert').map((f) => f.data.sequence)).toEqual([...Array(emitted).keys()]);
    const closed = new Promise<number>((resolve) => stuck.socket.once('close', (code) => resolve(code)));
    tcp.resume();
    expect(await closed).toBe(1006);
    expect(h.logs.some((l) => l.msg === 'dropping a /ws client that stopped reading')).toBe(true);
    await reader.close();
  });

  test('closing the service closes client connections with 1001', async () => {
    h = await startService();
    const ws = await connectWs(h.base);
    const closed = new Promise<number>((resolve) => ws.socket.once('close', (code) => resolve(code)));
    await h.stop();
    expect(await closed).toBe(1001);
  });
});
