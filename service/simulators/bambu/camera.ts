/**
 * The simulated printer's "JPEG over TLS" camera (A1 / P1 family, port 6000
 * on a real printer): TLS with the simulator's certificate, one 80-byte
 * authentication packet (0x40, 0x3000, 8 zero bytes, "bblp" and the access
 * code, both NUL padded to 32), then a 16-byte header (uint32 LE length) and
 * one JPEG about once a second. A wrong packet closes the socket without a
 * frame, as the printer does.
 *
 * It counts connections (tests check that the service opens one per printer
 * whatever the number of viewers). `enabled: false` takes the camera off the
 * network (connections refused); `stalled` keeps connections open and sends
 * nothing. The link faults of the whole printer (offline, stall) apply too.
 */
import type tls from 'node:tls';
import { PictureCache, type PictureSize } from '../camera-picture';
import { GatedTlsListener, type LinkMode } from './gate';
import type { SimPrinter } from './printer';

const AUTH_BYTES = 80;
/** A client that sends no authentication within this time is dropped. */
const AUTH_TIMEOUT_MS = 10_000;
/** A client whose socket holds this much unsent data gets no frame until it reads. */
const MAX_UNSENT_BYTES = 1024 * 1024;

export interface SimCameraOptions {
  key: string;
  cert: string;
  accessCode: string;
  /** The JPEG to send now. */
  picture(): Buffer;
  /** Milliseconds between frames (default 1000). */
  intervalMs?: number;
  /** The printer's faults: `camera_stalled` keeps connections open and sends nothing. */
  faults?: { camera_stalled: boolean };
  /** Benchmarks: every frame carries the time it was sent in a JPEG comment (cameraFrameStamp reads it). */
  stamp?: boolean;
}

const STAMP_PREFIX = 'printfarm-sent=';

/** The picture with a COM segment after SOI that says when it was sent (performance.timeOrigin + now, ms). */
function stamped(jpeg: Buffer): Buffer {
  const text = Buffer.from(`${STAMP_PREFIX}${(performance.timeOrigin + performance.now()).toFixed(3)}`, 'latin1');
  const segment = Buffer.alloc(4);
  segment.writeUInt16BE(0xfffe, 0);
  segment.writeUInt16BE(text.length + 2, 2);
  return Buffer.concat([jpeg.subarray(0, 2), segment, text, jpeg.subarray(2)]);
}

/** When a stamped frame was sent (ms on the performance.timeOrigin clock), or null. */
export function cameraFrameStamp(jpeg: Buffer): number | null {
  if (jpeg.length < 8 || jpeg[2] !== 0xff || jpeg[3] !== 0xfe) return null;
  const text = jpeg.subarray(6, 4 + jpeg.readUInt16BE(4)).toString('latin1');
  return text.startsWith(STAMP_PREFIX) ? Number(text.slice(STAMP_PREFIX.length)) : null;
}

export class SimCamera {
  readonly stats = { connections: 0, auth_failures: 0, frames_sent: 0 };
  private readonly listener: GatedTlsListener;
  private readonly viewers = new Set<tls.TLSSocket>();
  private timer: NodeJS.Timeout | null = null;
  private enabled = true;
  private linkMode: LinkMode = 'online';

  /** Whether a model's camera is this protocol (A1 / A1 mini / P1P / P1S; the X1, H2 and P2 families stream RTSPS). */
  static servedBy(model: string): boolean {
    return !/^(X1|H2|P2|X2)/i.test(model.trim());
  }

  /** A listening camera showing `sim`'s name, state and progress. */
  static async open(
    sim: { name: string; accessCode: string; printer: SimPrinter },
    o: { key: string; cert: string; faults: { camera_stalled: boolean }; port?: number; size?: PictureSize; intervalMs?: number; stamp?: boolean },
  ): Promise<SimCamera> {
    const pictures = new PictureCache(o.size);
    const picture = () => pictures.get({ name: sim.name, state: sim.printer.gcodeState, progress: sim.printer.progress });
    const camera = new SimCamera({ key: o.key, cert: o.cert, accessCode: sim.accessCode, picture, intervalMs: o.intervalMs, faults: o.faults, stamp: o.stamp });
    await camera.listen(o.port);
    return camera;
  }

  constructor(private readonly options: SimCameraOptions) {
    this.listener = new GatedTlsListener({ key: options.key, cert: options.cert }, (socket) => this.accept(socket));
  }

  listen(port = 0): Promise<number> {
    return this.listener.listen(port);
  }

  get port(): number {
    return this.listener.port;
  }

  /** Authenticated connections open now. */
  get openConnections(): number {
    return this.viewers.size;
  }

  get isEnabled(): boolean {
    return this.enabled;
  }

  async setEnabled(enabled: boolean): Promise<void> {
    this.enabled = enabled;
    await this.applyMode();
  }

  /** The whole printer's link fault (offline, stalled, online). */
  async setLink(mode: LinkMode): Promise<void> {
    this.linkMode = mode;
    await this.applyMode();
  }

  private async applyMode(): Promise<void> {
    await this.listener.setMode(this.enabled ? this.linkMode : 'offline');
  }

  private accept(socket: tls.TLSSocket): void {
    this.stats.connections++;
    socket.on('error', () => undefined);
    const chunks: Buffer[] = [];
    let received = 0;
    const deadline = setTimeout(() => socket.destroy(), AUTH_TIMEOUT_MS);
    socket.once('close', () => {
      clearTimeout(deadline);
      this.viewers.delete(socket);
      if (this.viewers.size === 0) this.stopTimer();
    });
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      received += chunk.length;
      if (received < AUTH_BYTES) return;
      socket.off('data', onData);
      clearTimeout(deadline);
      if (!this.authorized(Buffer.concat(chunks).subarray(0, AUTH_BYTES))) {
        this.stats.auth_failures++;
        socket.destroy();
        return;
      }
      // Whatever the client sends later is read and ignored.
      socket.on('data', () => undefined);
      this.viewers.add(socket);
      this.send(socket);
      this.timer ??= setInterval(() => this.tick(), this.options.intervalMs ?? 1000);
    };
    socket.on('data', onData);
  }

  private authorized(packet: Buffer): boolean {
    const text = (from: number) => {
      const field = packet.subarray(from, from + 32);
      const end = field.indexOf(0);
      return field.subarray(0, end < 0 ? 32 : end).toString('utf8');
    };
    return (
      packet.readUInt32LE(0) === 0x40 &&
      packet.readUInt32LE(4) === 0x3000 &&
      packet.subarray(8, 16).every((b) => b === 0) &&
      text(16) === 'bblp' &&
      text(48) === this.options.accessCode
    );
  }

  private get stalled(): boolean {
    return this.options.faults?.camera_stalled ?? false;
  }

  private tick(): void {
    if (this.stalled || this.linkMode !== 'online') return;
    for (const socket of this.viewers) this.send(socket);
  }

  private send(socket: tls.TLSSocket): void {
    if (this.stalled || this.linkMode !== 'online' || socket.destroyed || socket.writableLength > MAX_UNSENT_BYTES) return;
    const jpeg = this.options.stamp ? stamped(this.options.picture()) : this.options.picture();
    const header = Buffer.alloc(16);
    header.writeUInt32LE(jpeg.length, 0);
    socket.cork();
    socket.write(header);
    socket.write(jpeg);
    socket.uncork();
    this.stats.frames_sent++;
  }

  private stopTimer(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  async close(): Promise<void> {
    this.stopTimer();
    await this.listener.close();
  }
}
