/**
 * JSON-RPC 2.0 over one Moonraker WebSocket (`/websocket`): requests with
 * numbered ids and a deadline each, notifications handed to the owner, and
 * nothing the peer sends able to grow memory or crash the process:
 * - frames above `maxFrameBytes` end the link (ws maxPayload, close 1009);
 * - at most `maxPending` requests wait at a time;
 * - an answer to an id we never sent, a frame that is not JSON or not
 *   JSON-RPC is counted and dropped; too many bad frames in a row end the link;
 * - more than `maxFramesPerSecond` frames in a second end the link (a flood).
 * Liveness: a WebSocket ping every `pingMs`; no pong (or any frame) within
 * `silenceMs` ends the link as lost.
 */
import { EventEmitter } from 'node:events';
import WebSocket from 'ws';
import { DriverError } from '../driver';

export interface RpcOptions {
  url: string;
  headers: Record<string, string>;
  connectTimeoutMs: number;
  requestTimeoutMs: number;
  maxFrameBytes: number;
  maxPending: number;
  maxFramesPerSecond: number;
  pingMs: number;
  silenceMs: number;
}

interface Pending {
  method: string;
  resolve: (value: unknown) => void;
  reject: (err: DriverError) => void;
  timer: NodeJS.Timeout;
}

/** How many frames that are not JSON-RPC may arrive in a row before the peer counts as broken. */
const MAX_BAD_IN_A_ROW = 20;

/**
 * Events: 'notification' (method, params), 'closed' (reason: string, fault:
 * boolean: the peer broke the rules) once after the link was open, 'bad'
 * (reason) per dropped frame.
 */
export class RpcLink extends EventEmitter {
  private ws: WebSocket | null = null;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private ended = false;
  private badInARow = 0;
  private frameWindow = { start: 0, count: 0 };
  private pingTimer: NodeJS.Timeout | null = null;
  private silenceTimer: NodeJS.Timeout | null = null;
  private heardCount = 0;
  /** When the peer was last heard (performance.now()): the silence timer is moved only when it fires. */
  private lastHeard = 0;
  /** Frames dropped since the link opened (not JSON, not JSON-RPC, unknown ids). */
  bad = 0;

  constructor(private readonly o: RpcOptions) {
    super();
  }

