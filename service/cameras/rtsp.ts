/**
 * An RTSP(S) camera (Bambu X1 / X1C / X1E / H2D / H2S / P2S at
 * `rtsps://bblp:<access code>@<ip>:322/streaming/live/1`, or an rtsp(s)
 * camera_url) as JPEG frames: a child ffmpeg reads the H.264 over TCP and
 * writes MJPEG to a pipe, which JpegSplitter cuts into frames.
 *
 * - TLS: ffmpeg's TLS layer does not verify the peer by default
 *   (`tls_verify=0`, GnuTLS and OpenSSL builds alike), which the printer's
 *   self-signed certificate needs; nothing is passed for it.
 * - Rate: ffmpeg's `select` filter keeps the first picture of every
 *   1/maxFps slot of stream time (at most `maxFps` a second) and never
 *   duplicates one; frames are encoded only for the pictures kept.
 * - Failures: a listener hears one CameraError per run; ffmpeg's stderr
 *   (last 8 KiB, redacted) says which (ffmpeg-failure.ts). No frame within
 *   `connectTimeoutMs` of the start, or within `stallTimeoutMs` of the last
 *   frame, is TIMEOUT. After an error the child is gone and start() opens a
 *   new run.
 * - close(): SIGTERM, SIGKILL after 2 s, and it resolves once the child is
 *   reaped and its pipes are closed.
 *
 * Without ffmpeg the source fails at start() with UNSUPPORTED naming the
 * package to install.
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable } from 'node:stream';
import { ffmpegStatus, type FfmpegStatus } from './ffmpeg';
import { ffmpegFailure, publicUrl, redact, urlSecrets } from './ffmpeg-failure';
import { DEFAULT_MAX_FRAME_BYTES, JpegSplitter } from './jpeg-splitter';
import { CameraError, type CameraFrame, type CameraSource } from './source';
import { terminate, whenGone } from './terminate';

export interface RtspSourceOptions {
  /** rtsp:// or rtsps:// URL, credentials in it (`rtsps://bblp:<code>@<ip>:322/streaming/live/1`). */
  url: string;
  /** At most this many frames a second (default 5; 0.1 … 30). */
  maxFps?: number;
  /** No first frame within this long after start(): TIMEOUT (default 10000 ms; the hub passes camera_timeout_s). */
  connectTimeoutMs?: number;
  /** No frame for this long once frames flowed: TIMEOUT (default: connectTimeoutMs). The first frame takes longer (TLS, RTSP, probing, an IDR). */
  stallTimeoutMs?: number;
  /** A JPEG larger than this is dropped (default 4 MiB). */
  maxFrameBytes?: number;
  /** JPEG quality as ffmpeg's -q:v, 2 (best) … 31 (default 5). */
  quality?: number;
  /** Wider pictures are scaled down to this width, aspect kept (default 1920: an X1's own 1080p passes as it is). */
  maxWidth?: number;
  /** The ffmpeg to run (default: ffmpegStatus(), the system one). */
  ffmpeg?: FfmpegStatus;
}

const STDERR_KEEP = 8 * 1024;

type Child = ChildProcessByStdio<null, Readable, Readable>;

/** "5.1.9-0+deb12u1" → true; -fps_mode arrived in ffmpeg 5.1 (before it: -vsync). Unknown builds are taken as new. */
export function hasFpsMode(version: string | null): boolean {
  const match = /^n?(\d+)\.(\d+)/.exec(version ?? '');
  if (!match) return true;
  const [major, minor] = [Number(match[1]), Number(match[2])];
  return major > 5 || (major === 5 && minor >= 1);
}

/** ffmpeg's arguments for reading `url` into JPEGs on stdout. */
export function rtspFfmpegArgs(url: string, o: { maxFps: number; quality: number; maxWidth: number; version: string | null }): string[] {
  // The first picture of every 1/maxFps slot of stream time: never more than maxFps a second,
  // and as many as that from a faster stream, whatever the jitter of the camera's clock.
  const rate = Number(o.maxFps.toFixed(4));
  const select = `select='isnan(prev_selected_t)+gt(floor(t*${rate}),floor(prev_selected_t*${rate}))'`;
  // A peer's 8K stream becomes no 8K JPEG: wider pictures are scaled down (even height, aspect kept).
  const bound = `scale=w='min(iw,${o.maxWidth})':h=-2`;
  return [
    ...['-hide_banner', '-nostdin', '-loglevel', 'error'],
    // Half a second of stream shows the SPS; every second more of probing delays the first frame.
    ...['-rtsp_transport', 'tcp', '-fflags', 'nobuffer', '-flags', 'low_delay', '-analyzeduration', '500000', '-probesize', '1000000'],
    ...['-i', url],
    ...['-map', '0:v:0', '-an', '-sn', '-dn'],
    ...['-vf', `${select},${bound}`],
    ...(hasFpsMode(o.version) ? ['-fps_mode', 'passthrough'] : ['-vsync', 'passthrough']),
    ...['-c:v', 'mjpeg', '-q:v', String(o.quality), '-f', 'image2pipe', 'pipe:1'],
  ];
}

export function createRtspSource(options: RtspSourceOptions): CameraSource {
  return new RtspSource(options);
}

class RtspSource implements CameraSource {
  readonly kind = 'rtsp' as const;
  private readonly frameListeners = new Set<(frame: CameraFrame) => void>();
  private readonly errorListeners = new Set<(error: CameraError) => void>();
  private readonly maxFps: number;
  private readonly connectTimeoutMs: number;
  private readonly stallTimeoutMs: number;
  private readonly quality: number;
  private readonly maxWidth: number;
  private readonly target: string;
  private readonly secrets: string[];
  private child: Child | null = null;
  private exited: Promise<void> = Promise.resolve();
  private watchdog: NodeJS.Timeout | null = null;
  private pendingError: NodeJS.Immediate | null = null;
  private closed = false;

