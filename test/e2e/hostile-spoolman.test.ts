/**
 * A hostile Spoolman: its spool list fails every poll while its change feed
 * announces one new spool after another. The feed keeps the service's view of
 * Spoolman fresh between polls, but it may not grow that view past what a poll
 * may bring (MAX_SPOOLS): nothing else would ever shrink it while the polls fail.
 * And an answer past the size bound is said to be too large, not cut off.
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { WebSocketServer } from 'ws';
import { MAX_SPOOLS, SpoolmanClient, SpoolmanError } from '../../service/filament/spoolman/client';
import { until } from '../helpers/farm';
import { startService, type Harness } from '../helpers/service';

const spool = (id: number, remaining = 500) => ({ id, remaining_weight: remaining, used_weight: 0, filament: { name: 'PLA', material: 'PLA', color_hex: 'FFFFFF', vendor: { name: 'Hostile' } } });

describe('a Spoolman whose polls fail and whose feed adds spools without end', () => {
  let h: Harness;
  let server: http.Server;
  const sockets = new Set<Socket>();
  const feed = new WebSocketServer({ noServer: true });
  const announced = MAX_SPOOLS + 500;

  beforeAll(async () => {
    server = http.createServer((_req, res) => {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end('{"message":"down"}');
    });
    server.on('connection', (s) => {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    });
    server.on('upgrade', (req, socket, head) => feed.handleUpgrade(req, socket, head, (ws) => feed.emit('connection', ws)));
    feed.on('connection', (ws) => {
      for (let id = 1; id <= announced; id++) ws.send(JSON.stringify({ type: 'added', resource: 'spool', payload: spool(id) }));
      // Last: a change to a spool it knows, the sign that every frame before it was read.
      ws.send(JSON.stringify({ type: 'updated', resource: 'spool', payload: spool(1, 42) }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    h = await startService({ env: { SPOOLMAN_URL: url }, spoolman: { pollMs: 60_000, retryMs: 200, timeoutMs: 1000 } });
  });
  afterAll(async () => {
    await h?.close();
    for (const c of feed.clients) c.terminate();
    await new Promise<void>((resolve) => feed.close(() => resolve()));
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  test('the service keeps at most MAX_SPOOLS of them, and still takes changes to those it keeps', async () => {
    const inventory = h.service.context.filament.spools.spoolman;
    await until(async () => inventory.get(1)?.remaining_weight === 42, 'the last frame', 20_000);
    expect(inventory.list().length).toBe(MAX_SPOOLS);
    expect(inventory.get(MAX_SPOOLS)).toBeDefined();
    expect(inventory.get(MAX_SPOOLS + 1)).toBeUndefined();
    // The polls failed all along: Spoolman shows as degraded, with the poll's error.
    const health = await until(async () => ((await h.get('/api/v1/health')).body.spoolman?.last_error ? (await h.get('/api/v1/health')).body : null), 'the failed poll in /health');
    expect(health.spoolman).toMatchObject({ status: 'degraded', last_error: expect.stringMatching(/500/) });
  });
});

test('an answer streamed past the size bound is refused as too large (not as cut off), with its status', async () => {
  // Chunked, so no Content-Length tells it in advance: 9 MB against the 8 MB bound.
  const chunk = Buffer.alloc(64 * 1024, 0x20);
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    let sent = 0;
    const more = () => {
      while (sent < 9 * 1024 * 1024) {
        sent += chunk.length;
        if (!res.write(chunk)) return void res.once('drain', more);
      }
      res.end();
    };
    more();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const err = await new SpoolmanClient(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, 5000).spools().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SpoolmanError);
    expect(err).toMatchObject({ status: 200, message: expect.stringMatching(/answered more than \d+ bytes/) });
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});
