/**
 * The farm as a client sees it: every printer's latest state, kept current
 * from `/ws` frames, and from polling `GET /printers` every 30 s (spec) while
 * the real-time channel is down. It tells when a print starts: a printer that
 * goes from idle (online) or offline to printing.
 *
 * Events:
 *   printer (snapshot, previous | undefined)  a printer's state changed
 *   removed (printerId)                       a printer was deleted
 *   job-start (snapshot, previous)            idle/offline -> printing
 *   frame (Frame)                             every /ws frame
 *   mode ('connecting' | 'realtime' | 'polling' | 'unreachable' | 'stopped')
 *   poll-error (PrintfarmError)               reading GET /printers failed
 */
import { applySpoolFrame, isSpoolFrame, type SlotMaterial, type SpoolFrame } from './spool-frames';
import { EventEmitter } from 'node:events';
import { RealtimeClient, type RealtimeOptions } from './realtime';
import type { PrintfarmClient } from './rest';
import type { Frame, PrinterStatusData, PrinterView } from './types';

/** Spec: fallback polling every 30 seconds. */
export const FALLBACK_POLL_MS = 30_000;
/** After spool frames (a burst at a print's end or a load), the printer list is read once this much later. */
const SPOOL_REFRESH_MS = 1000;
/** Printers a /ws frame may add (hundreds in a real farm): a server inventing printers must not grow the memory. */
export const MAX_PRINTERS = 10_000;

/** A printer's current state, merged from GET /printers and printer_status frames. */
export interface PrinterSnapshot {
  id: string;
  name: string;
  type: string;
  model: string | null;
  status: string;
  connection_status: string;
  progress: number;
  temperatures: { nozzle: number; bed: number; chamber?: number };
  current_job: {
    id?: number;
    name: string;
    progress: number;
    estimated_remaining: number | null;
    layer_current?: number | null;
    layer_total?: number | null;
  } | null;
  error: { code?: string; message?: string } | null;
  is_active: boolean;
  last_seen: string | null;
  updated_at: string;
  /** The loaded filaments with the spool in each slot (spool_id, remaining_weight_g), when the service reports them. */
  materials?: SlotMaterial[];
}

export type MonitorMode = 'connecting' | 'realtime' | 'polling' | 'unreachable' | 'stopped';

/** States a print starts from (spec: idle or offline; this service shows idle as online). */
const START_FROM = new Set(['idle', 'online', 'offline', 'configuring', 'error']);

export function isJobStart(previous: string | undefined, next: string): boolean {
  return next === 'printing' && previous !== undefined && START_FROM.has(previous);
}

export interface MonitorOptions {
  /** Fallback poll period while /ws is down (30 s). */
  pollIntervalMs?: number;
  /** The real-time client to use; false for polling only; default: one on the client's /ws URL. */
  realtime?: RealtimeClient | false;
  realtimeOptions?: RealtimeOptions;
}

function fromView(p: PrinterView, prev: PrinterSnapshot | undefined): PrinterSnapshot {
  const sameJob = prev?.current_job && p.current_job && prev.current_job.name === p.current_job.name;
  return {
    id: p.id,
    name: p.name,
    type: p.type,
    model: p.model,
    status: p.status,
    connection_status: p.connection_status,
    progress: p.current_job?.progress ?? 0,
    temperatures: { ...p.temperatures },
    current_job: p.current_job
      ? { layer_current: sameJob ? prev.current_job!.layer_current : undefined, layer_total: sameJob ? prev.current_job!.layer_total : undefined, ...p.current_job }
      : null,
    error: p.status === 'error' ? (prev?.error ?? null) : null,
    is_active: p.is_active,
    last_seen: p.last_seen,
    updated_at: new Date().toISOString(),
    ...(p.materials ? { materials: p.materials } : {}),
  };
}

