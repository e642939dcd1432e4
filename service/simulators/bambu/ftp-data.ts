/**
 * The data side of the simulated printer's FTPS server: sending a download
 * and receiving an upload over one data connection, both at the printer's
 * speed when the `transfer_bytes_per_sec` fault is set (a P1 manages
 * ~150 KB/s), both frozen while the printer is stalled.
 */
import type net from 'node:net';
import tls from 'node:tls';

/** A passive-mode data server waiting for its one connection. */
export interface Passive {
  server: tls.Server;
  port: number;
  socket: Promise<tls.TLSSocket>;
  accepted: tls.TLSSocket | null;
  timer: NodeJS.Timeout;
}

/**
 * Listens on 127.0.0.1 for one data connection (10 s at most). `admit`
 * decides whether a connection may be the one (false: dropped). The TLS
 * options must share the control server's ticket keys so that the client can
 * resume its session, which the session then checks as vsftpd does.
 */
export async function openPassiveServer(tlsOptions: tls.TlsOptions, admit: (socket: tls.TLSSocket) => boolean): Promise<Passive> {
  const server = tls.createServer(tlsOptions);
  let resolveSocket!: (s: tls.TLSSocket) => void;
  let rejectSocket!: (e: Error) => void;
  const socket = new Promise<tls.TLSSocket>((resolve, reject) => {
    resolveSocket = resolve;
    rejectSocket = reject;
  });
  socket.catch(() => undefined);
  const passive: Passive = { server, port: 0, socket, accepted: null, timer: setTimeout(() => rejectSocket(new Error('no data connection')), 10_000) };
  server.on('secureConnection', (s: tls.TLSSocket) => {
    s.on('error', () => undefined);
    if (passive.accepted || !admit(s)) {
      s.destroy();
      return;
    }
    passive.accepted = s;
    clearTimeout(passive.timer);
    server.close();
    resolveSocket(s);
  });
  server.on('tlsClientError', (err, s) => {
    s.destroy();
    rejectSocket(err);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  passive.port = (server.address() as net.AddressInfo).port;
  return passive;
}

/** Biggest upload the simulated card takes. */
export const MAX_UPLOAD_BYTES = 512 * 1024 * 1024;

/** What a transfer needs of its session. */
export interface TransferPace {
  /** Bytes per second; 0 = as fast as the socket goes. */
  rate(): number;
  /** Sleeps `ms`, waking early when the session ends or a stall ends. */
  sleep(ms: number): Promise<void>;
  /** Resolves once the printer is not stalled (at once when it is not). */
  whileStalled(): Promise<void>;
  /** The printer is stalled now. */
  stalled(): boolean;
  /** The session is gone. */
  closed(): boolean;
}

/** Sends `payload` and closes the data connection; rejects if it breaks first. */
export async function sendData(socket: tls.TLSSocket, payload: Buffer, pace: TransferPace): Promise<void> {
  let offset = 0;
  while (offset < payload.length) {
    await pace.whileStalled();
    if (pace.closed() || socket.destroyed) throw new Error('data connection closed');
    const rate = pace.rate();
    const size = rate > 0 ? Math.max(1, Math.floor(rate / 10)) : 64 * 1024;
    const chunk = payload.subarray(offset, offset + size);
    offset += chunk.length;
    const flushed = socket.write(chunk);
    if (rate > 0) await pace.sleep(100);
    else if (!flushed) await waitFor(socket, 'drain');
  }
  if (pace.closed() || socket.destroyed) throw new Error('data connection closed');
  const finished = waitFor(socket, 'finish');
  socket.end();
  await finished;
}

/**
 * Receives an upload until the client closes the data connection. With a
 * rate, reading pauses whenever the bytes so far are ahead of the rate, so
 * TCP back-pressure slows the client down as a slow printer would.
 */
export function receiveData(socket: tls.TLSSocket, pace: TransferPace): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const started = Date.now();
    let size = 0;
    let settled = false;
    let waiting: Promise<void> | null = null;
    const fail = (err: Error) => {
      if (settled) return;
      settled = true;
      socket.destroy();
      reject(err);
    };
    const aheadMs = () => {
      const rate = pace.rate();
      return rate > 0 ? (size / rate) * 1000 - (Date.now() - started) : 0;
    };
    /** Waits until the bytes so far are no longer ahead of the rate and no stall holds the printer. */
    const keepPace = async () => {
      // Sleeps end early when a stall ends or the session closes: check again.
      while (!pace.closed() && !settled && (aheadMs() > 0 || pace.stalled())) {
        await pace.whileStalled();
        const wait = aheadMs();
        if (wait > 0) await pace.sleep(Math.min(wait, 1000));
      }
    };
    socket.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_UPLOAD_BYTES) return fail(new Error('too large'));
      chunks.push(chunk);
      if (waiting || (aheadMs() <= 0 && !pace.stalled())) return;
      socket.pause();
      waiting = keepPace().then(() => {
        waiting = null;
        if (pace.closed()) return fail(new Error('session closed'));
        if (!socket.destroyed) socket.resume();
      });
    });
    // The last bytes may arrive in one go: the upload still ends at the printer's pace.
    let ended = false;
    socket.once('end', () => {
      ended = true;
      void (async () => {
        while (waiting) await waiting;
        await keepPace();
        if (pace.closed()) return fail(new Error('session closed'));
        if (settled) return;
        settled = true;
        resolve(Buffer.concat(chunks));
      })();
    });
    // A connection that closes before its end (FIN) is a broken upload; after it, the data is whole.
    socket.once('close', () => {
      if (!ended) fail(new Error('data connection closed'));
    });
  });
}

/** Resolves on `event`, rejects if the socket closes first. */
function waitFor(socket: tls.TLSSocket, event: 'drain' | 'finish'): Promise<void> {
  return new Promise((resolve, reject) => {
    const onEvent = () => {
      socket.off('close', onClose);
      resolve();
    };
    const onClose = () => {
      socket.off(event, onEvent);
      reject(new Error('data connection closed'));
    };
    socket.once(event, onEvent);
    socket.once('close', onClose);
  });
}
