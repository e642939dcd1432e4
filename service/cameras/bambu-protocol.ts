/**
 * The "JPEG over TLS" camera of the Bambu A1 / A1 mini / P1P / P1S (port 6000):
 * one 80-byte authentication packet from the client, then frames from the
 * printer, each a 16-byte header (bytes 0-3 uint32 LE payload length, the
 * rest reserved) followed by one JPEG (FF D8 ... FF D9).
 */
import { CameraError } from './source';

export const AUTH_PACKET_BYTES = 80;
export const FRAME_HEADER_BYTES = 16;
/** The largest frame accepted from a printer (a 1080p JPEG is 100-400 KiB). */
export const DEFAULT_MAX_FRAME_BYTES = 4 * 1024 * 1024;

/** bytes 0-3 0x40, 4-7 0x3000, 8-15 zero, 16-47 user "bblp", 48-79 the access code (both NUL padded). */
export function authPacket(accessCode: string): Buffer {
  const code = Buffer.from(accessCode, 'utf8');
  if (code.length > 32) throw new CameraError('AUTH', 'the access code is longer than the camera protocol allows (32 bytes)');
  const packet = Buffer.alloc(AUTH_PACKET_BYTES);
  packet.writeUInt32LE(0x40, 0);
  packet.writeUInt32LE(0x3000, 4);
  packet.write('bblp', 16, 'utf8');
  code.copy(packet, 48);
  return packet;
}

/**
 * Cuts the byte stream into frames. The length comes from the printer, so it
 * is bounded before anything is buffered; a frame that is not a JPEG is a
 * protocol error (the stream is out of step and cannot be trusted after it).
 */
export class BambuFrameReader {
  private chunks: Buffer[] = [];
  private buffered = 0;
  /** Payload length of the frame being read, or -1 while reading a header. */
  private payload = -1;

  constructor(
    private readonly maxFrameBytes: number,
    private readonly onFrame: (jpeg: Buffer) => void,
  ) {}

  /** Bytes held while waiting for the rest of a frame (at most one header + maxFrameBytes). */
  get bufferedBytes(): number {
    return this.buffered;
  }

  /** Feeds received bytes; throws a CameraError(PROTOCOL) on a bad frame. */
  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    for (;;) {
      if (this.payload < 0) {
        if (this.buffered < FRAME_HEADER_BYTES) return;
        const length = this.take(FRAME_HEADER_BYTES).readUInt32LE(0);
        if (length === 0 || length > this.maxFrameBytes) {
          throw new CameraError('PROTOCOL', `the camera announced a frame of ${length} bytes (limit ${this.maxFrameBytes})`);
        }
        this.payload = length;
      }
      if (this.buffered < this.payload) return;
      const jpeg = this.take(this.payload);
      this.payload = -1;
      if (jpeg[0] !== 0xff || jpeg[1] !== 0xd8) throw new CameraError('PROTOCOL', 'the camera sent a frame that is not a JPEG');
      this.onFrame(jpeg);
    }
  }

  /** The first n buffered bytes, removed from the buffer. */
  private take(n: number): Buffer {
    const first = this.chunks[0];
    let out: Buffer;
    if (first.length >= n) {
      // The common case for headers: no copy.
      out = first.subarray(0, n);
      if (first.length === n) this.chunks.shift();
      else this.chunks[0] = first.subarray(n);
    } else {
      out = Buffer.allocUnsafe(n);
      let at = 0;
      while (at < n) {
        const c = this.chunks[0];
        const part = Math.min(c.length, n - at);
        c.copy(out, at, 0, part);
        at += part;
        if (part === c.length) this.chunks.shift();
        else this.chunks[0] = c.subarray(part);
      }
    }
    this.buffered -= n;
    return out;
  }
}
