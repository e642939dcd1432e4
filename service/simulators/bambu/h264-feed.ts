/**
 * The simulated X1-family camera's picture: a child ffmpeg draws a test
 * pattern with the printer's name, a caption (its state and progress,
 * bambu/caption-file.ts) and the time (drawtext, where a DejaVu font is
 * installed; the bare pattern otherwise) and
 * encodes it to H.264 (libx264, baseline, one IDR a second, SPS/PPS before
 * every IDR, an access-unit delimiter before every picture). This module
 * cuts that Annex B byte stream into access units for the RTSP sessions.
 *
 * The encoder runs only while someone subscribes: the first subscriber
 * starts it, the last one leaving stops it (SIGTERM, then SIGKILL), so an
 * idle simulator costs no CPU. The SPS and PPS last seen are kept for the
 * SDP's sprop-parameter-sets.
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import fs from 'node:fs';
import type { Readable } from 'node:stream';
import { terminate, whenGone } from '../../cameras/terminate';
import { CaptionFile } from './caption-file';

export interface AccessUnit {
  /** NAL units without start codes (the delimiter left out). */
  nals: Buffer[];
  /** Starts with SPS/PPS and holds an IDR picture: a new viewer can begin here. */
  keyframe: boolean;
}

export interface H264FeedOptions {
  ffmpegPath: string;
  /** What the picture says (the printer's name); only letters, digits and simple punctuation are kept. */
  label: string;
  /** A second line that may change (e.g. "printing 42 %"), read once a second while the encoder runs. */
  caption?: () => string;
  width?: number;
  height?: number;
  fps?: number;
}

const FONT = '/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf';
/** An Annex B stream with no start code for this long is broken: start over. */
const MAX_PENDING_BYTES = 2 * 1024 * 1024;
const RESTART_AFTER_MS = 1000;

type Encoder = ChildProcessByStdio<null, Readable, null>;

export class H264Feed {
  readonly width: number;
  readonly height: number;
  readonly fps: number;
  /** Encoder processes started (one per stretch of time with subscribers). */
  encoderStarts = 0;
  sps: Buffer | null = null;
  pps: Buffer | null = null;

  private readonly listeners = new Set<(unit: AccessUnit) => void>();
  private child: Encoder | null = null;
  private exited: Promise<void> = Promise.resolve();
  private pending: Buffer = Buffer.alloc(0);
  private unit: Buffer[] = [];
  private restartTimer: NodeJS.Timeout | null = null;
  private readonly caption: CaptionFile | null;
  private closed = false;

  constructor(private readonly options: H264FeedOptions) {
    this.width = options.width ?? 640;
    this.height = options.height ?? 360;
    this.fps = options.fps ?? 5;
    this.caption = options.caption && fs.existsSync(FONT) ? new CaptionFile(options.caption) : null;
  }

  get running(): boolean {
    return this.child !== null;
  }