/** Applies a printer_status frame to what was known. */
export function applyStatusFrame(prev: PrinterSnapshot | undefined, d: PrinterStatusData, at: string): PrinterSnapshot {
  const busy = d.status === 'printing' || d.status === 'paused';
  const progress = typeof d.progress === 'number' ? d.progress : (prev?.progress ?? 0);
  let job = busy ? (prev?.current_job ? { ...prev.current_job } : null) : null;
  if (busy && (d.job_name !== undefined || job)) {
    job = {
      ...(job ?? { name: '', estimated_remaining: null }),
      name: d.job_name ?? job?.name ?? '',
      progress,
      ...(d.estimated_remaining !== undefined ? { estimated_remaining: d.estimated_remaining } : {}),
      ...(d.layer_current !== undefined ? { layer_current: d.layer_current } : {}),
      ...(d.layer_total !== undefined ? { layer_total: d.layer_total } : {}),
    } as PrinterSnapshot['current_job'];
  }
  return {
    id: d.printer_id,
    name: d.name ?? prev?.name ?? d.printer_id,
    type: d.type ?? prev?.type ?? '',
    model: prev?.model ?? null,
    status: d.status,
    connection_status: d.connection_status ?? prev?.connection_status ?? 'disconnected',
    progress: busy ? progress : 0,
    temperatures: d.temperatures ? { ...prev?.temperatures, ...d.temperatures } : (prev?.temperatures ?? { nozzle: 0, bed: 0 }),
    current_job: job,
    error: d.error ?? null,
    is_active: typeof d.is_active === 'boolean' ? d.is_active : (prev?.is_active ?? true),
    last_seen: d.connection_status === 'connected' ? at : (prev?.last_seen ?? null),
    updated_at: at,
    // Status frames do not carry the filaments: what the list said (and spool frames changed) stays.
    ...(prev?.materials ? { materials: prev.materials } : {}),
  };
}

export class FarmMonitor extends EventEmitter {
  readonly printers = new Map<string, PrinterSnapshot>();
  readonly realtime: RealtimeClient | null;
  private readonly pollMs: number;
  private poller: NodeJS.Timeout | null = null;
  private polling: Promise<void> | null = null;
  private _mode: MonitorMode = 'stopped';
  private started = false;
  private spoolRefresh: NodeJS.Timeout | null = null;

  constructor(
    readonly client: PrintfarmClient,
    options: MonitorOptions = {},
  ) {
    super();
    // One listener per node that follows the farm (a dozen printers, a node each, is no leak: Node's default
    // limit of 10 would print a leak warning); the nodes remove theirs on close (test/nodes/many-users).
    this.setMaxListeners(0);
    this.pollMs = options.pollIntervalMs ?? FALLBACK_POLL_MS;
    this.realtime = options.realtime === false ? null : (options.realtime ?? new RealtimeClient(client.wsUrl, { token: client.token, ...options.realtimeOptions }));
    this.realtime?.on('open', () => this.onOpen());
    this.realtime?.on('close', () => this.onDown());
    this.realtime?.on('connect-failed', () => this.onDown());
    this.realtime?.on('frame', (f: Frame) => this.onFrame(f));
  }

  get mode(): MonitorMode {
    return this._mode;
  }

  private setMode(mode: MonitorMode): void {
    if (mode === this._mode) return;
    this._mode = mode;
    this.emit('mode', mode);
  }

