/**
 * Closing a PostgreSQL pool waits for the server to close each connection's socket (so nothing is left open
 * when the process or a test file ends), but never for ever: a server that takes the Terminate message and
 * never closes (gone from the network, a hung proxy) must not hold a shutdown. The server here is a bare TCP
 * peer speaking just enough of the protocol to accept a connection (AuthenticationOk, ReadyForQuery).
 */
import net from 'node:net';
import pg from 'pg';
import { poolClosed, postgresPool } from '../../service/db/connection';

/** A "server" that accepts every client and then never closes a socket, whatever the client sends. */
async function neverClosingServer(): Promise<{ port: number; sockets: Set<net.Socket>; close: () => Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer({ allowHalfOpen: true }, (socket) => {
    sockets.add(socket);
    socket.once('data', () => {
      const ok = Buffer.from([0x52, 0, 0, 0, 8, 0, 0, 0, 0]); // 'R' AuthenticationOk
      const ready = Buffer.from([0x5a, 0, 0, 0, 5, 0x49]); // 'Z' ReadyForQuery, idle
      socket.write(Buffer.concat([ok, ready]));
    });
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  const close = async () => {
    for (const s of sockets) s.destroy();
    await new Promise((resolve) => server.close(resolve));
  };
  return { port, sockets, close };
}

test('a pool whose server never closes the sockets is closed after the bounded wait, the sockets still open', async () => {
  const peer = await neverClosingServer();
  try {
    const pool = postgresPool(`postgres://u:p@127.0.0.1:${peer.port}/db`, 2);
    const client: pg.PoolClient = await pool.connect();
    client.release();
    await pool.end();
    let closed = false;
    await poolClosed(pool, 200).then(() => (closed = true));
    expect(closed).toBe(true);
    // The wait ended on its bound, not on the sockets: the peer still holds its side open.
    expect([...peer.sockets].filter((s) => !s.destroyed)).toHaveLength(1);
  } finally {
    await peer.close();
  }
});