  /** Opens the socket; rejects with a DriverError (AUTH for 401/403, OFFLINE, TIMEOUT). */
  open(): Promise<void> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(this.o.url, { headers: this.o.headers, maxPayload: this.o.maxFrameBytes, handshakeTimeout: this.o.connectTimeoutMs, perMessageDeflate: false });
      this.ws = ws;
      let opened = false;
      ws.once('unexpected-response', (_req, res) => {
        const status = res.statusCode ?? 0;
        res.resume();
        ws.terminate();
        const err =
          status === 401 || status === 403
            ? new DriverError('AUTH', `Moonraker refused the API key (HTTP ${status})`)
            : new DriverError('OFFLINE', `Moonraker answered the WebSocket upgrade with HTTP ${status}`);
        this.finish(err.message);
        reject(err);
      });
      ws.once('open', () => {
        opened = true;
        this.arm();
        resolve();
      });
      ws.on('message', (data, isBinary) => this.onFrame(data as Buffer, isBinary));
      ws.on('pong', () => this.heard());
      ws.on('error', (err: Error & { code?: string }) => {
        if (!opened) {
          const e =
            err.message.includes('timed out') || err.code === 'ETIMEDOUT'
              ? new DriverError('TIMEOUT', `Moonraker did not answer within ${this.o.connectTimeoutMs} ms`)
              : new DriverError('OFFLINE', `Moonraker unreachable (${err.code ?? err.message})`);
          this.finish(e.message);
          reject(e);
        }
        // A frame above maxPayload (and any other broken frame ws refuses) is the peer's fault; otherwise 'close' follows and says why.
        else if (err.code === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH') this.finish(`Moonraker sent a frame above ${this.o.maxFrameBytes} bytes`, true);
        else if (typeof err.code === 'string' && err.code.startsWith('WS_ERR_')) this.finish(`Moonraker broke the WebSocket protocol (${err.code})`, true);
      });
      ws.on('close', (code, reason) => {
        const oversize = code === 1009;
        const why = oversize ? `Moonraker sent a frame above ${this.o.maxFrameBytes} bytes` : `socket closed (${code}${reason.length ? ` ${reason.toString('utf8').slice(0, 100)}` : ''})`;
        if (!opened) reject(new DriverError('OFFLINE', why));
        this.finish(why, oversize);
      });
    });
  }

  /** Sends a request and resolves with its `result`; rejects on a JSON-RPC error, a timeout or a lost link. */
  call<T = unknown>(method: string, params?: Record<string, unknown>, timeoutMs = this.o.requestTimeoutMs): Promise<T> {
    const ws = this.ws;
    if (this.ended || !ws || ws.readyState !== WebSocket.OPEN) return Promise.reject(new DriverError('OFFLINE', 'Moonraker is not connected'));
    if (this.pending.size >= this.o.maxPending) return Promise.reject(new DriverError('TIMEOUT', 'too many requests waiting for Moonraker'));
    const id = this.nextId++;
    if (this.nextId > 2 ** 31) this.nextId = 1;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new DriverError('TIMEOUT', `Moonraker did not answer ${method} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending.set(id, { method, resolve: resolve as (v: unknown) => void, reject, timer });
      ws.send(JSON.stringify({ jsonrpc: '2.0', method, ...(params ? { params } : {}), id }), (err) => {
        if (!err) return;
        const p = this.pending.get(id);
        if (!p) return;
        clearTimeout(p.timer);
        this.pending.delete(id);
        reject(new DriverError('OFFLINE', `could not send ${method}: ${err.message}`));
      });
    });
  }

  /** Ends the link (no 'closed' event for a link its owner closes). */
  close(): void {
    this.ended = true;
    this.removeAllListeners('closed');
    this.finish('closed');
  }

  private onFrame(data: Buffer, isBinary: boolean): void {
    this.heard();
    const now = Date.now();
    if (now - this.frameWindow.start >= 1000) this.frameWindow = { start: now, count: 0 };
    if (++this.frameWindow.count > this.o.maxFramesPerSecond) return this.drop(`Moonraker flooded the link (more than ${this.o.maxFramesPerSecond} frames in a second)`);
    if (isBinary) return this.badFrame('binary frame');
    let msg: unknown;
    try {
      msg = JSON.parse(data.toString('utf8'));
    } catch {
      return this.badFrame('frame is not JSON');
    }
    if (!msg || typeof msg !== 'object' || Array.isArray(msg)) return this.badFrame('frame is not a JSON-RPC object');
    const m = msg as { method?: unknown; params?: unknown; id?: unknown; result?: unknown; error?: unknown };
    if (typeof m.method === 'string') {
      this.badInARow = 0;
      this.emit('notification', m.method, m.params);
      return;
    }
    if (typeof m.id !== 'number') return this.badFrame('answer without a numeric id');
    const p = this.pending.get(m.id);
    if (!p) return this.badFrame(`answer to unknown id ${m.id}`);
    this.badInARow = 0;
    clearTimeout(p.timer);
    this.pending.delete(m.id);
    if (m.error !== undefined) {
      const e = m.error as { code?: unknown; message?: unknown } | null;
      const text = typeof e?.message === 'string' ? e.message.slice(0, 300) : 'error';
      p.reject(new DriverError(e?.code === 404 ? 'NOT_FOUND' : 'REJECTED', `Moonraker refused ${p.method}: ${text}`, { rpc_code: typeof e?.code === 'number' ? e.code : null }));
    } else p.resolve(m.result);
  }

  private badFrame(reason: string): void {
    this.bad++;
    this.emit('bad', reason);
    if (++this.badInARow >= MAX_BAD_IN_A_ROW) this.drop(`Moonraker sent ${MAX_BAD_IN_A_ROW} broken frames in a row (${reason})`);
  }

  private drop(reason: string): void {
    this.finish(reason, true);
  }

  /** Any frame or pong proves the peer is alive. */
  private heard(): void {
    this.heardCount++;
    this.lastHeard = performance.now();
  }

  /**
   * The silence deadline passed. After a stall of this process the timer fires before the socket's waiting
   * pong is read (timers run before I/O): the verdict waits for one I/O round (setImmediate), so only a
   * peer that really went silent ends the link.
   */
  private silent(): void {
    // Moving the timer on every frame (a timer-list insert) cost about a microsecond a frame, at 2 frames a
    // second from each of 1000 printers: it is moved here instead, to the deadline counted from the last frame.
    const quiet = performance.now() - this.lastHeard;
    if (quiet < this.o.silenceMs) {
      this.silenceTimer = setTimeout(() => this.silent(), this.o.silenceMs - quiet);
      return;
    }
    const mark = this.heardCount;
    setImmediate(() => {
      if (this.heardCount === mark && !this.ended) this.finish(`no answer from Moonraker for ${this.o.silenceMs} ms`);
    });
  }

  private arm(): void {
    this.pingTimer = setInterval(() => {
      try {
        this.ws?.ping();
      } catch {
        // 'close' follows
      }
    }, this.o.pingMs);
    this.lastHeard = performance.now();
    this.silenceTimer = setTimeout(() => this.silent(), this.o.silenceMs);
  }

  private finish(reason: string, fault = false): void {
    if (this.pingTimer) clearInterval(this.pingTimer);
    if (this.silenceTimer) clearTimeout(this.silenceTimer);
    this.pingTimer = this.silenceTimer = null;
    const ws = this.ws;
    this.ws = null;
    if (ws) {
      ws.removeAllListeners('message');
      ws.removeAllListeners('pong');
      // The 'error' listener stays: a late socket error must never be unhandled.
      ws.on('error', () => undefined);
      if (ws.readyState === WebSocket.OPEN || ws.readyState === WebSocket.CONNECTING) ws.terminate();
    }
    for (const [id, p] of this.pending) {
      clearTimeout(p.timer);
      this.pending.delete(id);
      p.reject(new DriverError('OFFLINE', `connection to Moonraker lost (${reason})`));
    }
    if (!this.ended) {
      this.ended = true;
      this.emit('closed', reason, fault);
    }
  }
}