  constructor(private readonly options: RtspSourceOptions) {
    this.maxFps = clamp(options.maxFps ?? 5, 0.1, 30);
    this.connectTimeoutMs = clamp(options.connectTimeoutMs ?? 10_000, 100, 600_000);
    this.stallTimeoutMs = clamp(options.stallTimeoutMs ?? this.connectTimeoutMs, 100, 600_000);
    this.quality = Math.round(clamp(options.quality ?? 5, 2, 31));
    // Even, as the chroma of the JPEGs needs.
    this.maxWidth = 2 * Math.round(clamp(options.maxWidth ?? 1920, 64, 7680) / 2);
    this.target = publicUrl(options.url);
    this.secrets = urlSecrets(options.url);
  }

  onFrame(listener: (frame: CameraFrame) => void): () => void {
    this.frameListeners.add(listener);
    return () => this.frameListeners.delete(listener);
  }

  onError(listener: (error: CameraError) => void): () => void {
    this.errorListeners.add(listener);
    return () => this.errorListeners.delete(listener);
  }

  start(): void {
    if (this.closed || this.child || this.pendingError) return;
    const ffmpeg = this.options.ffmpeg ?? ffmpegStatus();
    if (!ffmpeg.available || !ffmpeg.path) {
      this.failSoon(new CameraError('UNSUPPORTED', `cannot read the RTSP camera at ${this.target}: ${ffmpeg.message}`));
      return;
    }
    if (!/^rtsps?:\/\//i.test(this.options.url)) {
      this.failSoon(new CameraError('PROTOCOL', `not an rtsp:// or rtsps:// URL: ${this.target}`));
      return;
    }
    this.run(ffmpeg.path, ffmpeg.version);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.pendingError) clearImmediate(this.pendingError);
    this.pendingError = null;
    this.frameListeners.clear();
    this.errorListeners.clear();
    await this.stopChild();
  }

  /** Reports an error from start() after the caller's current turn, so listeners added right after start() hear it. */
  private failSoon(error: CameraError): void {
    this.pendingError = setImmediate(() => {
      this.pendingError = null;
      this.emitError(error);
    });
  }

  private run(path: string, version: string | null): void {
    const args = rtspFfmpegArgs(this.options.url, { maxFps: this.maxFps, quality: this.quality, maxWidth: this.maxWidth, version });
    const child = spawn(path, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    this.exited = whenGone(child);
    const splitter = new JpegSplitter(this.options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES);
    let stderr = '';
    let frames = 0;
    let failed = false;
    const fail = (error: CameraError) => {
      if (failed || this.child !== child) return;
      failed = true;
      this.emitError(error);
      void this.stopChild();
    };
    this.armWatchdog(this.connectTimeoutMs, () => fail(new CameraError('TIMEOUT', `no frame from the camera at ${this.target} within ${this.connectTimeoutMs / 1000} s`)));
    const stalled = () => fail(new CameraError('TIMEOUT', `the camera at ${this.target} sent no frame for ${this.stallTimeoutMs / 1000} s`));
    child.on('error', (err: NodeJS.ErrnoException) => {
      const error =
        err.code === 'ENOENT' || err.code === 'EACCES'
          ? new CameraError('UNSUPPORTED', `cannot run ffmpeg at ${path} (${err.code}): apt-get install ffmpeg, or set FFMPEG_PATH`)
          : new CameraError('PROTOCOL', `ffmpeg failed to start: ${redact(err.message, this.secrets)}`);
      fail(error);
    });
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (text: string) => {
      stderr = (stderr + text).slice(-STDERR_KEEP);
    });
    child.stdout.on('data', (chunk: Buffer) => {
      if (this.child !== child) return;
      for (const jpeg of splitter.push(chunk)) {
        frames++;
        if (frames === 1) this.armWatchdog(this.stallTimeoutMs, stalled);
        else this.watchdog?.refresh();
        this.emitFrame({ jpeg, at: Date.now() });
      }
    });
    child.once('close', (code, signal) => {
      if (this.child !== child) return;
      fail(ffmpegFailure(stderr, { code, signal }, this.target, this.secrets, frames > 0));
      this.child = null;
      this.clearWatchdog();
    });
  }

  private armWatchdog(ms: number, onTimeout: () => void): void {
    this.clearWatchdog();
    this.watchdog = setTimeout(onTimeout, ms);
  }

  private clearWatchdog(): void {
    if (this.watchdog) clearTimeout(this.watchdog);
    this.watchdog = null;
  }

  /** Ends the running child, if any: SIGTERM, SIGKILL after a grace period; resolves once it is reaped. */
  private async stopChild(): Promise<void> {
    this.clearWatchdog();
    const child = this.child;
    const exited = this.exited;
    if (!child) return exited;
    this.child = null;
    await terminate(child, exited);
  }

  private emitFrame(frame: CameraFrame): void {
    for (const listener of [...this.frameListeners]) {
      try {
        listener(frame);
      } catch {
        // A listener's failure is its own; the camera goes on.
      }
    }
  }

  private emitError(error: CameraError): void {
    for (const listener of [...this.errorListeners]) {
      try {
        listener(error);
      } catch {
        // As above.
      }
    }
  }
}

function clamp(n: number, min: number, max: number): number {
  return Number.isFinite(n) ? Math.min(max, Math.max(min, n)) : min;
}
