/**
 * The client of `/ws`: connects, parses frames, reconnects with exponential
 * backoff and jitter, and re-sends the printer subscription after every
 * reconnect. Events: `open`, `close` (code, reason), `frame` (Frame),
 * `error` (Error; only when someone listens).
 */
import { EventEmitter } from 'node:events';
import WebSocket from 'ws';
import type { Frame } from './types';

export interface RealtimeOptions {
  /** First reconnect delay in ms (1 s); doubles up to reconnectMaxMs. */
  reconnectMinMs?: number;
  /** Longest reconnect delay in ms (30 s). */
  reconnectMaxMs?: number;
  /** Follow only these printers (the service filters); empty or undefined: all. */
  printerIds?: string[];
  /** A connection attempt that has not opened after this many ms is dropped (10 s). */
  connectTimeoutMs?: number;
  /** API token of a service with access control on (sent as `Authorization: Bearer` with the upgrade). */
  token?: string;
  /** A ping goes out this often; a connection that sent nothing (no pong, no frame) since the last one is dropped (30 s). */
  heartbeatMs?: number;
}

/** The largest frame taken (the service's are a few KB; ws's own default is 100 MiB): a larger one closes the link (1009). */
export const MAX_FRAME_BYTES = 16 * 1024 * 1024;

export type RealtimeState = 'idle' | 'connecting' | 'open' | 'closed';

export class RealtimeClient extends EventEmitter {
  private socket: WebSocket | null = null;
  private timer: NodeJS.Timeout | null = null;
  private attempt = 0;
  private stopped = true;
  private printerIds: string[];
  private readonly min: number;
  private readonly max: number;
  private readonly connectTimeoutMs: number;
  private readonly heartbeatMs: number;
  state: RealtimeState = 'idle';

  constructor(
    readonly url: string,
    options: RealtimeOptions = {},
  ) {
    super();
    this.min = options.reconnectMinMs ?? 1000;
    this.max = options.reconnectMaxMs ?? 30_000;
    this.connectTimeoutMs = options.connectTimeoutMs ?? 10_000;
    this.heartbeatMs = options.heartbeatMs ?? 30_000;
    this.printerIds = options.printerIds ?? [];
    this.token = options.token;
  }

  private readonly token: string | undefined;

  get connected(): boolean {
    return this.state === 'open';
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.connect();
  }

  /** Follow only these printers ([] for all); kept across reconnects. */
  subscribe(printerIds: string[]): void {
    this.printerIds = [...printerIds];
    this.sendSubscription();
  }

  private sendSubscription(): void {
    if (this.socket?.readyState === WebSocket.OPEN) this.socket.send(JSON.stringify({ type: 'subscribe', printer_ids: this.printerIds }));
  }

  private connect(): void {
    if (this.stopped) return;
    this.state = 'connecting';
    const socket = new WebSocket(this.url, { handshakeTimeout: this.connectTimeoutMs, maxPayload: MAX_FRAME_BYTES, ...(this.token ? { headers: { authorization: `Bearer ${this.token}` } } : {}) });
    this.socket = socket;
    let opened = false;
    // A server that stops answering (hung, or a half-open link after a power cut) would leave the channel
    // "open" for ever with a frozen farm state: without a pong or frame between two pings, it is dropped.
    let heard = true;
    let heartbeat: NodeJS.Timeout | null = null;
    const hear = () => (heard = true);
    socket.on('pong', hear);
    socket.on('ping', hear);
    socket.on('open', () => {
      heartbeat = setInterval(() => {
        if (!heard) return socket.terminate();
        heard = false;
        socket.ping();
      }, this.heartbeatMs);
      heartbeat.unref?.();
      opened = true;
      this.attempt = 0;
      this.state = 'open';
      if (this.printerIds.length) this.sendSubscription();
      this.emit('open');
    });
    socket.on('message', (raw, isBinary) => {
      heard = true;
      if (isBinary) return;
      let frame: Frame;
      try {
        frame = JSON.parse(raw.toString());
      } catch {
        return;
      }
      if (!frame || typeof frame.type !== 'string') return;
      // A listener that throws on what the peer sent (a frame nested deeper than the stack, a field of an
      // unexpected type) would throw out of the socket's data handler: an uncaught exception, which takes
      // the whole process (every Node-RED flow) down, and a receiver that never closes. The frame is dropped.
      try {
        this.emit('frame', { ...frame, data: frame.data ?? {} });
      } catch (err) {
        if (this.listenerCount('error')) this.emit('error', err);
      }
    });
    socket.on('error', (err) => {
      if (this.listenerCount('error')) this.emit('error', err);
    });
    socket.on('close', (code, reason) => {
      if (heartbeat) clearInterval(heartbeat);
      if (this.socket === socket) this.socket = null;
      const wasOpen = opened;
      this.state = 'closed';
      if (wasOpen) this.emit('close', code, reason.toString());
      else this.emit('connect-failed');
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.stopped || this.timer) return;
    const base = Math.min(this.max, this.min * 2 ** this.attempt);
    this.attempt++;
    // Full jitter over the upper half: clients that lost the service together do not return together.
    const delay = Math.round(base / 2 + Math.random() * (base / 2));
    this.timer = setTimeout(() => {
      this.timer = null;
      this.connect();
    }, delay);
    this.timer.unref?.();
  }

  /** Closes the socket and stops reconnecting. */
  async close(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const socket = this.socket;
    this.socket = null;
    this.state = 'idle';
    if (!socket || socket.readyState === WebSocket.CLOSED) return;
    await new Promise<void>((resolve) => {
      const cut = setTimeout(() => socket.terminate(), 1000);
      socket.once('close', () => {
        clearTimeout(cut);
        resolve();
      });
      if (socket.readyState === WebSocket.CONNECTING) socket.terminate();
      else socket.close(1000, 'client closing');
    });
  }
}
