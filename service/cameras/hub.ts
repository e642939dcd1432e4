/**
 * The camera hub, one per service: one channel (one upstream connection) per
 * printer whatever the number of viewers, snapshots served from the latest
 * frame when it is fresh, at most `camera_max_viewers` streams, and a
 * printer_status frame when a camera becomes unavailable or comes back.
 * Frames never go to logs, events or metrics: only their absence does.
 */
import type { ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { Store } from '../db';
import type { PrinterRecord } from '../db/repositories/printers';
import { DomainError, notFound } from '../errors';
import type { EventBus, PrinterStatusEvent } from '../events';
import type { StatusCache } from '../monitoring/status-cache';
import type { SettingsService } from '../settings';
import { CameraChannel } from './channel';
import { cameraDomainError, cameraUnavailable } from './errors';
import { cameraPlan, type CameraPlan } from './plan';
import { CameraError, type CameraFrame, type CameraSource } from './source';
import { clientGone, MjpegViewer } from './viewer';

/** A snapshot is a frame at most this old. */
export const SNAPSHOT_MAX_AGE_MS = 2000;

export interface CameraView {
  available: boolean;
  source: CameraSource['kind'] | null;
  fps: number;
}

export interface CameraHubDeps {
  store: Store;
  settings: SettingsService;
  bus: EventBus;
  cache: StatusCache;
  log: Logger;
  /** What the printer's driver reports about its camera (undefined before its first report). */
  hasCamera(printerId: string): boolean | undefined;
  /** The camera URL the printer's driver names (Klipper: Moonraker's webcam), when it reports one. */
  reportedCameraUrl?(printerId: string): string | null | undefined;
  /** The printer_status frame the printer shows now (the fleet's), or null when it has no running driver. */
  statusOf(printerId: string): PrinterStatusEvent | null;
}

export class CameraHub {
  private readonly channels = new Map<string, CameraChannel>();
  private readonly viewers = new Set<MjpegViewer>();
  /** Streams admitted (waiting for their first frame or streaming): what camera_max_viewers counts. */
  private admitted = 0;
  private closed = false;
  private readonly unsubscribe: () => void;
  /** Upstream connections opened since start (tests and diagnostics). */
  upstreamOpened = 0;

  constructor(private readonly deps: CameraHubDeps) {
    this.unsubscribe = deps.bus.on('printer_status', (e) => {
      if (e.change === 'deleted' || e.change === 'updated') void this.recheck(e.printer_id);
    }, { telemetry: false });
  }

  /** `camera` of the printer list and detail: available when a snapshot can be tried and the last try did not fail. */
  viewOf(record: PrinterRecord): CameraView {
    const plan = this.plan(record);
    if ('unavailable' in plan) return { available: false, source: plan.kind, fps: 0 };
    // The printer's own camera is not tried while the printer is unreachable (see channel()).
    const reachable = Boolean(record.camera_url) || record.connection_status === 'connected';
    const channel = this.channels.get(record.id);
    return { available: reachable && !channel?.failure, source: plan.kind, fps: plan.fps };
  }

  /** A JPEG at most 2 s old (fetched on demand, waiting at most camera_timeout_s). */
  async snapshot(printerId: string): Promise<CameraFrame> {
    const channel = await this.channel(printerId);
    return this.firstFrame(printerId, channel);
  }

  /**
   * Streams the printer's camera to `res` as multipart/x-mixed-replace; resolves once streaming started.
   * Errors before the first frame are thrown (the client gets the error body, not an empty stream).
   */
  async stream(printerId: string, res: ServerResponse): Promise<void> {
    const max = this.deps.settings.get('camera_max_viewers');
    if (this.admitted >= max) {
      throw new DomainError(429, 'CAMERA_VIEWERS_EXCEEDED', `At most ${max} camera streams are served at once (setting camera_max_viewers); close one or try later`, { limit: max });
    }
    this.admitted++;
    let admitted = true;
    const release = () => {
      if (admitted) this.admitted--;
      admitted = false;
    };
    let channel: CameraChannel;
    let first: CameraFrame;
    try {
      channel = await this.channel(printerId);
      first = await this.firstFrame(printerId, channel);
    } catch (err) {
      release();
      throw err;
    }
    if (clientGone(res) || this.closed || this.channels.get(printerId) !== channel) {
      release();
      if (!res.headersSent) res.destroy();
      return;
    }
    const viewer = new MjpegViewer(res, this.deps.settings.get('camera_timeout_s') * 1000, (v) => {
      release();
      this.viewers.delete(v);
      channel.removeViewer(v);
    });
    this.viewers.add(viewer);
    viewer.open();
    viewer.offer(first);
    channel.addViewer(viewer);
  }

  /** Streams open now. */
  get viewerCount(): number {
    return this.viewers.size;
  }

  /** Camera connections open now. */
  get upstreamCount(): number {
    let open = 0;
    for (const channel of this.channels.values()) if (channel.upstreamOpen) open++;
    return open;
  }

  /** Bytes written to each viewer and not yet taken by its socket (bounded by about one frame each). */
  queuedBytes(): number[] {
    return [...this.viewers].map((v) => v.queuedBytes);
  }

  /** Whether the printer's upstream connection is open now. */
  upstreamOpen(printerId: string): boolean {
    return this.channels.get(printerId)?.upstreamOpen ?? false;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.unsubscribe();
    await Promise.all([...this.channels.values()].map((c) => c.close()));
    this.channels.clear();
  }

  private plan(record: PrinterRecord): CameraPlan {
    const s = this.deps.settings;
    return cameraPlan(record, { connectTimeoutMs: s.get('camera_timeout_s') * 1000, maxFps: s.get('camera_max_fps'), hasCamera: this.deps.hasCamera(record.id), reportedUrl: this.deps.reportedCameraUrl?.(record.id) });
  }

  private async firstFrame(printerId: string, channel: CameraChannel): Promise<CameraFrame> {
    try {
      return await channel.frame(SNAPSHOT_MAX_AGE_MS);
    } catch (err) {
      throw err instanceof CameraError ? cameraDomainError(printerId, err) : err;
    }
  }

  /** The printer's channel for its current configuration (404 unknown printer, 409 no camera). */
  private async channel(printerId: string): Promise<CameraChannel> {
    if (this.closed) throw new DomainError(503, 'SERVICE_UNAVAILABLE', 'The service is shutting down');
    const record = await this.deps.store.printers.get(printerId);
    if (!record) throw notFound('PRINTER_NOT_FOUND', `Printer "${printerId}" not found`, { printer_id: printerId });
    const plan = this.plan(record);
    if ('unavailable' in plan) throw cameraUnavailable(printerId, plan.unavailable);
    // The printer's own camera is not tried while the printer is unreachable: the answer comes at once, with the reason.
    if (!record.camera_url && record.connection_status !== 'connected') {
      const why = record.status_message ? `: ${record.status_message}` : record.connection_status === 'testing' ? ': still connecting' : '';
      throw new DomainError(502, 'PRINTER_OFFLINE', `Printer "${printerId}" is not reachable${why}`, { printer_id: printerId, connection_status: record.connection_status, last_seen: record.last_seen });
    }
    const current = this.channels.get(printerId);
    if (current && current.plan.key === plan.key) return current;
    if (current) void current.close();
    const channel = new CameraChannel(plan, this.timings(), {
      opened: () => this.upstreamOpened++,
      availability: (available, error) => void this.announce(printerId, plan, available, error),
    });
    this.channels.set(printerId, channel);
    return channel;
  }

  private timings() {
    const s = this.deps.settings;
    return { timeoutMs: () => s.get('camera_timeout_s') * 1000, idleMs: () => s.get('camera_idle_s') * 1000, maxFps: () => s.get('camera_max_fps') };
  }

  /** A printer was changed or deleted: a channel whose camera changed (or went away) is closed, its viewers ended. */
  private async recheck(printerId: string): Promise<void> {
    const channel = this.channels.get(printerId);
    if (!channel) return;
    const record = await this.deps.store.printers.get(printerId).catch(() => undefined);
    const plan = record && this.plan(record);
    if (plan && !('unavailable' in plan) && plan.key === channel.plan.key) return;
    if (this.channels.get(printerId) === channel) this.channels.delete(printerId);
    await channel.close();
  }

  /** printer_status with `camera` when a camera fails or comes back (never with a frame). */
  private async announce(printerId: string, plan: CameraPlan, available: boolean, error: CameraError | null): Promise<void> {
    if (this.closed) return;
    if (!available) this.deps.log.info({ printer_id: printerId, source: plan.kind, cause: error?.code }, `camera unavailable: ${error?.message ?? 'unknown'}`);
    const camera = { available, source: plan.kind, fps: 'fps' in plan ? plan.fps : 0, ...(error ? { error: error.message } : {}) };
    // A camera frame repeats what the printer shows now, so that clients never see an older status.
    const now = this.deps.statusOf(printerId);
    if (now) {
      this.deps.bus.emit('printer_status', { ...now, camera });
      return;
    }
    const record = await this.deps.store.printers.get(printerId).catch(() => undefined);
    if (!record || this.closed) return;
    const live = this.deps.cache.get(printerId);
    this.deps.bus.emit('printer_status', {
      printer_id: printerId,
      change: 'state',
      status: record.status,
      connection_status: record.connection_status,
      progress: live.progress,
      temperatures: { nozzle: live.temperatures.nozzle, bed: live.temperatures.bed },
      plate_state: record.plate_state ?? 'clear',
      camera,
    });
  }
}
