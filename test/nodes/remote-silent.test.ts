/**
 * A remote service that accepts connections but never answers (a hung
 * process, a half-open link): a deploy or stopping Node-RED must not wait
 * for the requests in flight, and must leave no connection to it open.
 */
import net from 'node:net';
import { flow, helper, NODES, until } from '../helpers/node-red';

/** A "service" that takes connections and requests and never answers (a hung process, a half-open link). */
async function silentServer(): Promise<{ url: string; requests: string[]; asked(): boolean; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  /** Open connections that carry a request (waiting for an answer that never comes). */
  const asking = new Set<net.Socket>();
  const requests: string[] = [];
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('data', (chunk) => {
      asking.add(socket);
      requests.push(chunk.toString('latin1').split('\r\n')[0]);
    });
    socket.on('close', () => {
      sockets.delete(socket);
      asking.delete(socket);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    asked: () => asking.size > 0,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

beforeEach(() => helper.startServer());
afterEach(async () => {
  await helper.unload();
  await helper.stopServer();
});

describe('a remote service that never answers', () => {
  test('closing the config node cuts its requests in flight (it waited for their 30 s timeout, past Node-RED\'s close timeout)', async () => {
    const silent = await silentServer();
    try {
      await helper.load(NODES, flow([{ id: 'stats', type: 'printfarm-stats', server: 'srv', scope: 'overview', period: 'week', interval: 0, wires: [] }], { mode: 'remote', url: silent.url }));
      await until(() => silent.requests.some((r) => r.startsWith('GET /api/v1/printers')), 'the first read of the printers');
      expect(silent.asked()).toBe(true);
      await helper.unload();
      // The request in flight was cut (an idle connection that fetch keeps for later closes on its own).
      await until(() => !silent.asked(), 'the client to cut the request in flight', 5000);
      expect(silent.asked()).toBe(false);
    } finally {
      await silent.close();
    }
  }, 40_000);
});
