/**
 * Network faults for the simulated printer's TLS services.
 *
 * GatedTlsListener is a plain TCP listener in front of a TLS server, so the
 * simulator can pull the plug (`offline`: stop listening, drop every socket,
 * new connections are refused) or freeze (`stalled`: new connections are
 * accepted at TCP level and then left hanging, before any TLS byte).
 *
 * StallGate sits between an established TLS socket and the broker: while
 * stalled it reads nothing and writes nothing (held back, not dropped, so the
 * MQTT stream stays intact), as a hung printer would.
 */
import { Duplex } from 'node:stream';
import net from 'node:net';
import tls from 'node:tls';

export type LinkMode = 'online' | 'offline' | 'stalled';

export class GatedTlsListener {
  private readonly tcp: net.Server;
  private readonly tlsServer: tls.Server;
  private readonly raw = new Set<net.Socket>();
  private readonly secure = new Set<tls.TLSSocket>();
  private readonly held = new Set<net.Socket>();
  private mode: LinkMode = 'online';
  private boundPort = 0;
  private closed = false;

  constructor(tlsOptions: tls.TlsOptions, onSecure: (socket: tls.TLSSocket) => void) {
    this.tlsServer = tls.createServer(tlsOptions, (socket) => {
      this.secure.add(socket);
      socket.once('close', () => this.secure.delete(socket));
      onSecure(socket);
    });
    // A client that gives up mid-handshake is not the simulator's problem.
    this.tlsServer.on('tlsClientError', (_err, socket) => socket.destroy());
    this.tcp = net.createServer((socket) => this.accept(socket));
  }

  get port(): number {
    return this.boundPort;
  }

  get connections(): number {
    return this.secure.size;
  }

  async listen(port = 0): Promise<number> {
    await new Promise<void>((resolve, reject) => {
      const onError = (err: Error) => reject(err);
      this.tcp.once('error', onError);
      this.tcp.listen(port, '127.0.0.1', () => {
        this.tcp.off('error', onError);
        resolve();
      });
    });
    this.boundPort = (this.tcp.address() as net.AddressInfo).port;
    return this.boundPort;
  }

  private accept(socket: net.Socket): void {
    socket.on('error', () => undefined);
    if (this.mode === 'offline' || this.closed) {
      socket.destroy();
      return;
    }
    this.raw.add(socket);
    socket.once('close', () => {
      this.raw.delete(socket);
      this.held.delete(socket);
    });
    if (this.mode === 'stalled') {
      this.held.add(socket);
      return;
    }
    this.tlsServer.emit('connection', socket);
  }

  /** Destroys every connection (raw and TLS) but keeps the mode. */
  dropAll(): void {
    for (const s of this.secure) s.destroy();
    for (const s of this.raw) s.destroy();
    this.held.clear();
  }

  async setMode(mode: LinkMode): Promise<void> {
    if (this.closed || mode === this.mode) return;
    const previous = this.mode;
    this.mode = mode;
    if (mode === 'offline') {
      // close() waits for the accepted connections, so drop them while it waits.
      const closed = new Promise<void>((resolve) => this.tcp.close(() => resolve()));
      this.dropAll();
      await closed;
      return;
    }
    if (previous === 'offline') {
      // Back on the same port, as a printer that comes back keeps its address.
      for (let attempt = 0; ; attempt++) {
        try {
          await this.listen(this.boundPort);
          break;
        } catch (err) {
          if (attempt >= 20) throw err;
          await new Promise((r) => setTimeout(r, 50));
        }
      }
    }
    if (mode === 'online') {
      const waiting = [...this.held];
      this.held.clear();
      for (const s of waiting) if (!s.destroyed) this.tlsServer.emit('connection', s);
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const closed = this.tcp.listening ? new Promise<void>((resolve) => this.tcp.close(() => resolve())) : Promise.resolve();
    this.dropAll();
    await closed;
  }
}

/** A Duplex around `inner` that passes nothing either way while stalled. */
export class StallGate extends Duplex {
  private stalled: boolean;
  private readonly heldWrites: Array<() => void> = [];
  private wantRead = false;

  constructor(private readonly inner: Duplex, stalled: boolean) {
    super({ allowHalfOpen: false });
    this.stalled = stalled;
    inner.pause();
    inner.on('data', (chunk: Buffer) => {
      if (!this.push(chunk)) {
        this.wantRead = false;
        inner.pause();
      }
    });
    inner.once('end', () => this.push(null));
    inner.once('error', (err) => this.destroy(err));
    inner.once('close', () => this.destroy());
  }

  setStalled(stalled: boolean): void {
    if (this.stalled === stalled) return;
    this.stalled = stalled;
    if (stalled) {
      this.inner.pause();
      return;
    }
    const held = this.heldWrites.splice(0);
    for (const go of held) go();
    if (this.wantRead) this.inner.resume();
  }

  override _read(): void {
    this.wantRead = true;
    if (!this.stalled) this.inner.resume();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    const go = () => {
      if (this.inner.destroyed) callback();
      else this.inner.write(chunk, () => callback());
    };
    if (this.stalled) this.heldWrites.push(go);
    else go();
  }

  /**
   * Corked writes (mqtt-packet writes a packet in pieces between cork and uncork) go out
   * together, as one TLS write: the printer's broker sends a packet in one piece. Piece by
   * piece they became several small TCP segments, and Nagle + delayed ACK held some of
   * them back for up to 40 ms.
   */
  override _writev(chunks: Array<{ chunk: Buffer; encoding: BufferEncoding }>, callback: (error?: Error | null) => void): void {
    const go = () => {
      if (this.inner.destroyed) return callback();
      this.inner.cork();
      for (let i = 0; i < chunks.length - 1; i++) this.inner.write(chunks[i].chunk);
      this.inner.write(chunks[chunks.length - 1].chunk, () => callback());
      this.inner.uncork();
    };
    if (this.stalled) this.heldWrites.push(go);
    else go();
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.inner.end();
    callback();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.heldWrites.length = 0;
    this.inner.destroy();
    callback(error);
  }
}
