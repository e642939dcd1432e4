/**
 * The push-based byte scanner behind the G-code metadata reader (`gcode-meta.ts`): it decides
 * which bytes are head (parsed line by line, extended while a thumbnail, config or Bambu header
 * section is open), middle (only searched for layer markers, see `gcode-layers.ts`) and tail
 * (the last `tailBytes`, parsed line by line); the lines themselves are read by
 * `gcode-meta-lines.ts`. Memory: the head's current line, the tail buffer and what the line
 * reader keeps (capped).
 */
import { GcodeCommentLines } from './gcode-meta-lines';
import type { GcodeMetaOptions, GcodeMetaResult, GcodeMetaStats } from './gcode-meta-types';
import { LayerMarkerCounter } from './gcode-layers';

const DEFAULTS = {
  headBytes: 1 << 20,
  tailBytes: 256 << 10,
  maxThumbnailBase64: 16 << 20,
  maxThumbnails: 16,
  countLayers: true,
  maxLineBytes: 1 << 20,
  chunkBytes: 1 << 20,
};

const MAX_CONFIG_EXTENSION = 8 << 20;
const MAX_HEADER_SECTION = 16 << 20;
const NL_SEMI = Buffer.from('\n;', 'latin1');

/**
 * The push-based state machine behind {@link readGcodeMetadata}. Feed it with
 * `pushHead` until `inHead` is false, then `countMiddle` (optional) and
 * `parseTail`, or simply `push` every chunk and call `end`.
 */
export class GcodeMetaScanner {
  readonly options: Required<GcodeMetaOptions>;
  readonly stats: GcodeMetaStats = {
    bytesTotal: 0,
    bytesRead: 0,
    headBytesParsed: 0,
    tailBytesParsed: 0,
    middleBytesScanned: 0,
    layerMarkersCounted: null,
    maxCarryBytes: 0,
    maxTailBufferBytes: 0,
    maxThumbnailBase64: 0,
    thumbnailsSkipped: 0,
  };


  private headDone = false;
  private carry: Buffer | null = null;
  private skippingLongLine = false;
  private readonly layers = new LayerMarkerCounter();
  private readonly lines: GcodeCommentLines;
  private readonly tailChunks: Buffer[] = [];
  private tailHeld = 0;
  private middleTotal = 0;
  private tailParsed = false;
  private ended = false;

  constructor(options: GcodeMetaOptions = {}) {
    this.options = { ...DEFAULTS, ...stripUndefined(options) };
    this.lines = new GcodeCommentLines(this.options, this.stats, this.layers);
  }

  get inHead(): boolean {
    return !this.headDone;
  }

  /** True when the middle must be read to count layers (the head stated no layer count). */
  get wantsMiddle(): boolean {
    return this.headDone && this.layers.active;
  }

  /** Any chunk, in order. */
  push(chunk: Buffer): void {
    this.stats.bytesRead += chunk.length;
    this.stats.bytesTotal += chunk.length;
    let rest = chunk;
    if (!this.headDone) {
      const used = this.consumeHead(chunk);
      if (used >= chunk.length) return;
      rest = chunk.subarray(used);
    }
    this.countMiddleInternal(rest);
    this.keepTail(rest);
  }

  /**
   * Head bytes only: parses lines and returns how many bytes of `chunk` it
   * used (all of them while the head lasts; up to the end of the last head line
   * when the head ends inside the chunk).
   */
  pushHead(chunk: Buffer): number {
    const used = this.consumeHead(chunk);
    this.stats.bytesRead += used;
    return used;
  }

  /** Middle bytes, in order, only counted (not kept): for readers that fetch the tail themselves. */
  countMiddle(chunk: Buffer): void {
    this.stats.bytesRead += chunk.length;
    this.countMiddleInternal(chunk);
  }

  /** The tail text of a file, read separately. `atLineStart` is false when it begins mid-line. */
  parseTail(tail: Buffer, atLineStart: boolean): void {
    this.stats.bytesRead += tail.length;
    this.parseTailText(tail, atLineStart);
  }

