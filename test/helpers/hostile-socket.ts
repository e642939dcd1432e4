/**
 * Raw hostile peers for the service's OUTBOUND connections: plain `net` and
 * `tls` servers on 127.0.0.1 port 0 that do exactly what a test scripts
 * (reset during the TLS handshake, answer half and reset, drip an answer one
 * byte at a time, never speak), plus the checks that nothing escaped to the
 * process and that every server and socket a test opened is closed again.
 */
import net from 'node:net';
import type tls from 'node:tls';

export interface HostileKit {
  /** Listens on 127.0.0.1 port 0; the server and every socket it accepted are destroyed after the test. */
  serve(server: net.Server): Promise<number>;
  /** Errors and rejections that reached the process during the test (must stay empty). */
  escaped: unknown[];
  /** Runs after the test, last added first. */
  cleanups: Array<() => unknown>;
}

/** Installs the process listeners and the after-each clean-up (which also asserts that nothing escaped). */
export function hostileKit(): HostileKit {
  const kit: HostileKit = {
    escaped: [],
    cleanups: [],
    serve: (server) => {
      const sockets = new Set<net.Socket>();
      server.on('connection', (s: net.Socket) => {
        sockets.add(s);
        s.on('close', () => sockets.delete(s));
        s.on('error', () => undefined);
      });
      server.on('secureConnection', (s: tls.TLSSocket) => s.on('error', () => undefined));
      server.on('tlsClientError', () => undefined);
      kit.cleanups.push(
        () =>
          new Promise<void>((resolve) => {
            for (const s of sockets) s.destroy();
            server.close(() => resolve());
          }),
      );
      return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as net.AddressInfo).port)));
    },
  };
  const onEscape = (err: unknown) => kit.escaped.push(err);
  beforeAll(() => {
    process.on('uncaughtException', onEscape);
    process.on('unhandledRejection', onEscape);
  });
  afterAll(() => {
    process.off('uncaughtException', onEscape);
    process.off('unhandledRejection', onEscape);
  });
  afterEach(async () => {
    for (const cleanup of kit.cleanups.splice(0).reverse()) await cleanup();
    // A late socket event is only seen after a turn of the loop.
    await new Promise((resolve) => setImmediate(resolve));
    expect(kit.escaped.splice(0)).toEqual([]);
  });
  return kit;
}

/** The TCP socket under a server-side TLS socket: what `resetAndDestroy()` must be called on to send a RST. */
export function tcpOf(socket: tls.TLSSocket): net.Socket {
  return (socket as unknown as { _parent?: net.Socket })._parent ?? socket;
}

/** A server that resets every connection as soon as the client speaks (its ClientHello, or its request). */
export const resetOnHello = (): net.Server => net.createServer((s) => s.once('data', () => s.resetAndDestroy()));

/** A server that accepts the TCP connection and never sends a byte. */
export const neverSpeaks = (): net.Server => net.createServer(() => undefined);

/** On the client's first bytes: writes `head`, then one more byte every `everyMs` until the connection goes. */
export function drip(socket: net.Socket, head: string, byte = 'x', everyMs = 50): void {
  socket.once('data', () => {
    socket.write(head);
    const timer = setInterval(() => (socket.destroyed ? clearInterval(timer) : socket.write(byte)), everyMs);
    socket.once('close', () => clearInterval(timer));
  });
}

/** The settled value of `work` (its error, for a rejection), or 'HUNG' when it did not settle within `ms`. */
export async function outcome(work: Promise<unknown>, ms = 8000): Promise<unknown> {
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise((resolve) => (timer = setTimeout(() => resolve('HUNG'), ms)));
  try {
    return await Promise.race([work.then((value) => ({ resolved: value }), (err: unknown) => err), hung]);
  } finally {
    clearTimeout(timer);
  }
}

/** Waits until `check()` holds, looking every 10 ms; throws after `ms`. */
export async function until(what: string, check: () => boolean, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
