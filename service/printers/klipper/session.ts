/**
 * One open Moonraker link: what Klippy is doing, the subscribed objects
 * merged into one status, and the PrinterState derived from it. The driver
 * owns the link's life (reconnects, faults); the session owns what flows
 * over it (session start, Klippy's ups and downs, deltas, file metadata).
 */
import type { PrinterState } from '../driver';
import { reasonOf } from '../guard';
import { klipperFileMetadata } from './files';
import { finishedInNotification, newestEndedPrint, sameEnded } from './history';
import { activeSpool } from './spoolman';
import type { MoonrakerHttp } from './http';
import type { RpcLink } from './rpc';
import { MAX_SENSORS, mergeStatus, RUNOUT_SENSOR, stateChanged, SUBSCRIBED, toState, type KlipperContext, type KlipperStatus } from './state';
import type { Guard } from '../guard';

export interface SessionHooks {
  guard: Guard;
  klippyPollMs: number;
  events: {
    state(state: PrinterState): void;
    /** ready: Klippy answers (ready, or shut down with its reason); otherwise why the printer is out of reach. */
    klippy(ready: boolean, message: string | null): void;
  };
}

/** The fields taken of each object (null: all); position-like fields that change with every move are left out. */
const FIELDS: Record<(typeof SUBSCRIBED)[number], string[] | null> = {
  webhooks: null,
  print_stats: null,
  virtual_sdcard: ['progress', 'is_active', 'file_path'],
  display_status: ['progress', 'message'],
  heater_bed: ['temperature', 'target'],
  extruder: ['temperature', 'target'],
  toolhead: ['homed_axes', 'extruder'],
};
/** A runout sensor's fields (a filament_motion_sensor has the same two). */
const SENSOR_FIELDS = ['filament_detected', 'enabled'];
const MAX_OBJECTS = 5000;
/** Most deltas kept while a subscribe answer is awaited (Moonraker sends a few a second); more are folded together. */
const MAX_EARLY = 64;

const str = (v: unknown, max = 500): string | null => (typeof v === 'string' ? v.slice(0, max) : null);

/** Webcam services whose stream_url is an MJPEG stream; the others' (WebRTC, HLS, an adaptive page) are not, their snapshot is. */
const MJPEG_SERVICES = ['mjpegstreamer', 'uv4l-mjpeg'];

/**
 * The camera of the first enabled webcam in Moonraker's list, as an absolute URL: its MJPEG stream when it has
 * one, else its snapshot. Moonraker keeps the URLs as Mainsail or Fluidd use them, usually a path on the
 * printer's web frontend ("/webcam/?action=stream", port 80 on the printer's address); a full URL on the
 * printer's own host (a camera on its own port) is kept. Only http(s). A full URL on another host is not used:
 * the service would fetch whatever address a printer names (an internal service, a cloud's metadata address),
 * so a camera elsewhere is the operator's to name (camera_url).
 */
export function webcamUrl(webcams: unknown, host: string): string | null {
  if (!Array.isArray(webcams)) return null;
  const cam = webcams.slice(0, 50).find((c) => c && typeof c === 'object' && (c as { enabled?: unknown }).enabled !== false) as Record<string, unknown> | undefined;
  if (!cam) return null;
  const stream = str(cam.stream_url, 1000)?.trim() || null;
  const snapshot = str(cam.snapshot_url, 1000)?.trim() || null;
  const raw = (MJPEG_SERVICES.includes(String(cam.service)) ? (stream ?? snapshot) : (snapshot ?? stream)) ?? null;
  if (!raw) return null;
  try {
    const base = new URL(`http://${host.includes(':') ? `[${host}]` : host}/`);
    const url = new URL(raw, base);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
    return url.hostname === base.hostname ? url.toString() : null;
  } catch {
    return null;
  }
}
const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);