  /** Finishes and returns the result. `totalBytes` is the file size when the caller skipped bytes. */
  end(totalBytes?: number): GcodeMetaResult {
    if (this.ended) throw new Error('GcodeMetaScanner.end called twice');
    this.ended = true;
    if (!this.headDone) {
      if (this.carry && this.carry.length && this.carry[0] === 59) this.lines.headLine(this.carry.toString('utf8'));
      this.carry = null;
      this.finishHead();
    }
    if (!this.tailParsed && this.tailHeld > 0) {
      const tail = Buffer.concat(this.tailChunks);
      const keep = tail.subarray(Math.max(0, tail.length - this.options.tailBytes));
      this.parseTailText(keep, this.middleTotal <= this.options.tailBytes);
    }
    this.tailChunks.length = 0;
    this.tailHeld = 0;
    this.lines.dropOpenThumbnail();
    if (totalBytes !== undefined) this.stats.bytesTotal = totalBytes;

    const counted = this.layers.finish();
    this.stats.layerMarkersCounted = counted;

    return { ...this.lines.result(counted), stats: { ...this.stats } };
  }

  // -------------------------------------------------------------------------

  private consumeHead(chunk: Buffer): number {
    let pos = 0;
    while (pos < chunk.length) {
      // Fast path: G-code lines carry nothing for us; jump natively to the next comment line.
      if (this.lines.thumb === null && this.carry === null && !this.skippingLongLine && chunk[pos] !== 59) {
        const skipped = this.skipToComment(chunk, pos);
        if (skipped < 0) return -skipped - 1; // the head ended inside this chunk
        pos = skipped;
        continue;
      }
      const nl = chunk.indexOf(10, pos);
      if (nl === -1) {
        this.appendCarry(chunk.subarray(pos));
        return chunk.length;
      }
      let lineBuf: Buffer;
      const carried = this.carry ? this.carry.length : 0;
      if (this.carry) {
        lineBuf = this.skippingLongLine ? Buffer.alloc(0) : Buffer.concat([this.carry, chunk.subarray(pos, nl)]);
        this.carry = null;
      } else {
        lineBuf = this.skippingLongLine ? Buffer.alloc(0) : chunk.subarray(pos, nl);
      }
      const wasSkipping = this.skippingLongLine;
      this.skippingLongLine = false;
      const lineLen = carried + nl + 1 - pos;
      this.stats.headBytesParsed += lineLen;
      if (this.lines.inConfig) this.lines.configBytes += lineLen;
      pos = nl + 1;
      // Only comment lines carry metadata and thumbnails: skip G-code lines without decoding them.
      if (!wasSkipping && lineBuf.length <= this.options.maxLineBytes && (lineBuf[0] === 59 || this.lines.thumb !== null)) {
        this.lines.linesSinceThumbnail++;
        this.lines.headLine(lineBuf.toString('utf8'));
      } else if (lineBuf.length > 0) {
        this.lines.linesSinceThumbnail++;
      }
      if (this.headLimitReached()) {
        this.finishHead();
        return pos;
      }
    }
    return pos;
  }

  /**
   * From a line start that is not a comment: skips whole lines up to the next
   * line starting with ";" (or the chunk's end), honouring the head limit.
   * Returns the new position, or -(end + 1) when the head ended at `end`.
   */
  private skipToComment(chunk: Buffer, pos: number): number {
    const next = chunk.indexOf(NL_SEMI, pos); // the newline before the next comment line
    const stop = next === -1 ? chunk.lastIndexOf(10) : next; // last newline we may skip through
    const remaining = this.options.headBytes - this.stats.headBytesParsed;
    const extended = this.lines.linesSinceThumbnail < 5 || (this.lines.inConfig && this.lines.configBytes < MAX_CONFIG_EXTENSION) || (this.lines.headerSectionOpen && this.stats.headBytesParsed < MAX_HEADER_SECTION);
    if (!extended && (stop === -1 || stop < pos ? chunk.length - pos : stop + 1 - pos) >= remaining) {
      // The limit falls in this stretch: end the head at the first line end at or after it.
      const nl = chunk.indexOf(10, pos + Math.max(0, remaining - 1));
      if (nl !== -1) {
        this.countSkipped(chunk, pos, nl + 1);
        this.finishHead();
        return -(nl + 1) - 1;
      }
    }
    if (stop === -1 || stop < pos) {
      // No line end at all: the rest is the start of a long G-code line.
      this.stats.headBytesParsed += chunk.length - pos;
      this.carry = Buffer.alloc(0);
      this.skippingLongLine = true;
      return chunk.length;
    }
    this.countSkipped(chunk, pos, stop + 1);
    if (next === -1 && stop + 1 < chunk.length) {
      // A partial G-code line at the end of the chunk (it cannot be a comment, or `next` would have found it).
      this.stats.headBytesParsed += chunk.length - stop - 1;
      this.carry = Buffer.alloc(0);
      this.skippingLongLine = true;
      return chunk.length;
    }
    return stop + 1;
  }

