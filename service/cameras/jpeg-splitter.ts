/**
 * Cuts a byte stream of back-to-back JPEGs (ffmpeg's `image2pipe` of
 * mjpeg, any chunking) into whole JPEG files, SOI (FF D8) to EOI (FF D9).
 *
 * It walks the JPEG's segments by their lengths instead of searching for
 * FF D9, so an EXIF thumbnail inside an APP segment does not end a frame
 * early; in entropy-coded data a marker is FF followed by anything but 00
 * (stuffing), FF (fill) or D0-D7 (restart).
 *
 * Never trust a peer: a frame that grows beyond `maxFrameBytes` is dropped
 * (counted in `oversize`) and the splitter looks for the next SOI; bytes
 * that are no JPEG are skipped (counted in `skippedBytes`). Memory stays
 * under about twice `maxFrameBytes` whatever arrives.
 */

export const DEFAULT_MAX_FRAME_BYTES = 4 * 1024 * 1024;

type Mode = 'seek' | 'marker' | 'entropy';

export class JpegSplitter {
  /** Frames dropped because they grew beyond maxFrameBytes. */
  oversize = 0;
  /** Bytes thrown away outside any frame (garbage, the tail of a dropped frame). */
  skippedBytes = 0;

  private store: Buffer;
  private length = 0;
  /** Where parsing resumes in `store` (the frame, if any, starts at 0). */
  private pos = 0;
  private mode: Mode = 'seek';

  constructor(readonly maxFrameBytes = DEFAULT_MAX_FRAME_BYTES) {
    this.store = Buffer.alloc(Math.min(64 * 1024, maxFrameBytes + 2));
  }

  /** Bytes held for an incomplete frame. */
  get pending(): number {
    return this.length;
  }

  /** Feeds a chunk; returns the frames it completed, each a Buffer of its own. */
  push(chunk: Buffer): Buffer[] {
    const frames: Buffer[] = [];
    let offset = 0;
    while (offset < chunk.length) {
      // Never hold more than one frame's bound (plus a marker's few bytes) at once.
      const room = this.maxFrameBytes + 2 - this.length;
      const take = Math.min(room, chunk.length - offset);
      this.append(chunk.subarray(offset, offset + take));
      offset += take;
      this.parse(frames);
      if (this.length > this.maxFrameBytes) this.dropOversize();
    }
    return frames;
  }

  /** Forgets everything held (a new stream starts). */
  reset(): void {
    this.length = 0;
    this.pos = 0;
    this.mode = 'seek';
  }

  private append(bytes: Buffer): void {
    const needed = this.length + bytes.length;
    if (needed > this.store.length) {
      const grown = Buffer.alloc(Math.min(Math.max(needed, this.store.length * 2), this.maxFrameBytes + 2));
      this.store.copy(grown, 0, 0, this.length);
      this.store = grown;
    }
    bytes.copy(this.store, this.length);
    this.length = needed;
  }

  /** Drops the first `n` bytes held. */
  private consume(n: number): void {
    this.store.copy(this.store, 0, n, this.length);
    this.length -= n;
    this.pos = Math.max(0, this.pos - n);
  }

  private dropOversize(): void {
    this.oversize++;
    this.skippedBytes += this.length;
    // Keep a trailing FF: it may be the first half of the next SOI.
    const keep = this.store[this.length - 1] === 0xff ? 1 : 0;
    this.consume(this.length - keep);
    this.pos = 0;
    // The rest of that frame is no frame: seeking skips it up to the next SOI.
    this.mode = 'seek';
  }

  private parse(frames: Buffer[]): void {
    for (;;) {
      if (this.mode === 'seek' && !this.seekSoi()) return;
      if (this.mode === 'entropy' && !this.scanEntropy()) return;
      if (this.mode === 'marker') {
        const step = this.readMarker();
        if (step === 'more') return;
        if (step === 'end') {
          frames.push(Buffer.from(this.store.subarray(0, this.pos)));
          this.consume(this.pos);
          this.pos = 0;
          this.mode = 'seek';
        }
      }
    }
  }

  /** Finds FF D8 and moves it to the front; false when more bytes are needed. */
  private seekSoi(): boolean {
    const at = this.store.subarray(0, this.length).indexOf(SOI);
    if (at < 0) {
      const keep = this.length > 0 && this.store[this.length - 1] === 0xff ? 1 : 0;
      this.skippedBytes += this.length - keep;
      this.consume(this.length - keep);
      return false;
    }
    this.skippedBytes += at;
    this.consume(at);
    this.pos = 2;
    this.mode = 'marker';
    return true;
  }

  /** Reads the marker at `pos`: 'next' when it moved on, 'end' at EOI, 'more' when bytes are missing. */
  private readMarker(): 'next' | 'end' | 'more' {
    const s = this.store;
    let p = this.pos;
    if (p >= this.length) return 'more';
    if (s[p] !== 0xff) return this.resync();
    while (p + 1 < this.length && s[p + 1] === 0xff) p++; // fill bytes
    if (p + 1 >= this.length) return 'more';
    const marker = s[p + 1];
    if (marker === 0xd9) {
      this.pos = p + 2;
      return 'end';
    }
    if (marker === 0xd8 || marker === 0x00) return this.resync();
    if ((marker >= 0xd0 && marker <= 0xd7) || marker === 0x01) {
      this.pos = p + 2;
      return 'next';
    }
    if (p + 3 >= this.length) return 'more';
    const segmentLength = s.readUInt16BE(p + 2);
    if (segmentLength < 2) return this.resync();
    this.pos = p + 2 + segmentLength;
    if (marker === 0xda) this.mode = 'entropy';
    return 'next';
  }

  /** Moves `pos` to the FF of the marker that ends the entropy-coded data; false when it is not there yet. */
  private scanEntropy(): boolean {
    const s = this.store;
    let p = this.pos;
    while (p < this.length) {
      // The store holds stale bytes past `length`: search only what was received.
      const ff = s.subarray(0, this.length).indexOf(0xff, p);
      if (ff < 0 || ff + 1 >= this.length) {
        this.pos = ff < 0 ? this.length : ff;
        return false;
      }
      const next = s[ff + 1];
      if (next === 0x00 || next === 0xff || (next >= 0xd0 && next <= 0xd7)) {
        p = ff + (next === 0xff ? 1 : 2);
        continue;
      }
      this.pos = ff;
      this.mode = 'marker';
      return true;
    }
    this.pos = p;
    return false;
  }

  /** A broken frame: drop its first byte and look for the next SOI. */
  private resync(): 'next' {
    this.skippedBytes += 1;
    this.consume(1);
    this.pos = 0;
    this.mode = 'seek';
    return 'next';
  }
}

const SOI = Buffer.from([0xff, 0xd8]);
