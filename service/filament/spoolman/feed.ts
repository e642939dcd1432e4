/**
 * Spoolman's change feed: a WebSocket on `/api/v1/spool` that sends
 * `{type: "added"|"updated"|"deleted", resource: "spool", date, payload}` for
 * every spool change. Between polls it keeps the view fresh (a spool weighed
 * or edited in Spoolman shows at once). Reconnects with a growing pause; a
 * frame is bounded in size and checked field by field before it is used.
 */
import WebSocket from 'ws';
import { parseSpool, type SpoolmanSpool } from './client';

const MAX_FRAME_BYTES = 256 * 1024;

export interface FeedEvents {
  changed(spool: SpoolmanSpool): void;
  deleted(id: number): void;
}

export class SpoolmanFeed {
  private socket: WebSocket | null = null;
  private timer: NodeJS.Timeout | null = null;
  private delayMs = 1000;
  private closed = false;

  constructor(
    private readonly baseUrl: string,
    private readonly on: FeedEvents,
    private readonly maxDelayMs = 30_000,
  ) {
    this.connect();
  }

  get url(): string {
    return this.baseUrl;
  }

  private connect(): void {
    if (this.closed) return;
    let url: URL;
    try {
      url = new URL('api/v1/spool', this.baseUrl.endsWith('/') ? this.baseUrl : `${this.baseUrl}/`);
      url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
    } catch {
      return;
    }
    const socket = new WebSocket(url, { maxPayload: MAX_FRAME_BYTES, handshakeTimeout: 5000 });
    this.socket = socket;
    socket.on('open', () => (this.delayMs = 1000));
    socket.on('message', (raw) => this.frame(raw.toString()));
    // Errors end in 'close'; a Spoolman without the feed (or down) is polled meanwhile.
    socket.on('error', () => undefined);
    socket.on('close', () => {
      if (this.socket !== socket || this.closed) return;
      this.socket = null;
      this.timer = setTimeout(() => this.connect(), this.delayMs);
      this.timer.unref();
      this.delayMs = Math.min(this.maxDelayMs, this.delayMs * 2);
    });
  }

  private frame(text: string): void {
    let msg: unknown;
    try {
      msg = JSON.parse(text);
    } catch {
      return;
    }
    const m = msg as { type?: unknown; resource?: unknown; payload?: unknown };
    if (m.resource !== undefined && m.resource !== 'spool') return;
    if (m.type === 'deleted') {
      const id = (m.payload as { id?: unknown } | null)?.id;
      if (typeof id === 'number' && Number.isInteger(id)) this.on.deleted(id);
      return;
    }
    if (m.type !== 'added' && m.type !== 'updated') return;
    const spool = parseSpool(m.payload);
    if (spool) this.on.changed(spool);
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const socket = this.socket;
    this.socket = null;
    if (socket && socket.readyState !== WebSocket.CLOSED) socket.terminate();
  }
}