  private countSkipped(chunk: Buffer, from: number, to: number): void {
    this.stats.headBytesParsed += to - from;
    if (this.lines.inConfig) this.lines.configBytes += to - from;
    if (this.lines.linesSinceThumbnail < 5) {
      for (let i = chunk.indexOf(10, from); i !== -1 && i < to; i = chunk.indexOf(10, i + 1)) this.lines.linesSinceThumbnail++;
    }
  }

  private appendCarry(part: Buffer): void {
    if (this.skippingLongLine) {
      this.stats.headBytesParsed += part.length;
      return;
    }
    const next = this.carry ? Buffer.concat([this.carry, part]) : Buffer.from(part);
    if (next.length > this.options.maxLineBytes) {
      // A line longer than any slicer writes: skip it up to its newline.
      this.stats.headBytesParsed += next.length;
      this.carry = Buffer.alloc(0);
      this.skippingLongLine = true;
      return;
    }
    this.carry = next;
    // Bytes of the carry are counted when its line completes.
    if (next.length > this.stats.maxCarryBytes) this.stats.maxCarryBytes = next.length;
  }

  private headLimitReached(): boolean {
    if (this.stats.headBytesParsed < this.options.headBytes) return false;
    if (this.lines.thumb && !this.lines.thumb.discard) return false;
    // Thumbnail blocks come in runs (16x16, 313x173, ...): read the next one if it follows at once.
    if (this.lines.linesSinceThumbnail < 5) return false;
    if (this.lines.inConfig && this.lines.configBytes < MAX_CONFIG_EXTENSION) return false;
    // Bambu / Orca: header, thumbnails and config come before EXECUTABLE_BLOCK_START; read them all (capped).
    if (this.lines.headerSectionOpen && this.stats.headBytesParsed < MAX_HEADER_SECTION) return false;
    return true;
  }

  private finishHead(): void {
    this.headDone = true;
    this.lines.endHead();
    // Count layers through the rest only when no header gave the number.
    if (!this.lines.layerCountStated && this.options.countLayers) this.layers.plan(this.lines.resolveFlavor());
  }


  private countMiddleInternal(chunk: Buffer): void {
    this.stats.middleBytesScanned += chunk.length;
    this.middleTotal += chunk.length;
    this.layers.count(chunk);
  }

  private keepTail(chunk: Buffer): void {
    if (chunk.length === 0) return;
    // Hold references (no copies) to the last chunks covering `tailBytes`: at most tailBytes + one chunk.
    const limit = this.options.tailBytes;
    this.tailChunks.push(chunk);
    this.tailHeld += chunk.length;
    while (this.tailChunks.length > 1 && this.tailHeld - this.tailChunks[0].length >= limit) {
      this.tailHeld -= this.tailChunks.shift()!.length;
    }
    if (this.tailHeld > this.stats.maxTailBufferBytes) this.stats.maxTailBufferBytes = this.tailHeld;
  }

  private parseTailText(tail: Buffer, atLineStart: boolean): void {
    this.tailParsed = true;
    let start = 0;
    if (!atLineStart) {
      const nl = tail.indexOf(10);
      if (nl === -1) return;
      start = nl + 1;
    }
    this.stats.tailBytesParsed += tail.length - start;
    const text = tail.toString('utf8', start);
    for (const line of text.split('\n')) this.lines.tailLine(line.endsWith('\r') ? line.slice(0, -1) : line);
  }

}

function stripUndefined<T extends object>(o: T): Partial<T> {
  const out: Partial<T> = {};
  for (const [k, v] of Object.entries(o)) if (v !== undefined) (out as Record<string, unknown>)[k] = v;
  return out;
}