export class KlipperSession {
  private readonly status: KlipperStatus = {};
  private current: PrinterState | null = null;
  private readonly ctx: KlipperContext;
  private poll: NodeJS.Timeout | null = null;
  private stopped = false;
  private settingUp: Promise<void> | null = null;
  private metadataFor: string | null = null;
  /**
   * Whether states go out: not while a subscription is set up. A delta merged into a status the subscribe answer
   * has not filled yet (a new link's is empty) reads as an idle printer without a job: the job tracker ended the
   * running print's job on it, and refused the print as a new job right after (one new job a minute).
   */
  private live = false;
  /** Deltas that came while the subscribe answer was awaited, with their Klipper eventtime (null: none sent). */
  private early: { delta: KlipperStatus; eventtime: number | null }[] | null = null;
  /** Moonraker's loaded components (server.info): which optional APIs (webcam, spoolman) to ask. */
  private readonly components: string[];
  subscribed: string[] = [];

  constructor(
    readonly link: RpcLink,
    private readonly http: MoonrakerHttp,
    info: Record<string, unknown>,
    private readonly hooks: SessionHooks,
    /** The file the driver last saw printing (an earlier link's): its history record is the one that matters. */
    private lastFile: string | null = null,
  ) {
    this.ctx = {
      klippyState: info.klippy_connected === false ? 'disconnected' : (str(info.klippy_state, 40) ?? 'disconnected'),
      klippyMessage: null,
      firmwareVersion: null,
      nozzleDiameter: null,
      hasCamera: false,
      cameraUrl: null,
      materials: null,
      metadata: null,
      endedPrint: null,
      now: Date.now(),
    };
    this.components = Array.isArray(info.components) ? info.components.filter((c): c is string => typeof c === 'string').slice(0, 200) : [];
    link.on('notification', hooks.guard((method: string, params: unknown) => this.onNotification(method, params)));
  }

  get state(): PrinterState | null {
    return this.current;
  }

  /** The file the printer printed last, for the next link's session (history.ts). */
  get printedFile(): string | null {
    return this.lastFile;
  }

  get badFrames(): number {
    return this.link.bad;
  }

  /** Identifies the client, learns the webcams, and follows Klippy (now, or once it is ready). */
  async start(): Promise<void> {
    await this.link.call('server.connection.identify', { client_name: 'Printfarm', version: '1', type: 'other', url: 'https://github.com/printfarm/node-red-printfarm' }).catch(() => undefined);
    if (this.components.includes('webcam')) {
      const cams = await this.link.call<{ webcams?: unknown[] }>('server.webcams.list').catch(() => null);
      this.ctx.hasCamera = Array.isArray(cams?.webcams) && cams.webcams.length > 0;
      this.ctx.cameraUrl = webcamUrl(cams?.webcams, this.http.host);
    }
    if (this.components.includes('spoolman')) this.ctx.materials = await activeSpool(this.link);
    if (this.klippyAnswers()) await this.setUp();
    else this.waitForKlippy();
  }

  stop(): void {
    this.stopped = true;
    this.stopPolling();
    this.link.removeAllListeners('notification');
  }

  private klippyAnswers(): boolean {
    return ['ready', 'shutdown', 'error'].includes(this.ctx.klippyState);
  }

