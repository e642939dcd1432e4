/** A stream that lets `bytesPerSecond` through (a slow Wi-Fi link for uploads); its timer ends with the stream. */
import { Transform, type TransformCallback } from 'node:stream';

export class Throttle extends Transform {
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly bytesPerSecond: number) {
    super();
  }

  _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    const slice = Math.max(1, Math.floor(this.bytesPerSecond / 10));
    let offset = 0;
    const step = () => {
      this.timer = null;
      if (this.destroyed) return done();
      this.push(chunk.subarray(offset, offset + slice));
      offset += slice;
      if (offset >= chunk.length) return done();
      this.timer = setTimeout(step, 100);
    };
    step();
  }

  _destroy(err: Error | null, cb: (error: Error | null) => void): void {
    if (this.timer) clearTimeout(this.timer);
    cb(err);
  }
}
