/**
 * Streaming G-code metadata and thumbnail reader.
 *
 * The file is never held in memory. Lines are parsed only in the head (first
 * `headBytes`, extended while a thumbnail or config block is open) and in the
 * tail (last `tailBytes`); the middle is streamed through and only searched
 * for layer-change markers when the header does not state a layer count (a
 * path is read with positioned reads, so when no count is needed the middle is
 * not read at all). Memory: the head's current line, the thumbnails' base64,
 * the raw key map (capped) and the tail buffer.
 *
 * Understands PrusaSlicer (`; key = value` header/footer and
 * `; prusaslicer_config = begin/end`), OrcaSlicer / Bambu Studio
 * (`; HEADER_BLOCK_START` with `; key: value`, `; CONFIG_BLOCK_START` with
 * `; key = value`) and Cura (`;TIME:`, `;Filament used:`, `;Layer height:`,
 * `;LAYER_COUNT:`, `;SETTING_3`), and thumbnail blocks
 * `; thumbnail[_JPG|_QOI] begin WxH LEN` ... `; thumbnail[_X] end`.
 */
import { open } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { PreviewError } from './errors';
import { cleanSlicerName, mergeMetadata, metadataFromCura, metadataFromSlicerKeys, type PrintMetadata } from './metadata';
import { imageInfo, toDisplayImage, type ImageFormat } from './png';

export type GcodeFlavor = 'prusaslicer' | 'orcaslicer' | 'bambustudio' | 'cura' | 'unknown';

export interface GcodeThumbnail {
  /** Format of the decoded bytes (from their magic, not only the block keyword). */
  format: ImageFormat;
  /** The block keyword: "thumbnail", "thumbnail_JPG", "thumbnail_QOI". */
  keyword: string;
  width: number;
  height: number;
  /** LEN from the begin line: the length of the base64 text. */
  declaredLength: number;
  /** Length of the base64 text actually found. */
  base64Length: number;
  /** The decoded image bytes (PNG, JPEG or QOI). */
  data: Buffer;
}

export interface GcodeMetaOptions {
  /** Bytes of the file parsed line by line from the start (default 1 MiB). */
  headBytes?: number;
  /** Bytes parsed line by line at the end (default 256 KiB). */
  tailBytes?: number;
  /** Largest base64 text of one thumbnail (default 16 MiB); larger blocks are dropped. */
  maxThumbnailBase64?: number;
  /** Thumbnails kept at most (default 16). */
  maxThumbnails?: number;
  /** Count layer-change markers through the middle when no header states the layer count (default true). */
  countLayers?: boolean;
  /** Longest line kept (default 1 MiB); longer lines are skipped. */
  maxLineBytes?: number;
  /** Read size for files (default 1 MiB). */
  chunkBytes?: number;
}

export interface GcodeMetaStats {
  bytesTotal: number;
  /** Bytes actually read (less than bytesTotal when the middle of a file was skipped). */
  bytesRead: number;
  headBytesParsed: number;
  tailBytesParsed: number;
  middleBytesScanned: number;
  layerMarkersCounted: number | null;
  /** Largest partial line held between chunks. */
  maxCarryBytes: number;
  /** Largest amount of tail data held while streaming. */
  maxTailBufferBytes: number;
  /** Largest base64 text held for one thumbnail. */
  maxThumbnailBase64: number;
  thumbnailsSkipped: number;
}

export interface GcodeMetaResult {
  metadata: PrintMetadata;
  flavor: GcodeFlavor;
  thumbnails: GcodeThumbnail[];
  /** Raw `key = value` / header keys as found (lower-cased keys, capped). */
  raw: Record<string, string>;
  stats: GcodeMetaStats;
}

const DEFAULTS = {
  headBytes: 1 << 20,
  tailBytes: 256 << 10,
  maxThumbnailBase64: 16 << 20,
  maxThumbnails: 16,
  countLayers: true,
  maxLineBytes: 1 << 20,
  chunkBytes: 1 << 20,
};

const MAX_RAW_KEYS = 10_000;
const MAX_RAW_VALUE = 8192;
const MAX_CONFIG_EXTENSION = 8 << 20;
const MAX_HEADER_SECTION = 16 << 20;
const MAX_CURA_SETTINGS = 256 << 10;