  /** Lists the objects, subscribes to the wanted ones that exist, and takes the answer as the full status. */
  private setUp(): Promise<void> {
    this.settingUp ??= (async () => {
      this.live = false;
      this.stopPolling();
      const listed = await this.link.call<{ objects?: unknown }>('printer.objects.list');
      const objects = new Set(Array.isArray(listed?.objects) ? listed.objects.slice(0, MAX_OBJECTS).filter((o): o is string => typeof o === 'string') : []);
      const sensors = [...objects].filter((name) => RUNOUT_SENSOR.test(name)).slice(0, MAX_SENSORS);
      const wanted = [...SUBSCRIBED.filter((name) => objects.has(name)), ...sensors];
      this.early = [];
      try {
        const fields = (name: string) => (RUNOUT_SENSOR.test(name) ? SENSOR_FIELDS : FIELDS[name as (typeof SUBSCRIBED)[number]]);
        const answer = await this.link.call<{ status?: unknown; eventtime?: unknown } | null>('printer.objects.subscribe', { objects: Object.fromEntries(wanted.map((name) => [name, fields(name)])) });
        // The answer is the full status as of its eventtime. Deltas of the new subscription can come before the
        // answer is read (Moonraker may send one first; ws hands out every frame of one read at once), and they
        // are newer: they go on top, or they were lost (Moonraker sends a field again only when it changes).
        // Older ones (of an earlier subscription) go; without eventtimes every delta counts as the subscription's.
        for (const name of Object.keys(this.status)) delete this.status[name];
        mergeStatus(this.status, answer?.status);
        const asOf = num(answer?.eventtime);
        for (const e of this.early) if (asOf === null || e.eventtime === null || e.eventtime >= asOf) mergeStatus(this.status, e.delta);
      } finally {
        this.early = null;
      }
      // Deltas from here on are merged as they come, without a state until the link is announced.
      const info = await this.link.call<Record<string, unknown>>('printer.info').catch(() => null);
      if (objects.has('configfile')) await this.learnNozzle();
      // Before the first state: a print lost while the link or Klippy was down (a crash, a power loss) shows as
      // standby, and the job tracker ends its job on that state; the history says how it ended.
      if (this.components.includes('history')) this.takeEnded(await newestEndedPrint(this.link, this.lastFile));
      if (this.stopped) return;
      this.subscribed = wanted;
      this.ctx.firmwareVersion = str(info?.software_version, 100) ?? this.ctx.firmwareVersion;
      this.ctx.klippyMessage = str(info?.state_message);
      this.ctx.klippyState = str(this.status.webhooks?.state, 40) ?? str(info?.state, 40) ?? 'ready';
      // The link is up before its first state goes out: whoever hears the state (the queue) sees a connected printer.
      this.live = true;
      this.hooks.events.klippy(true, null);
      this.refresh();
    })().finally(() => {
      this.settingUp = null;
    });
    return this.settingUp;
  }

  /** The nozzle diameter from Klipper's configuration ([extruder] nozzle_diameter); unknown when it cannot be read. */
  private async learnNozzle(): Promise<void> {
    const answer = await this.link.call<{ status?: { configfile?: { settings?: { extruder?: { nozzle_diameter?: unknown } } } } }>('printer.objects.query', { objects: { configfile: ['settings'] } }).catch(() => null);
    const d = answer?.status?.configfile?.settings?.extruder?.nozzle_diameter;
    if (typeof d === 'number' && d > 0 && d < 5) this.ctx.nozzleDiameter = d;
  }

  /** Klippy is not there (not running, starting): the printer is out of reach; Moonraker is asked again now and then. */
  private waitForKlippy(): void {
    const why = this.ctx.klippyState === 'startup' ? 'Klipper is starting' : 'Klipper is not connected to Moonraker';
    this.hooks.events.klippy(false, why);
    if (this.poll || this.stopped) return;
    this.poll = setInterval(
      this.hooks.guard(() => {
        void this.link
          .call<{ klippy_state?: unknown; klippy_connected?: unknown }>('server.info')
          .then((info) => {
            if (this.stopped || this.settingUp) return;
            this.ctx.klippyState = info?.klippy_connected === false ? 'disconnected' : (str(info?.klippy_state, 40) ?? 'disconnected');
            if (this.klippyAnswers()) return this.setUp();
          })
          .catch(() => undefined); // a lost link ends the session; a slow answer is asked again
      }),
      this.hooks.klippyPollMs,
    );
  }

  private stopPolling(): void {
    if (this.poll) clearInterval(this.poll);
    this.poll = null;
  }