  /** Receives every access unit from now on; the returned function unsubscribes. */
  subscribe(listener: (unit: AccessUnit) => void): () => void {
    this.listeners.add(listener);
    if (!this.child && !this.closed) this.spawnEncoder();
    return () => {
      if (!this.listeners.delete(listener)) return;
      if (this.listeners.size === 0) void this.stopEncoder();
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    this.listeners.clear();
    await this.stopEncoder();
  }

  private filterGraph(): string {
    const source = `testsrc2=size=${this.width}x${this.height}:rate=${this.fps}`;
    if (!fs.existsSync(FONT)) return source;
    // Only characters that need no escaping in a filter graph.
    const label = this.options.label.replace(/[^A-Za-z0-9 ._#()-]/g, '').slice(0, 48) || 'printer';
    const style = 'fontcolor=white:box=1:boxcolor=black@0.6:boxborderw=6';
    const text = (what: string, y: string, size: number) => `drawtext=fontfile=${FONT}:text='${what}':x=12:y=${y}:fontsize=${size}:${style}`;
    const layers = [source, text(label, '30', 28), text('%{localtime}', 'h-40', 20)];
    // The caption as written, no %{...} expansion: a "42 %" stays what it says.
    if (this.caption) layers.push(`drawtext=fontfile=${FONT}:textfile=${this.caption.path}:reload=1:expansion=none:x=12:y=76:fontsize=22:${style}`);
    return layers.join(',');
  }

  private spawnEncoder(): void {
    this.restartTimer = null;
    // drawtext fails without its file: it is there before ffmpeg starts.
    this.caption?.start();
    const args = [
      ...['-hide_banner', '-nostdin', '-loglevel', 'error'],
      ...['-re', '-f', 'lavfi', '-i', this.filterGraph()],
      ...['-an', '-c:v', 'libx264', '-preset', 'ultrafast', '-tune', 'zerolatency', '-profile:v', 'baseline', '-pix_fmt', 'yuv420p'],
      ...['-g', String(this.fps), '-x264-params', 'aud=1', '-f', 'h264', 'pipe:1'],
    ];
    const child = spawn(this.options.ffmpegPath, args, { stdio: ['ignore', 'pipe', 'ignore'] });
    this.child = child;
    this.encoderStarts++;
    this.pending = Buffer.alloc(0);
    this.unit = [];
    this.exited = whenGone(child);
    child.on('error', () => undefined);
    child.stdout.on('data', (chunk: Buffer) => this.onBytes(chunk));
    child.once('close', () => {
      if (this.child !== child) return;
      this.child = null;
      // It died under its viewers (killed, out of memory): try again shortly.
      if (!this.closed && this.listeners.size > 0) this.restartTimer = setTimeout(() => this.spawnEncoder(), RESTART_AFTER_MS);
    });
  }

  private async stopEncoder(): Promise<void> {
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.restartTimer = null;
    const child = this.child;
    this.child = null;
    if (child) await terminate(child, this.exited);
    else await this.exited;
    // A viewer who came back meanwhile started a new encoder, which keeps the caption.
    if (!this.child) this.caption?.stop();
  }

  private onBytes(chunk: Buffer): void {
    this.pending = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
    let start = startCodeAt(this.pending, 0);
    if (start < 0) {
      if (this.pending.length > MAX_PENDING_BYTES) this.pending = Buffer.alloc(0);
      return;
    }
    for (;;) {
      const payload = start + startCodeLength(this.pending, start);
      const next = startCodeAt(this.pending, payload);
      if (next < 0) break;
      this.onNal(this.pending.subarray(payload, trimZeros(this.pending, payload, next)));
      start = next;
    }
    this.pending = this.pending.subarray(start);
    if (this.pending.length > MAX_PENDING_BYTES) {
      this.pending = Buffer.alloc(0);
      this.unit = [];
    }
  }

  private onNal(nal: Buffer): void {
    if (nal.length === 0) return;
    const type = nal[0] & 0x1f;
    if (type === 9) {
      // An access-unit delimiter: the picture before it is complete.
      this.flushUnit();
      return;
    }
    const copy = Buffer.from(nal);
    if (type === 7) this.sps = copy;
    if (type === 8) this.pps = copy;
    this.unit.push(copy);
  }

  private flushUnit(): void {
    const nals = this.unit;
    this.unit = [];
    if (nals.length === 0) return;
    const keyframe = (nals[0][0] & 0x1f) === 7 && nals.some((n) => (n[0] & 0x1f) === 5);
    for (const listener of [...this.listeners]) listener({ nals, keyframe });
  }
}

/** Index of the next 00 00 01 at or after `from` (a 4-byte 00 00 00 01 starts one earlier), or -1. */
function startCodeAt(data: Buffer, from: number): number {
  for (let i = data.indexOf(0, from); i >= 0 && i + 2 < data.length; i = data.indexOf(0, i + 1)) {
    if (data[i + 1] !== 0) continue;
    if (data[i + 2] === 1) return i;
    if (data[i + 2] === 0 && i + 3 < data.length && data[i + 3] === 1) return i;
  }
  return -1;
}

function startCodeLength(data: Buffer, at: number): number {
  return data[at + 2] === 1 ? 3 : 4;
}

/** A NAL's end without the trailing zero bytes before the next start code. */
function trimZeros(data: Buffer, from: number, end: number): number {
  while (end > from && data[end - 1] === 0) end--;
  return end;
}
