/**
 * The camera of a simulated X1 / X1C / X1E / H2D / H2S / P2S: the RTSPS
 * server (bambu/rtsps.ts) and its picture (bambu/h264-feed.ts), which
 * need the system ffmpeg. Where ffmpeg is missing the camera stays off
 * (`running` false, `unavailableReason` says why) and the printer works
 * as before.
 *
 * Switched on and off while the printer runs (start()/stop(), or
 * setEnabled() as the control API's `POST /camera` calls it); after a stop
 * it comes back on the same port, as a printer keeps its address. The
 * stalled-camera fault (stallFrames(), or `faults.camera_stalled` read
 * live) keeps viewers connected and sends them no picture.
 */
import { ffmpegStatus, type FfmpegStatus } from '../../cameras/ffmpeg';
import type { LinkMode } from './gate';
import { H264Feed } from './h264-feed';
import { RTSP_STREAM_PATH, SimRtsps } from './rtsps';

/** Models whose camera is RTSPS on port 322 (the others send JPEGs over TLS on port 6000). */
export const RTSPS_CAMERA_MODELS = ['X1', 'X1C', 'X1E', 'H2D', 'H2S', 'P2S'] as const;

export function hasRtspsCamera(model: string): boolean {
  return (RTSPS_CAMERA_MODELS as readonly string[]).includes(model.toUpperCase());
}

export interface SimRtspsCameraOptions {
  /** What the picture shows (the printer's name). */
  label: string;
  /** A second line that may change, such as the state and progress (read once a second while someone watches). */
  caption?: () => string;
  accessCode: string;
  key: string;
  cert: string;
  /** Port to listen on (default 0: any free port). */
  port?: number;
  /** The ffmpeg to use (default: the system one, ffmpegStatus()). */
  ffmpeg?: FfmpegStatus;
  /** The printer's faults, read for every picture: `camera_stalled` sends none. */
  faults?: { camera_stalled?: boolean };
}

export interface SimRtspsStats {
  /** TLS connections accepted since the simulator started (all runs of the server). */
  connections: number;
  auth_failures: number;
  plays: number;
  /** Pictures sent, once per viewer. */
  frames_sent: number;
  encoder_starts: number;
  /** Sessions receiving the stream now. */
  players: number;
  encoder_running: boolean;
}

export class SimRtspsCamera {
  private server: SimRtsps | null = null;
  private feed: H264Feed | null = null;
  private boundPort: number;
  private mode: LinkMode = 'online';
  private framesStalled = false;
  private readonly totals = { connections: 0, auth_failures: 0, plays: 0, frames_sent: 0, encoder_starts: 0 };

  constructor(private readonly options: SimRtspsCameraOptions) {
    this.boundPort = options.port ?? 0;
  }

  private get ffmpeg(): FfmpegStatus {
    return this.options.ffmpeg ?? ffmpegStatus();
  }

  /** Why the camera cannot run here (no ffmpeg), or null. */
  get unavailableReason(): string | null {
    return this.ffmpeg.available ? null : this.ffmpeg.message;
  }

  get running(): boolean {
    return this.server !== null;
  }

  get isEnabled(): boolean {
    return this.running;
  }

  /** The port it listens on (0 before the first start). */
  get port(): number {
    return this.server?.port ?? this.boundPort;
  }

  /** The stream's URL with credentials, as a client would use it. */
  url(accessCode = this.options.accessCode): string {
    return `rtsps://bblp:${encodeURIComponent(accessCode)}@127.0.0.1:${this.port}${RTSP_STREAM_PATH}`;
  }

  /** RTSP connections open now. */
  get openConnections(): number {
    return this.server?.sessions.size ?? 0;
  }

  get stats(): SimRtspsStats {
    const live = this.server?.stats;
    return {
      connections: this.totals.connections + (live?.connections ?? 0),
      auth_failures: this.totals.auth_failures + (live?.auth_failures ?? 0),
      plays: this.totals.plays + (live?.plays ?? 0),
      frames_sent: this.totals.frames_sent + (live?.frames_sent ?? 0),
      encoder_starts: this.totals.encoder_starts + (this.feed?.encoderStarts ?? 0),
      players: this.server?.players ?? 0,
      encoder_running: this.feed?.running ?? false,
    };
  }

  /** Switches the camera on; false (and nothing listening) where ffmpeg is missing. */
  async start(): Promise<boolean> {
    if (this.server) return true;
    const ffmpeg = this.ffmpeg;
    if (!ffmpeg.available || !ffmpeg.path) return false;
    const feed = new H264Feed({ ffmpegPath: ffmpeg.path, label: this.options.label, caption: this.options.caption });
    const server = new SimRtsps({
      key: this.options.key,
      cert: this.options.cert,
      credentials: { user: 'bblp', password: this.options.accessCode },
      feed,
      stalled: () => this.stalled,
    });
    try {
      this.boundPort = await server.listen(this.boundPort);
    } catch (err) {
      await Promise.all([server.close(), feed.close()]);
      throw err;
    }
    this.feed = feed;
    this.server = server;
    if (this.mode !== 'online') await server.setMode(this.mode);
    return true;
  }

  /** Switches the camera off: viewers are dropped, the port is closed, the encoder ends. */
  async stop(): Promise<void> {
    const { server, feed } = this;
    this.server = null;
    this.feed = null;
    if (server) {
      this.totals.connections += server.stats.connections;
      this.totals.auth_failures += server.stats.auth_failures;
      this.totals.plays += server.stats.plays;
      this.totals.frames_sent += server.stats.frames_sent;
    }
    if (feed) this.totals.encoder_starts += feed.encoderStarts;
    await Promise.all([server?.close(), feed?.close()]);
  }

  /** The printer closes: the same as stop(). */
  close(): Promise<void> {
    return this.stop();
  }

  /** On (where ffmpeg is installed) or off, as `POST /camera {"enabled": …}` asks. */
  async setEnabled(enabled: boolean): Promise<void> {
    if (enabled) await this.start();
    else await this.stop();
  }

  /** The stalled-camera fault: viewers stay connected and get no picture until it is lifted. */
  stallFrames(stalled: boolean): void {
    this.framesStalled = stalled;
  }

  get stalled(): boolean {
    return this.framesStalled || this.options.faults?.camera_stalled === true;
  }

  /** Follows the printer's link: offline refuses and drops, stalled holds new connections and sends nothing. */
  async setLink(mode: LinkMode): Promise<void> {
    this.mode = mode;
    await this.server?.setMode(mode);
  }
}