  private onNotification(method: string, params: unknown): void {
    if (this.stopped) return;
    switch (method) {
      case 'notify_status_update': {
        const delta = Array.isArray(params) ? params[0] : undefined;
        if (this.early) return this.keepEarly(delta, Array.isArray(params) ? num(params[1]) : null);
        if (mergeStatus(this.status, delta)) this.refresh();
        return;
      }
      case 'notify_klippy_ready':
        this.ctx.klippyState = 'ready';
        void this.setUp().catch((err) => this.link.emit('bad', `setup after klippy ready failed: ${reasonOf(err)}`));
        return;
      case 'notify_klippy_shutdown':
        this.ctx.klippyState = 'shutdown';
        if (this.status.webhooks) this.status.webhooks.state = 'shutdown';
        this.refresh();
        // The reason is in Klipper's state message.
        void this.link
          .call<Record<string, unknown>>('printer.info')
          .then((info) => {
            this.ctx.klippyMessage = str(info?.state_message);
            if (this.status.webhooks && this.ctx.klippyMessage) this.status.webhooks.state_message = this.ctx.klippyMessage;
            this.refresh();
          })
          .catch(() => undefined);
        return;
      case 'notify_history_changed': {
        // A job ended (Moonraker also tells one lost to a shutdown or a Klippy that went away): kept for the state.
        const ended = this.components.includes('history') ? finishedInNotification(params) : null;
        if (ended && this.takeEnded(ended)) this.refresh();
        return;
      }
      case 'notify_active_spool_set': {
        const spoolId = Array.isArray(params) ? (params[0] as { spool_id?: unknown } | undefined)?.spool_id : undefined;
        void activeSpool(this.link, spoolId ?? null).then((materials) => {
          this.ctx.materials = materials;
          this.refresh();
        });
        return;
      }
      case 'notify_klippy_disconnected':
        this.ctx.klippyState = 'disconnected';
        for (const name of Object.keys(this.status)) delete this.status[name];
        this.waitForKlippy();
        return;
      default:
        return; // gcode responses, file list changes, history...: not the farm's business
    }
  }

  /** Keeps the history's newest ended print (the same object while it says the same); whether it changed. */
  private takeEnded(ended: ReturnType<typeof finishedInNotification>): boolean {
    if (!ended || sameEnded(this.ctx.endedPrint ?? null, ended)) return false;
    this.ctx.endedPrint = ended;
    return true;
  }

  /** Keeps a delta until the subscribe answer is in; a flood is folded into its last entry, so that memory stays bounded. */
  private keepEarly(delta: unknown, eventtime: number | null): void {
    const early = this.early!;
    const last = early.length >= MAX_EARLY ? early[early.length - 1] : null;
    if (last) {
      mergeStatus(last.delta, delta);
      last.eventtime = eventtime;
      return;
    }
    const kept: KlipperStatus = {};
    if (mergeStatus(kept, delta)) early.push({ delta: kept, eventtime });
  }

  /** Derives the state; emits it when it changed; fetches the metadata of a newly named file once. */
  private refresh(): void {
    if (this.stopped || !this.live || !this.klippyAnswers()) return;
    const filename = str(this.status.print_stats?.filename) ?? '';
    if (filename && filename !== this.metadataFor) this.fetchMetadata(filename);
    if (filename) this.lastFile = filename;
    this.ctx.now = Date.now();
    const next = toState(this.current, this.status, this.ctx);
    if (!stateChanged(this.current, next)) return;
    this.current = next;
    this.hooks.events.state(next);
  }

  private fetchMetadata(filename: string): void {
    this.metadataFor = filename;
    klipperFileMetadata(this.http, filename)
      .then((m) => {
        if (this.stopped || this.metadataFor !== filename) return;
        this.ctx.metadata = { filename, estimated_time: m.estimated_time };
        this.refresh();
      })
      .catch(() => undefined); // no metadata: the remaining time comes from the progress
  }
}