const NL_SEMI = Buffer.from('\n;', 'latin1');
const THUMB_BEGIN = /^;\s*(thumbnail(?:_(\w+))?)\s+begin\s+(\d+)\s*x\s*(\d+)\s+(\d+)/i;
const THUMB_END = /^;\s*thumbnail(?:_\w+)?\s+end\b/i;
const CURA_KEYS = new Set(['time', 'filament used', 'layer height', 'layer_count', 'flavor', 'target_machine.name', 'print.time']);

/** Layer-change markers by slicer, as whole lines (or line prefixes for Cura). */
const LAYER_MARKERS = {
  prusa: ';LAYER_CHANGE',
  bambu: '; CHANGE_LAYER',
  cura: ';LAYER:',
} as const;
type MarkerKind = keyof typeof LAYER_MARKERS;

interface OpenThumb {
  keyword: string;
  kind: string;
  width: number;
  height: number;
  declared: number;
  parts: string[];
  chars: number;
  discard: boolean;
}

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
  private thumb: OpenThumb | null = null;
  private readonly thumbs: GcodeThumbnail[] = [];
  private inHeaderBlock = false;
  /** Between Bambu/Orca's HEADER_BLOCK_START and CONFIG_BLOCK_END / EXECUTABLE_BLOCK_START. */
  private headerSectionOpen = false;
  private linesSinceThumbnail = Infinity;
  private inConfig = false;
  private configBytes = 0;
  private readonly raw: Record<string, string> = {};
  private rawCount = 0;
  private readonly cura: Record<string, string> = {};
  private curaSettings = '';
  private slicerText: string | null = null;
  private flavor: GcodeFlavor = 'unknown';
  private readonly headMarkers: Record<MarkerKind, number> = { prusa: 0, bambu: 0, cura: 0 };
  private middlePatterns: { kind: MarkerKind; bytes: Buffer; wholeLine: boolean; pending: boolean }[] = [];
  private middleCounts: Record<MarkerKind, number> = { prusa: 0, bambu: 0, cura: 0 };
  /** The last bytes of the middle so far (a marker can straddle two chunks) and the byte before them. */
  private middleEdge: Buffer = Buffer.alloc(0);
  private middleEdgePrev = 10;
  private readonly tailChunks: Buffer[] = [];
  private tailHeld = 0;
  private middleTotal = 0;
  private tailParsed = false;
  private ended = false;

  constructor(options: GcodeMetaOptions = {}) {
    this.options = { ...DEFAULTS, ...stripUndefined(options) };
  }

  get inHead(): boolean {
    return !this.headDone;
  }

  /** True when the middle must be read to count layers (the head stated no layer count). */
  get wantsMiddle(): boolean {
    return this.headDone && this.middlePatterns.length > 0;
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
      if (this.carry && this.carry.length && this.carry[0] === 59) this.handleHeadLine(this.carry.toString('utf8'));
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
    if (this.thumb) {
      this.stats.thumbnailsSkipped++;
      this.thumb = null;
    }
    if (totalBytes !== undefined) this.stats.bytesTotal = totalBytes;

    let counted: number | null = null;
    for (const pat of this.middlePatterns) {
      // A whole-line marker at the very end of the file.
      if (pat.pending) this.middleCounts[pat.kind]++;
      pat.pending = false;
    }
    if (this.middlePatterns.length > 0) {
      let best = 0;
      for (const kind of Object.keys(LAYER_MARKERS) as MarkerKind[]) {
        best = Math.max(best, this.headMarkers[kind] + this.middleCounts[kind]);
      }
      counted = best > 0 ? best : null;
    }
    this.stats.layerMarkersCounted = counted;

    const flavor = this.resolveFlavor();
    const slicer = cleanSlicerName(this.slicerText);
    let metadata: PrintMetadata;
    if (flavor === 'cura') {
      metadata = mergeMetadata(metadataFromCura(this.cura, this.curaSettings), { slicer });
    } else {
      metadata = metadataFromSlicerKeys(this.raw, { slicer });
      if (metadata.estimated_print_time === null && Object.keys(this.cura).length > 0) {
        metadata = mergeMetadata(metadata, metadataFromCura(this.cura, this.curaSettings));
      }
    }
    if (metadata.layer_count === null && counted !== null) metadata.layer_count = counted;
    if (metadata.slicer === null && slicer) metadata.slicer = slicer;
    return { metadata, flavor, thumbnails: this.thumbs.slice(), raw: { ...this.raw }, stats: { ...this.stats } };
  }

  // -------------------------------------------------------------------------

  private consumeHead(chunk: Buffer): number {
    let pos = 0;
    while (pos < chunk.length) {
      // Fast path: G-code lines carry nothing for us; jump natively to the next comment line.
      if (this.thumb === null && this.carry === null && !this.skippingLongLine && chunk[pos] !== 59) {
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
      if (this.inConfig) this.configBytes += lineLen;
      pos = nl + 1;
      // Only comment lines carry metadata and thumbnails: skip G-code lines without decoding them.
      if (!wasSkipping && lineBuf.length <= this.options.maxLineBytes && (lineBuf[0] === 59 || this.thumb !== null)) {
        this.linesSinceThumbnail++;
        this.handleHeadLine(lineBuf.toString('utf8'));
      } else if (lineBuf.length > 0) {
        this.linesSinceThumbnail++;
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
    const extended = this.linesSinceThumbnail < 5 || (this.inConfig && this.configBytes < MAX_CONFIG_EXTENSION) || (this.headerSectionOpen && this.stats.headBytesParsed < MAX_HEADER_SECTION);
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
    if (this.inConfig) this.configBytes += to - from;
    if (this.linesSinceThumbnail < 5) {
      for (let i = chunk.indexOf(10, from); i !== -1 && i < to; i = chunk.indexOf(10, i + 1)) this.linesSinceThumbnail++;
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
    if (this.thumb && !this.thumb.discard) return false;
    // Thumbnail blocks come in runs (16x16, 313x173, ...): read the next one if it follows at once.
    if (this.linesSinceThumbnail < 5) return false;
    if (this.inConfig && this.configBytes < MAX_CONFIG_EXTENSION) return false;
    // Bambu / Orca: header, thumbnails and config come before EXECUTABLE_BLOCK_START; read them all (capped).
    if (this.headerSectionOpen && this.stats.headBytesParsed < MAX_HEADER_SECTION) return false;
    return true;
  }

  private finishHead(): void {
    this.headDone = true;
    if (this.thumb) {
      this.stats.thumbnailsSkipped++;
      this.thumb = null;
    }
    this.inConfig = false;
    this.inHeaderBlock = false;
    this.headerSectionOpen = false;
    // Count layers through the rest only when no header gave the number.
    const known = ['total layer number', 'layer_count', 'total_layer_number'].some((k) => k in this.raw) || 'layer_count' in this.cura;
    if (!known && this.options.countLayers) {
      const seen = (Object.keys(this.headMarkers) as MarkerKind[]).filter((k) => this.headMarkers[k] > 0);
      let kinds: MarkerKind[];
      if (seen.length) kinds = [seen.reduce((a, b) => (this.headMarkers[a] >= this.headMarkers[b] ? a : b))];
      else {
        const flavor = this.resolveFlavor();
        kinds = flavor === 'cura' ? ['cura'] : flavor === 'bambustudio' ? ['bambu'] : flavor === 'unknown' ? ['prusa', 'cura'] : ['prusa'];
      }
      this.middlePatterns = kinds.map((kind) => ({ kind, bytes: Buffer.from(LAYER_MARKERS[kind], 'latin1'), wholeLine: kind !== 'cura', pending: false }));
    }
  }

  private countMiddleInternal(chunk: Buffer): void {
    this.stats.middleBytesScanned += chunk.length;
    this.middleTotal += chunk.length;
    if (this.middlePatterns.length === 0 || chunk.length === 0) return;
    const edge = this.middleEdge;
    for (const pat of this.middlePatterns) {
      const { kind, bytes, wholeLine } = pat;
      let n = 0;
      // A whole-line marker that ended exactly at the previous chunk's end.
      if (pat.pending) {
        pat.pending = false;
        if (chunk[0] === 10 || chunk[0] === 13) n++;
      }
      // `end` is the index in `chunk` just after a match; the match counts if it ends its line.
      const ends = (end: number): void => {
        if (!wholeLine) n++;
        else if (end >= chunk.length) pat.pending = true;
        else if (chunk[end] === 10 || chunk[end] === 13) n++;
      };
      // Markers that start in the previous chunk's last bytes and end in this one.
      if (edge.length) {
        const joined = Buffer.concat([edge, chunk.subarray(0, bytes.length - 1)]);
        for (let i = joined.indexOf(bytes); i !== -1 && i < edge.length; i = joined.indexOf(bytes, i + 1)) {
          const prev = i === 0 ? this.middleEdgePrev : joined[i - 1];
          if (i + bytes.length > edge.length && prev === 10) ends(i + bytes.length - edge.length);
        }
      }
      // Markers inside the chunk, at a line start.
      for (let i = chunk.indexOf(bytes); i !== -1; i = chunk.indexOf(bytes, i + bytes.length)) {
        const prev = i === 0 ? (edge.length ? edge[edge.length - 1] : this.middleEdgePrev) : chunk[i - 1];
        if (prev === 10) ends(i + bytes.length);
      }
      this.middleCounts[kind] += n;
    }
    const keep = Math.max(...this.middlePatterns.map((p) => p.bytes.length)) - 1;
    if (chunk.length > keep) {
      this.middleEdge = Buffer.from(chunk.subarray(chunk.length - keep));
      this.middleEdgePrev = chunk[chunk.length - keep - 1];
    } else {
      const all = Buffer.concat([edge, chunk]);
      const cut = Math.max(0, all.length - keep);
      if (cut > 0) this.middleEdgePrev = all[cut - 1];
      this.middleEdge = Buffer.from(all.subarray(cut));
    }
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
    for (const line of text.split('\n')) this.handleLine(line.endsWith('\r') ? line.slice(0, -1) : line, false);
  }

  private handleHeadLine(lineText: string): void {
    const line = lineText.endsWith('\r') ? lineText.slice(0, -1) : lineText;
    if (this.thumb) {
      if (THUMB_END.test(line)) {
        this.closeThumbnail();
        return;
      }
      if (line.startsWith(';')) {
        if (!this.thumb.discard) {
          const part = line.slice(1).trim();
          if (part.length) {
            this.thumb.chars += part.length;
            if (this.thumb.chars > this.options.maxThumbnailBase64) {
              this.thumb.discard = true;
              this.thumb.parts = [];
            } else {
              this.thumb.parts.push(part);
              if (this.thumb.chars > this.stats.maxThumbnailBase64) this.stats.maxThumbnailBase64 = this.thumb.chars;
            }
          }
        }
        return;
      }
      // A G-code line inside a thumbnail block: the block is broken.
      this.stats.thumbnailsSkipped++;
      this.thumb = null;
    }
    const begin = THUMB_BEGIN.exec(line);
    if (begin) {
      const kind = (begin[2] ?? 'PNG').toUpperCase();
      const supported = kind === 'PNG' || kind === 'JPG' || kind === 'JPEG' || kind === 'QOI';
      this.thumb = {
        keyword: begin[1],
        kind,
        width: Number(begin[3]),
        height: Number(begin[4]),
        declared: Number(begin[5]),
        parts: [],
        chars: 0,
        discard: !supported || this.thumbs.length >= this.options.maxThumbnails,
      };
      return;
    }
    this.handleLine(line, true);
  }

  private closeThumbnail(): void {
    const t = this.thumb!;
    this.thumb = null;
    this.linesSinceThumbnail = 0;
    if (t.discard) {
      this.stats.thumbnailsSkipped++;
      return;
    }
    const b64 = t.parts.join('');
    const data = Buffer.from(b64, 'base64');
    const info = imageInfo(data);
    if (!info) {
      this.stats.thumbnailsSkipped++;
      return;
    }
    this.thumbs.push({
      format: info.format,
      keyword: t.keyword,
      width: info.width || t.width,
      height: info.height || t.height,
      declaredLength: t.declared,
      base64Length: b64.length,
      data,
    });
  }

  /** Metadata lines of the head and the tail. */
  private handleLine(line: string, inHead: boolean): void {
    if (line.length < 2 || line.charCodeAt(0) !== 59 /* ; */) return;
    if (inHead) {
      if (line === LAYER_MARKERS.prusa) this.headMarkers.prusa++;
      else if (line === LAYER_MARKERS.bambu) this.headMarkers.bambu++;
      else if (line.startsWith(LAYER_MARKERS.cura)) this.headMarkers.cura++;
    }
    if (line.startsWith(';SETTING_3 ')) {
      if (this.curaSettings.length < MAX_CURA_SETTINGS) this.curaSettings += line.slice(11);
      return;
    }
    const body = line.slice(1).trim();
    if (body === 'HEADER_BLOCK_START') {
      this.inHeaderBlock = true;
      if (inHead) this.headerSectionOpen = true;
      return;
    }
    if (body === 'EXECUTABLE_BLOCK_START') {
      this.headerSectionOpen = false;
      return;
    }
    if (body === 'HEADER_BLOCK_END') {
      this.inHeaderBlock = false;
      return;
    }
    if (body === 'CONFIG_BLOCK_START' || /^prusaslicer_config\s*=\s*begin$/.test(body)) {
      this.inConfig = true;
      this.configBytes = 0;
      return;
    }
    if (body === 'CONFIG_BLOCK_END' || /^prusaslicer_config\s*=\s*end$/.test(body)) {
      this.inConfig = false;
      this.headerSectionOpen = false;
      return;
    }
    const generated = /^generated by\s+(.+)$/i.exec(body);
    if (generated) {
      this.setSlicer(generated[1]);
      return;
    }
    const cura = /^Generated with\s+(.+)$/i.exec(body);
    if (cura && line[1] !== ' ') {
      this.setSlicer(cura[1]);
      this.cura['generated with'] ??= cura[1].trim();
      return;
    }
    if (this.inHeaderBlock) {
      const producer = /^(BambuStudio|OrcaSlicer|[A-Za-z]+ ?Orca\w*)\s+v?(\d[\w.]*)\s*$/i.exec(body);
      if (producer) {
        this.setSlicer(`${producer[1]} ${producer[2]}`);
        return;
      }
      // "; model printing time: 4m 54s; total estimated time: 10m 22s"
      for (const part of body.split(';')) {
        const c = part.indexOf(':');
        if (c > 0) this.setRaw(part.slice(0, c), part.slice(c + 1));
      }
      return;
    }
    // `; key = value` (PrusaSlicer header/footer/config, Orca/Bambu config block)
    const eq = body.indexOf('=');
    if (eq > 0 && line[1] === ' ') {
      this.setRaw(body.slice(0, eq), body.slice(eq + 1));
      return;
    }
    // Cura: `;KEY:value` without a space after the semicolon.
    if (line[1] !== ' ') {
      const c = body.indexOf(':');
      if (c > 0) {
        const key = body.slice(0, c).trim().toLowerCase();
        if (CURA_KEYS.has(key) && !(key in this.cura)) this.cura[key] = body.slice(c + 1).trim();
      }
    }
  }

  private setRaw(keyText: string, valueText: string): void {
    const key = keyText.trim().toLowerCase();
    if (!key || key.length > 200) return;
    if (!(key in this.raw)) {
      if (this.rawCount >= MAX_RAW_KEYS) return;
      this.rawCount++;
    }
    const value = valueText.trim();
    this.raw[key] = value.length > MAX_RAW_VALUE ? value.slice(0, MAX_RAW_VALUE) : value;
  }

  private setSlicer(text: string): void {
    if (this.slicerText) return;
    this.slicerText = text.trim();
    const t = this.slicerText.toLowerCase();
    if (t.startsWith('prusaslicer') || t.startsWith('superslicer') || t.startsWith('slic3r')) this.flavor = 'prusaslicer';
    else if (t.includes('orca')) this.flavor = 'orcaslicer';
    else if (t.startsWith('bambustudio') || t.startsWith('bambu studio')) this.flavor = 'bambustudio';
    else if (t.startsWith('cura')) this.flavor = 'cura';
  }

  private resolveFlavor(): GcodeFlavor {
    if (this.flavor !== 'unknown') return this.flavor;
    if ('time' in this.cura || 'layer_count' in this.cura || 'flavor' in this.cura) return 'cura';
    return 'unknown';
  }
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  const out: Partial<T> = {};
  for (const [k, v] of Object.entries(o)) if (v !== undefined) (out as Record<string, unknown>)[k] = v;
  return out;
}

// ---------------------------------------------------------------------------
// Drivers

/**
 * Reads metadata and thumbnails from a G-code file path, a Buffer, or a
 * Readable (consumed to its end). Never loads the whole file.
 */
export async function readGcodeMetadata(source: string | Buffer | Readable, options: GcodeMetaOptions = {}): Promise<GcodeMetaResult> {
  if (typeof source === 'string') return readFromPath(source, options);
  if (Buffer.isBuffer(source)) return readFromBuffer(source, options);
  return readFromStream(source, options);
}

async function readFromStream(stream: Readable, options: GcodeMetaOptions): Promise<GcodeMetaResult> {
  const scanner = new GcodeMetaScanner(options);
  for await (const chunk of stream) {
    scanner.push(typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array));
  }
  return scanner.end();
}

function readFromBuffer(buf: Buffer, options: GcodeMetaOptions): GcodeMetaResult {
  const scanner = new GcodeMetaScanner(options);
  const chunk = scanner.options.chunkBytes;
  let pos = 0;
  while (pos < buf.length && scanner.inHead) pos += scanner.pushHead(buf.subarray(pos, Math.min(buf.length, pos + chunk)));
  if (scanner.inHead) return scanner.end(buf.length);
  if (scanner.wantsMiddle) scanner.countMiddle(buf.subarray(pos));
  const tailStart = Math.max(pos, buf.length - scanner.options.tailBytes);
  scanner.parseTail(buf.subarray(tailStart), tailStart === pos);
  return scanner.end(buf.length);
}

async function readFromPath(path: string, options: GcodeMetaOptions): Promise<GcodeMetaResult> {
  const handle = await open(path, 'r');
  try {
    const size = (await handle.stat()).size;
    const scanner = new GcodeMetaScanner(options);
    const chunkSize = Math.max(4096, scanner.options.chunkBytes);
    const buf = Buffer.allocUnsafe(chunkSize);
    let pos = 0;
    // Head: line by line. A fresh view per read is fine: the scanner copies what it keeps.
    while (pos < size && scanner.inHead) {
      const { bytesRead } = await handle.read(buf, 0, Math.min(chunkSize, size - pos), pos);
      if (bytesRead === 0) break;
      pos += scanner.pushHead(buf.subarray(0, bytesRead));
    }
    if (scanner.inHead) return scanner.end(size);
    const tailStart = Math.max(pos, size - scanner.options.tailBytes);
    if (scanner.wantsMiddle) {
      // Middle: only searched for layer markers. A few reused buffers with reads queued
      // ahead (libuv's thread pool copies the next chunks while this one is searched).
      const depth = 3;
      const bufs = [buf, ...Array.from({ length: depth - 1 }, () => Buffer.allocUnsafe(chunkSize))];
      const queue: (Promise<{ bytesRead: number }> | null)[] = [];
      const wanted: { at: number; len: number }[] = [];
      let next = pos;
      const issue = (k: number) => {
        if (next >= size) return null;
        wanted[k] = { at: next, len: Math.min(chunkSize, size - next) };
        next += wanted[k].len;
        return handle.read(bufs[k], 0, wanted[k].len, wanted[k].at);
      };
      for (let k = 0; k < depth; k++) queue.push(issue(k));
      for (let k = 0; queue[k]; k = (k + 1) % depth) {
        let { bytesRead } = await queue[k]!;
        const { at, len } = wanted[k];
        while (bytesRead < len) {
          // A short read (the file changed under us?): finish this chunk before searching it.
          const more = (await handle.read(bufs[k], bytesRead, len - bytesRead, at + bytesRead)).bytesRead;
          if (more === 0) throw new PreviewError('TRUNCATED', `G-code file shrank while being read (at ${at + bytesRead} of ${size})`);
          bytesRead += more;
        }
        scanner.countMiddle(bufs[k].subarray(0, len));
        queue[k] = issue(k);
      }
    }
    const tail = Buffer.allocUnsafe(size - tailStart);
    let got = 0;
    while (got < tail.length) {
      const { bytesRead } = await handle.read(tail, got, tail.length - got, tailStart + got);
      if (bytesRead === 0) break;
      got += bytesRead;
    }
    scanner.parseTail(tail.subarray(0, got), tailStart === pos);
    return scanner.end(size);
  } finally {
    await handle.close();
  }
}

/** The largest decodable thumbnail (PNG or QOI preferred over JPEG at equal size), or null. */
export function pickBestThumbnail<T extends { width: number; height: number; format: ImageFormat }>(thumbs: readonly T[]): T | null {
  let best: T | null = null;
  for (const t of thumbs) {
    if (!best) {
      best = t;
      continue;
    }
    const a = t.width * t.height;
    const b = best.width * best.height;
    if (a > b || (a === b && best.format === 'jpg' && t.format !== 'jpg')) best = t;
  }
  return best;
}

/** The best embedded thumbnail of a G-code file as a displayable image (QOI converted to PNG). */
export async function extractGcodeThumbnail(
  source: string | Buffer | Readable,
  options: GcodeMetaOptions = {},
): Promise<{ data: Buffer; mime: 'image/png' | 'image/jpeg'; width: number; height: number; source: string; metadata: PrintMetadata }> {
  const result = await readGcodeMetadata(source, { countLayers: false, ...options });
  const best = pickBestThumbnail(result.thumbnails);
  if (!best) throw new PreviewError('NO_THUMBNAIL', 'the G-code has no decodable thumbnail block');
  const img = toDisplayImage(best.data);
  return { ...img, source: `${best.keyword} ${best.width}x${best.height}`, metadata: result.metadata };
}

