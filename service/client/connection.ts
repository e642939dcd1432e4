/**
 * One connection to a Printfarm service, shared by everything that talks to
 * it (the Node-RED config node holds one): the REST client, the farm monitor
 * (with /ws and the polling fallback) and, for an embedded service, the
 * service itself. `state` sums it up for a status light.
 *
 * Events: state (ConnectionState, Error | undefined).
 */
import { EventEmitter } from 'node:events';
import { FarmMonitor, type MonitorMode } from './monitor';
import type { RealtimeOptions } from './realtime';
import { PrintfarmClient, type ClientOptions } from './rest';

export type ConnectionState = 'starting' | 'connecting' | 'connected' | 'polling' | 'unreachable' | 'error' | 'closed';

export interface StartedService {
  url: string;
  close(): Promise<void>;
}

export interface FarmConnectionOptions {
  /** Remote mode: the base URL of a running service. */
  baseUrl?: string;
  /** Embedded mode: starts the service and says where it listens. */
  start?: () => Promise<StartedService>;
  pollIntervalMs?: number;
  realtime?: RealtimeOptions;
  client?: ClientOptions;
}

const STATE_OF_MODE: Record<MonitorMode, ConnectionState> = {
  connecting: 'connecting',
  realtime: 'connected',
  polling: 'polling',
  unreachable: 'unreachable',
  stopped: 'closed',
};

/** A 401 (no or an unknown token) or 403 (a role too low) from the service. */
export function isAuthError(err: unknown): boolean {
  const status = (err as { status?: unknown } | undefined)?.status;
  return status === 401 || status === 403;
}

export class FarmConnection extends EventEmitter {
  private _state: ConnectionState = 'closed';
  private _error: Error | undefined;
  private service: StartedService | null = null;
  private opening: Promise<PrintfarmClient> | null = null;
  private closing: Promise<void> | null = null;
  client: PrintfarmClient | null = null;
  monitor: FarmMonitor | null = null;
  private readonly whenReady: Promise<PrintfarmClient>;
  private settle!: { resolve: (c: PrintfarmClient) => void; reject: (e: unknown) => void };

  constructor(private readonly options: FarmConnectionOptions) {
    super();
    this.setMaxListeners(0);
    this.whenReady = new Promise<PrintfarmClient>((resolve, reject) => (this.settle = { resolve, reject }));
    // Nobody may be waiting when it fails: open() reports it to its caller.
    this.whenReady.catch(() => undefined);
    if (!options.baseUrl === !options.start) throw new TypeError('give either baseUrl (remote) or start (embedded)');
    if (options.baseUrl) new URL(options.baseUrl); // fails early on a malformed URL
  }

  get state(): ConnectionState {
    return this._state;
  }

  get error(): Error | undefined {
    return this._error;
  }

  /** True when the farm's state is known (through /ws or polling). */
  get online(): boolean {
    return this._state === 'connected' || this._state === 'polling';
  }

  private setState(state: ConnectionState, error?: Error): void {
    if (state === this._state && error === this._error) return;
    this._state = state;
    this._error = error;
    this.emit('state', state, error);
  }

  /** Starts (embedded) and connects; resolves with the client, rejects when the embedded service cannot start. */
  open(): Promise<PrintfarmClient> {
    this.opening ??= (async () => {
      let url = this.options.baseUrl;
      if (this.options.start) {
        this.setState('starting');
        try {
          this.service = await this.options.start();
        } catch (err) {
          this.setState('error', err as Error);
          throw err;
        }
        url = this.service.url;
        if (this.closing) {
          const started = this.service;
          this.service = null;
          await started.close();
          throw new Error('closed while starting');
        }
      }
      const client = new PrintfarmClient(url!, this.options.client);
      const monitor = new FarmMonitor(client, { pollIntervalMs: this.options.pollIntervalMs, realtimeOptions: this.options.realtime });
      monitor.on('mode', (mode: MonitorMode) => {
        // A refused token stays the reason until the service answers again (it is no network problem).
        if (this._state === 'error' && isAuthError(this._error) && (mode === 'unreachable' || mode === 'connecting')) return;
        this.setState(STATE_OF_MODE[mode]);
      });
      // Listened to so that a failed poll never becomes an unhandled 'error'; the mode tells the user,
      // except for 401/403: the service answers but refuses the token, which the user must fix.
      monitor.on('poll-error', (err: unknown) => {
        if (isAuthError(err)) this.setState('error', err as Error);
      });
      this.client = client;
      this.monitor = monitor;
      await monitor.start();
      return client;
    })();
    this.opening.then(this.settle.resolve, this.settle.reject);
    return this.opening;
  }

  /** The client once open() has succeeded (does not open by itself); rejects when open() fails. */
  ready(): Promise<PrintfarmClient> {
    return this.whenReady;
  }

  /** Stops following the farm and, embedded, stops the service (awaiting its shutdown). */
  close(): Promise<void> {
    this.closing ??= (async () => {
      if (!this.opening) this.settle.reject(new Error('closed before it was opened'));
      // Requests in flight end now (a service that never answers would hold the close for their timeout).
      this.client?.close();
      await this.opening?.catch(() => undefined);
      await this.monitor?.close();
      await this.service?.close();
      this.service = null;
      this.setState('closed');
    })();
    return this.closing;
  }
}
