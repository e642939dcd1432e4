/**
 * The /ws hub: a plain WebSocket (RFC 6455) on the service's own port, so that
 * browsers, Node-RED and Home Assistant connect without a client library.
 * Frames are JSON `{type, timestamp, data}`. Heartbeats drop dead clients.
 * A client may send `{"type":"subscribe","printer_ids":[...]}` to receive
 * printer-bound events of those printers only (an empty list or `null` means all).
 */
import { STATUS_CODES, type IncomingMessage, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { WebSocket, WebSocketServer } from 'ws';
import type { EventBus, EventMap, EventType } from './events';
import { nowIso } from './util/time';

/**
 * Most frames one socket write carries. A loopback write costs the service about 40-60 µs whatever its size,
 * a frame's own work far less; the cap bounds how long the first frame of a busy turn (a burst of reports)
 * waits for the rest (docs/measurements.md, fleet: 8, 16 and no cap measured side by side).
 */
export const BATCH_MAX = 16;

interface Client {
  socket: WebSocket;
  /** The TCP socket while it holds this turn's frames (see batch()). */
  corked: Duplex | null;
  /** Frames held in the current batch. */
  held: number;
  alive: boolean;
  printerIds: Set<string> | null;
  /** 0: its backlog is within the limit; 1: over it since the last check; 2: over it at a check too (see judge()). */
  over: 0 | 1 | 2;
}

export interface RealtimeOptions {
  path?: string;
  heartbeatMs?: number;
  /** Incoming frames larger than this are refused (clients only send small control messages). */
  maxPayload?: number;
  /**
   * Bytes queued for one client beyond which it is dropped if they stay queued (default 4 MiB): a client that
   * stopped reading (a hung dashboard) must not grow the service's memory. Dropping keeps the promise that a
   * connected client gets every event in order; it reconnects and reads the current state from the API.
   */
  maxBufferedBytes?: number;
  /**
   * How long a client's backlog may stay over maxBufferedBytes (default 5 s): it is dropped when it is still
   * over at two checks this far apart, so after between one and two periods. A burst of one turn queues more
   * than the limit for a client that reads well but could not yet (one in the service's own process, as the
   * Node-RED config node's: nobody reads before the turn ends); judged at once, it was dropped.
   */
  slowClientMs?: number;
  /**
   * Asked before each upgrade (the per-client connection limit): a function to
   * call when the socket closes, or an HTTP answer that refuses the upgrade.
   */
  admit?: (req: IncomingMessage) => Admission;
}

/**
 * What `admit` decides. A connection let in may say how to judge it again (`stillAllowed`: is its token
 * still known with a role /ws takes?), which recheck() asks.
 */
export type Admission = { release: () => void; stillAllowed?: () => boolean } | { refuse: { status: number; headers: Record<string, string>; body: string } };

export class RealtimeHub {
  private readonly wss: WebSocketServer;
  private readonly clients = new Set<Client>();
  private readonly heartbeat: NodeJS.Timeout;
  private readonly unsubscribe: () => void;
  readonly path: string;
  private readonly admit: NonNullable<RealtimeOptions['admit']>;
  private readonly maxBuffered: number;
  private readonly slowClientMs: number;
  /** Armed while some client is over the limit (one timer for the hub, never one per frame). */
  private slowCheck: NodeJS.Timeout | null = null;
  private corked: Client[] = [];
  private flush: NodeJS.Immediate | null = null;
  /** Beside the clients, not in them: the report path never reads it. */
  private readonly stillAllowed = new WeakMap<WebSocket, () => boolean>();

  constructor(
    bus: EventBus,
    private readonly log: Logger,
    options: RealtimeOptions = {},
  ) {
    this.path = options.path ?? '/ws';
    this.admit = options.admit ?? (() => ({ release: () => {} }));
    this.maxBuffered = options.maxBufferedBytes ?? 4 * 1024 * 1024;
    this.slowClientMs = options.slowClientMs ?? 5000;
    this.wss = new WebSocketServer({ noServer: true, maxPayload: options.maxPayload ?? 64 * 1024 });
    this.wss.on('connection', (socket) => this.accept(socket));
    this.unsubscribe = bus.onAny((type, data) => this.broadcast(type, data));
    this.heartbeat = setInterval(() => this.beat(), options.heartbeatMs ?? 30_000);
    this.heartbeat.unref();
  }

  get clientCount(): number {
    return this.clients.size;
  }

  /** Handles HTTP upgrades for our path on `server`; other paths are refused. */
  attach(server: Server): void {
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      // Node hands an upgraded socket over without an error listener: a peer that resets it (while a refusal
      // is written, say) must not be an uncaught exception in the service's process.
      socket.on('error', (err) => this.log.debug({ err }, 'upgrade socket error'));
      // The HTTP parser passes targets that are no URL ("//", "http://"): nothing catches a throw in an
      // 'upgrade' listener, so `new URL` alone would crash the process (and leave the socket open). Not ours: 404.
      const target = req.url ?? '/';
      const pathname = URL.canParse(target, 'http://localhost') ? new URL(target, 'http://localhost').pathname : null;
      if (pathname !== this.path) {
        socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
        return;
      }
      const admission = this.admit(req);
      if ('refuse' in admission) {
        const { status, headers, body } = admission.refuse;
        const headerLines = Object.entries({ ...headers, 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(body)), Connection: 'close' })
          .map(([k, v]) => `${k}: ${v}\r\n`)
          .join('');
        socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\n${headerLines}\r\n${body}`);
        return;
      }
      // The TCP socket closes with the WebSocket, and also when the handshake fails: the slot always comes back.
      socket.once('close', admission.release);
      const { stillAllowed } = admission;
      this.wss.handleUpgrade(req, socket, head, (ws) => {
        if (stillAllowed) this.stillAllowed.set(ws, stillAllowed);
        this.wss.emit('connection', ws, req);
      });
    });
  }

  private accept(socket: WebSocket): void {
    const client: Client = { socket, corked: null, held: 0, alive: true, printerIds: null, over: 0 };
    this.clients.add(client);
    socket.on('pong', () => (client.alive = true));
    socket.on('message', (raw, isBinary) => this.receive(client, isBinary ? null : raw.toString()));
    socket.on('close', () => this.clients.delete(client));
    socket.on('error', (err) => this.log.debug({ err }, 'ws client error'));
  }

  private receive(client: Client, text: string | null): void {
    client.alive = true;
    let msg: { type?: unknown; printer_ids?: unknown } | null = null;
    try {
      msg = text === null ? null : JSON.parse(text);
    } catch {
      msg = null;
    }
    if (!msg || typeof msg !== 'object') return this.reply(client, 'error', { code: 'VALIDATION_ERROR', message: 'frames must be JSON objects' });
    switch (msg.type) {
      case 'ping':
        return this.reply(client, 'pong', {});
      case 'subscribe': {
        const ids = msg.printer_ids;
        if (ids !== null && ids !== undefined && !(Array.isArray(ids) && ids.length <= 10_000 && ids.every((id) => typeof id === 'string'))) {
          return this.reply(client, 'error', { code: 'VALIDATION_ERROR', message: 'printer_ids must be an array of strings' });
        }
        client.printerIds = ids && ids.length > 0 ? new Set(ids) : null;
        return this.reply(client, 'subscribed', { printer_ids: client.printerIds ? [...client.printerIds] : null });
      }
      default:
        return this.reply(client, 'error', { code: 'VALIDATION_ERROR', message: `unknown message type ${JSON.stringify(msg.type)}` });
    }
  }

  private reply(client: Client, type: string, data: object): void {
    this.send(client, JSON.stringify({ type, timestamp: nowIso(), data }));
  }

  private send(client: Client, frame: string): void {
    if (client.socket.readyState !== WebSocket.OPEN) return;
    // Noted here, judged later (judge()): what one turn queued says nothing yet of how the client reads.
    if (client.over === 0 && client.socket.bufferedAmount > this.maxBuffered) this.overLimit(client);
    this.batch(client);
    client.socket.send(frame);
  }

  /**
   * A client's backlog passed the limit. It still gets every frame (a client that reads must lose none), but
   * what it sends is not read until it is back under the limit: its requests and ws's answers to its pings
   * wait in TCP, so a peer that sends and never reads cannot have answers queued for it meanwhile.
   */
  private overLimit(client: Client): void {
    client.over = 1;
    client.socket.pause();
    this.log.info({ buffered: client.socket.bufferedAmount }, 'a /ws client has more than the limit queued: dropped unless it drains');
    if (this.slowCheck) return;
    this.slowCheck = setTimeout(() => this.judge(), this.slowClientMs);
    this.slowCheck.unref();
  }

  /**
   * Every slowClientMs while some client is over the limit: a client back under it is read again; one still
   * over it at two checks in a row (a whole period in which the event loop turned and it could read) is
   * dropped. The bound on memory is then the limit plus what the farm publishes in two periods.
   */
  private judge(): void {
    this.slowCheck = null;
    let again = false;
    for (const client of this.clients) {
      if (client.over === 0) continue;
      const buffered = client.socket.bufferedAmount;
      if (buffered <= this.maxBuffered) {
        client.over = 0;
        client.socket.resume();
        this.log.info({ buffered }, 'a /ws client drained its backlog');
      } else if (client.over === 2) {
        this.log.warn({ buffered }, 'dropping a /ws client that stopped reading');
        client.socket.terminate();
        this.clients.delete(client);
      } else {
        client.over = 2;
        again = true;
      }
    }
    if (!again) return;
    this.slowCheck = setTimeout(() => this.judge(), this.slowClientMs);
    this.slowCheck.unref();
  }

  /**
   * Holds a client's frames until the end of this turn of the event loop (setImmediate) or until BATCH_MAX
   * of them wait, so that the frames of the reports read in one turn leave in few writes.
   */
  private batch(client: Client): void {
    if (client.corked) {
      if (client.held < BATCH_MAX) {
        client.held++;
        return;
      }
      // A long turn (a burst of reports) does not hold its first frames until its end.
      client.corked.uncork();
      client.corked.cork();
      client.held = 1;
      return;
    }
    client.held = 1;
    // ws has no public cork; its socket is the TCP socket it writes to (ws 8).
    const raw = (client.socket as unknown as { _socket?: Duplex })._socket;
    if (!raw || raw.destroyed || typeof raw.cork !== 'function') return;
    raw.cork();
    client.corked = raw;
    this.corked.push(client);
    this.flush ??= setImmediate(() => this.uncork());
  }

  private uncork(): void {
    this.flush = null;
    const corked = this.corked;
    this.corked = [];
    for (const client of corked) {
      const raw = client.corked;
      client.corked = null;
      if (raw && !raw.destroyed) raw.uncork();
    }
  }

  private broadcast<K extends EventType>(type: K, data: EventMap[K]): void {
    if (this.clients.size === 0) return;
    const frame = JSON.stringify({ type, timestamp: nowIso(), data });
    const printerId = (data as { printer_id?: unknown }).printer_id;
    for (const client of this.clients) {
      // Events of one printer reach the clients that follow it; job_auto_created goes to everyone (spec).
      if (client.printerIds && typeof printerId === 'string' && type !== 'job_auto_created' && !client.printerIds.has(printerId)) continue;
      this.send(client, frame);
    }
  }

  private beat(): void {
    for (const client of this.clients) {
      // Not read while over the limit, so its pong waits too: judge() decides for it.
      if (client.over !== 0) continue;
      if (!client.alive) {
        client.socket.terminate();
        this.clients.delete(client);
        continue;
      }
      client.alive = false;
      client.socket.ping();
    }
  }

  /**
   * Closes the connections that would no longer be let in (1008 policy violation): called when the tokens
   * change, so that a removed token, or one whose role /ws no longer takes, stops receiving events. A
   * closing socket gets no more frames (send() writes to open sockets only). Returns how many were closed.
   */
  recheck(): number {
    let closed = 0;
    for (const client of this.clients) {
      const allowed = this.stillAllowed.get(client.socket);
      if (!allowed || client.socket.readyState !== WebSocket.OPEN || allowed()) continue;
      this.stillAllowed.delete(client.socket);
      client.socket.close(1008, 'access revoked');
      closed++;
    }
    if (closed > 0) this.log.info({ closed }, '/ws connections closed: their token was removed or no longer admits them');
    return closed;
  }

  /** Closes every connection (1001 going away) and stops the heartbeat. */
  async close(): Promise<void> {
    clearInterval(this.heartbeat);
    if (this.slowCheck) clearTimeout(this.slowCheck);
    this.slowCheck = null;
    this.unsubscribe();
    if (this.flush) clearImmediate(this.flush);
    this.uncork();
    for (const client of this.clients) client.socket.close(1001, 'server shutting down');
    const deadline = setTimeout(() => this.clients.forEach((c) => c.socket.terminate()), 1000);
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
    await Promise.all([...this.clients].map((c) => (c.socket.readyState === WebSocket.CLOSED ? undefined : new Promise((r) => c.socket.once('close', r)))));
    clearTimeout(deadline);
  }
}
