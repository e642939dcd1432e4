/**
 * Cuts a multipart/x-mixed-replace body (an MJPEG stream) into its JPEG
 * parts. Everything the camera sends is bounded: a part's headers (8 KiB),
 * a part (maxPartBytes), the bytes held while looking for a boundary.
 * Parts with a Content-Length are cut by it; others at the next boundary.
 */
import { CameraError } from './source';

const MAX_HEADER_BYTES = 8 * 1024;
const CRLF2 = Buffer.from('\r\n\r\n');

/** The boundary of a multipart Content-Type (without the leading "--"), or null. */
export function boundaryOf(contentType: string | undefined): string | null {
  const match = /boundary=(?:"([^"]{1,200})"|([^;\s]{1,200}))/i.exec(contentType ?? '');
  const raw = match?.[1] ?? match?.[2];
  return raw ? raw.replace(/^--/, '') : null;
}

export class MjpegParser {
  private buffer: Buffer = Buffer.alloc(0);
  private state: 'boundary' | 'headers' | 'body' = 'boundary';
  private length = -1;
  private readonly delimiter: Buffer;

  constructor(
    boundary: string,
    private readonly maxPartBytes: number,
    private readonly onPart: (jpeg: Buffer) => void,
  ) {
    this.delimiter = Buffer.from(`--${boundary}`, 'latin1');
  }

  get bufferedBytes(): number {
    return this.buffer.length;
  }

  /** Throws a CameraError(PROTOCOL) when the stream breaks a bound or is not a JPEG stream. */
  push(chunk: Buffer): void {
    this.buffer = this.buffer.length ? Buffer.concat([this.buffer, chunk]) : chunk;
    for (;;) {
      if (this.state === 'boundary') {
        const at = this.buffer.indexOf(this.delimiter);
        if (at < 0) {
          if (this.buffer.length > this.maxPartBytes + MAX_HEADER_BYTES) throw new CameraError('PROTOCOL', 'the MJPEG stream has no part boundary where one was due');
          return;
        }
        const lineEnd = this.buffer.indexOf('\r\n', at + this.delimiter.length);
        if (lineEnd < 0) {
          // A delimiter whose line never ends would otherwise make the buffer grow without bound.
          if (this.buffer.length - at > MAX_HEADER_BYTES) throw new CameraError('PROTOCOL', 'the MJPEG part boundary line does not end');
          return;
        }
        this.buffer = this.buffer.subarray(lineEnd + 2);
        this.state = 'headers';
      }
      if (this.state === 'headers') {
        const end = this.buffer.indexOf(CRLF2);
        // A part without headers starts right after the boundary line.
        const headerEnd = this.buffer.subarray(0, 2).toString('latin1') === '\r\n' ? 0 : end;
        if (headerEnd < 0) {
          if (this.buffer.length > MAX_HEADER_BYTES) throw new CameraError('PROTOCOL', 'the MJPEG part headers are too long');
          return;
        }
        const headers = this.buffer.subarray(0, headerEnd).toString('latin1');
        const length = /(?:^|\r\n)content-length:\s*(\d{1,10})/i.exec(headers);
        this.length = length ? Number(length[1]) : -1;
        if (this.length > this.maxPartBytes) throw new CameraError('PROTOCOL', `the camera announced a part of ${this.length} bytes (limit ${this.maxPartBytes})`);
        this.buffer = this.buffer.subarray(headerEnd === 0 ? 2 : headerEnd + 4);
        this.state = 'body';
      }
      let part: Buffer;
      if (this.length >= 0) {
        if (this.buffer.length < this.length) return;
        part = this.buffer.subarray(0, this.length);
        this.buffer = this.buffer.subarray(this.length);
      } else {
        const at = this.buffer.indexOf(this.delimiter);
        if (at < 0) {
          if (this.buffer.length > this.maxPartBytes) throw new CameraError('PROTOCOL', `an MJPEG part is larger than ${this.maxPartBytes} bytes`);
          return;
        }
        part = trimCrlf(this.buffer.subarray(0, at));
        this.buffer = this.buffer.subarray(at);
      }
      this.state = 'boundary';
      if (part[0] !== 0xff || part[1] !== 0xd8) throw new CameraError('PROTOCOL', 'the MJPEG stream carries a part that is not a JPEG');
      // The part is copied so that the stream's large buffer is not held by a cached frame.
      this.onPart(Buffer.from(part));
    }
  }
}

function trimCrlf(part: Buffer): Buffer {
  let end = part.length;
  while (end > 0 && (part[end - 1] === 0x0a || part[end - 1] === 0x0d)) end--;
  return part.subarray(0, end);
}