  /**
   * Loads the printers, then follows /ws (or polls when it is unavailable).
   * Never rejects: while the service cannot be reached, the mode is
   * `unreachable` and `poll-error` tells why; it keeps trying.
   */
  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    this.setMode('connecting');
    await this.refresh().catch((err) => this.emit('poll-error', err));
    if (!this.started) return;
    if (this.realtime) this.realtime.start();
    else this.startPolling();
  }

  /** Reads GET /printers and applies what changed (as events). */
  refresh(): Promise<void> {
    this.polling ??= (async () => {
      try {
        const { printers } = await this.client.printers.list();
        const seen = new Set<string>();
        for (const view of printers) {
          seen.add(view.id);
          this.update(fromView(view, this.printers.get(view.id)));
        }
        for (const id of [...this.printers.keys()]) {
          if (!seen.has(id)) {
            this.printers.delete(id);
            this.emit('removed', id);
          }
        }
      } finally {
        this.polling = null;
      }
    })();
    return this.polling;
  }

  private update(next: PrinterSnapshot): void {
    const prev = this.printers.get(next.id);
    this.printers.set(next.id, next);
    if (prev && !changed(prev, next)) return;
    this.emit('printer', next, prev);
    if (isJobStart(prev?.status, next.status)) this.emit('job-start', next, prev);
  }

  private onFrame(frame: Frame): void {
    this.emit('frame', frame);
    if (frame.type === 'spool_update' && isSpoolFrame(frame.data)) return this.onSpool(frame.data);
    if (frame.type !== 'printer_status') return;
    const d = frame.data as unknown as PrinterStatusData;
    if (typeof d.printer_id !== 'string') return;
    if (d.change === 'deleted') {
      if (this.printers.delete(d.printer_id)) this.emit('removed', d.printer_id);
      return;
    }
    const prev = this.printers.get(d.printer_id);
    // A printer added after the list was read: its frames may lack name and type, so read the list (which
    // announces it complete) rather than announce it by its id.
    if (!prev && (d.name === undefined || d.type === undefined)) {
      this.refresh().catch((err) => this.emit('poll-error', err));
      return;
    }
    // Past MAX_PRINTERS a frame adds none (a real one shows in the next read of the list).
    if (!prev && this.printers.size >= MAX_PRINTERS) return;
    this.update(applyStatusFrame(prev, d, frame.timestamp ?? new Date().toISOString()));
  }

  /**
   * A spool changed: the printers whose slots it leaves or enters get their new materials at once, and the
   * list is read again soon after (status frames carry no filaments: a tray loaded meanwhile shows up too).
   */
  private onSpool(f: SpoolFrame): void {
    for (const [id, snap] of this.printers) {
      const materials = snap.materials && applySpoolFrame(id, snap.materials, f);
      if (materials) this.update({ ...snap, materials, updated_at: new Date().toISOString() });
    }
    this.spoolRefresh ??= setTimeout(() => {
      this.spoolRefresh = null;
      if (this.started) this.refresh().catch((err) => this.emit('poll-error', err));
    }, SPOOL_REFRESH_MS);
    this.spoolRefresh.unref?.();
  }

  private onOpen(): void {
    this.stopPolling();
    this.setMode('realtime');
    // Frames missed while the channel was down: read the farm once.
    this.refresh().catch((err) => this.emit('poll-error', err));
  }

  private onDown(): void {
    if (!this.started) return;
    this.startPolling();
  }

  private startPolling(): void {
    if (this.poller) return;
    this.poll();
    this.poller = setInterval(() => this.poll(), this.pollMs);
    this.poller.unref?.();
  }

  /** One fallback poll: `polling` when the service answers, `unreachable` when it does not. */
  private poll(): void {
    this.refresh().then(
      () => {
        if (this.poller) this.setMode('polling');
      },
      (err) => {
        if (this.poller) this.setMode('unreachable');
        this.emit('poll-error', err);
      },
    );
  }

  private stopPolling(): void {
    if (this.poller) clearInterval(this.poller);
    this.poller = null;
  }

  async close(): Promise<void> {
    this.started = false;
    this.stopPolling();
    if (this.spoolRefresh) clearTimeout(this.spoolRefresh);
    this.spoolRefresh = null;
    await this.realtime?.close();
    await this.polling?.catch(() => undefined);
    this.setMode('stopped');
  }
}

function changed(a: PrinterSnapshot, b: PrinterSnapshot): boolean {
  const key = (p: PrinterSnapshot) =>
    JSON.stringify([p.name, p.status, p.connection_status, p.progress, p.temperatures, p.current_job, p.error, p.is_active, p.materials ?? null]);
  return key(a) !== key(b);
}
