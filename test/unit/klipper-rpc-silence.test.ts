/**
 * The Moonraker link's silence watchdog (service/printers/klipper/rpc.ts): frames keep the link up however
 * long it lasts, and a peer that stops answering (no frame, no pong) ends it after `silenceMs`.
 */
import type { AddressInfo } from 'node:net';
import WebSocket, { WebSocketServer } from 'ws';
import { RpcLink } from '../../service/printers/klipper/rpc';

const SILENCE_MS = 300;

describe('RpcLink silence', () => {
  let server: WebSocketServer;
  let peers: WebSocket[] = [];
  beforeEach(async () => {
    server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await new Promise<void>((resolve) => server.once('listening', () => resolve()));
    server.on('connection', (ws) => peers.push(ws));
  });
  afterEach(async () => {
    for (const ws of peers) ws.terminate();
    peers = [];
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const open = async () => {
    const link = new RpcLink({
      url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}/websocket`,
      headers: {},
      connectTimeoutMs: 1000,
      requestTimeoutMs: 1000,
      maxFrameBytes: 1 << 20,
      maxPending: 10,
      maxFramesPerSecond: 1000,
      // Pings far apart: only frames keep the link alive here.
      pingMs: 60_000,
      silenceMs: SILENCE_MS,
    });
    const closed = new Promise<string>((resolve) => link.once('closed', (reason: string) => resolve(reason)));
    await link.open();
    return { link, closed };
  };

  it('stays up while frames come, for several silence periods', async () => {
    const { link, closed } = await open();
    let ended: string | null = null;
    void closed.then((r) => (ended = r));
    const notifications: string[] = [];
    link.on('notification', (method: string) => notifications.push(method));
    for (let i = 0; i < 12; i++) {
      peers[0].send(JSON.stringify({ jsonrpc: '2.0', method: 'notify_status_update', params: [{}, i] }));
      await new Promise((r) => setTimeout(r, SILENCE_MS / 3));
    }
    expect(ended).toBeNull();
    expect(notifications).toHaveLength(12);
    link.close();
  });

  it('ends the link when the peer stops answering pings and sends nothing', async () => {
    const { closed } = await open();
    peers[0].send(JSON.stringify({ jsonrpc: '2.0', method: 'notify_status_update', params: [{}, 0] }));
    const started = Date.now();
    expect(await closed).toBe(`no answer from Moonraker for ${SILENCE_MS} ms`);
    expect(Date.now() - started).toBeGreaterThanOrEqual(SILENCE_MS - 50);
  });
});
