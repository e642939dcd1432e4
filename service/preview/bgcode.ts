/**
 * Prusa binary G-code (.bgcode) reader: file header, blocks with CRC32
 * verification, Deflate / heatshrink 11,4 / heatshrink 12,4 decompression,
 * INI (or JSON) metadata blocks, PNG / JPG / QOI thumbnails, and G-code blocks
 * (skipped, CRC-verified, or decoded including MeatPack).
 *
 * Layout (little-endian): "GCDE", u32 version (1), u16 checksum type (0 none,
 * 1 CRC32); then blocks: u16 type, u16 compression, u32 uncompressed size,
 * [u32 compressed size if compression != 0], parameters (u16 encoding; for
 * thumbnails u16 format, u16 width, u16 height), data, [u32 CRC32 of header +
 * parameters + data].
 */
import { crc32, inflateSync } from 'node:zlib';
import { heatshrinkDecode, meatpackDecode } from './bgcode-codecs';
import { PreviewError } from './errors';
import { metadataFromSlicerKeys, mergeMetadata, type PrintMetadata } from './metadata';
import { imageInfo, type ImageFormat } from './png';
import { withSource, type ByteSource } from './source';

export const BGCODE_BLOCK = {
  FILE_METADATA: 0,
  GCODE: 1,
  SLICER_METADATA: 2,
  PRINTER_METADATA: 3,
  PRINT_METADATA: 4,
  THUMBNAIL: 5,
} as const;

export const BGCODE_COMPRESSION = { NONE: 0, DEFLATE: 1, HEATSHRINK_11_4: 2, HEATSHRINK_12_4: 3 } as const;
export const BGCODE_GCODE_ENCODING = { NONE: 0, MEATPACK: 1, MEATPACK_COMMENTS: 2 } as const;
export { heatshrinkDecode, heatshrinkDecodeReference, meatpackDecode } from './bgcode-codecs';

const THUMBNAIL_FORMATS: Record<number, ImageFormat> = { 0: 'png', 1: 'jpg', 2: 'qoi' };

/**
 * Per-block limits on the uncompressed size, and per file on the number of blocks: real files hold
 * G-code blocks of about 64 KiB, so 100,000 blocks are some 6 GB of G-code; a file of a million empty
 * blocks is an attack on the reader, not a print.
 */
export const BGCODE_LIMITS = {
  metadataBytes: 16 << 20,
  thumbnailBytes: 16 << 20,
  gcodeBlockBytes: 64 << 20,
  blocks: 100_000,
  /** G-code decompressed per read at most (mode 'decode'). */
  decodedBytes: 512 << 20,
};

/** Bytes read from the file at once: block headers and small blocks come out of one read, not three reads each. */
const READ_WINDOW = 1 << 20;

export interface BgcodeBlockInfo {
  type: number;
  compression: number;
  uncompressedSize: number;
  compressedSize: number;
  /** File offset of the block header. */
  offset: number;
  /** Metadata and G-code blocks. */
  encoding?: number;
  /** Thumbnails. */
  format?: number;
  width?: number;
  height?: number;
}

export interface BgcodeThumbnail {
  format: ImageFormat;
  width: number;
  height: number;
  data: Buffer;
}

export interface BgcodeGcodeSummary {
  blocks: number;
  compressedBytes: number;
  uncompressedBytes: number;
  /** Distinct compression codes used by G-code blocks. */
  compressions: number[];
  /** Distinct encodings (0 none, 1 MeatPack, 2 MeatPack keeping comments). */
  encodings: number[];
  /** True when every G-code block's CRC was checked (mode 'verify' or 'decode' with CRC32 on). */
  verified: boolean;
  /** Mode 'decode': the decoded text (up to maxGcodeText characters). */
  text?: string;
  /** Mode 'decode': true when the text was cut at maxGcodeText. */
  textTruncated?: boolean;
  /** Mode 'decode': true when decoding stopped at maxDecodedBytes (later blocks were not read). */
  decodeStopped?: boolean;
}

export interface BgcodeFile {
  version: number;
  checksumType: number;
  fileMetadata: Record<string, string>;
  printerMetadata: Record<string, string>;
  printMetadata: Record<string, string>;
  slicerMetadata: Record<string, string>;
  thumbnails: BgcodeThumbnail[];
  gcode: BgcodeGcodeSummary;
  blocks: BgcodeBlockInfo[];
}

export interface BgcodeReadOptions {
  /**
   * G-code blocks: 'skip' walks their headers only, 'verify' (default) reads
   * them and checks CRCs, 'decode' also decompresses and MeatPack-decodes them.
   */
  gcode?: 'skip' | 'verify' | 'decode';
  /** Mode 'decode': characters of G-code text kept at most (default 64 Mi). */
  maxGcodeText?: number;
  /** Mode 'decode': receives each block's text; return false to stop reading. */
  onGcode?: (text: string) => boolean | void;
  /** Stops the reading (the client that asked has gone): throws PreviewError ABORTED. */
  signal?: AbortSignal;
  /** Blocks read at most (default BGCODE_LIMITS.blocks): more is refused as TOO_LARGE. */
  maxBlocks?: number;
  /** Mode 'decode': G-code bytes decompressed at most (default BGCODE_LIMITS.decodedBytes); the rest is left undecoded. */
  maxDecodedBytes?: number;
}

const MAGIC = 0x45444347; // "GCDE" little-endian

/** Reads a .bgcode file (path) or buffer. Malformed, truncated or corrupted input throws PreviewError. */
export async function readBgcode(input: string | Buffer, options: BgcodeReadOptions = {}): Promise<BgcodeFile> {
  return withSource(input, (src) => parseBgcodeSource(src, options));
}

export function isBgcode(buf: Uint8Array): boolean {
  return buf.length >= 4 && buf[0] === 0x47 && buf[1] === 0x43 && buf[2] === 0x44 && buf[3] === 0x45;
}

export async function parseBgcodeSource(source: ByteSource, options: BgcodeReadOptions = {}): Promise<BgcodeFile> {
  const src = windowed(source);
  const mode = options.gcode ?? 'verify';
  const maxBlocks = options.maxBlocks ?? BGCODE_LIMITS.blocks;
  const maxDecoded = options.maxDecodedBytes ?? BGCODE_LIMITS.decodedBytes;
  let decoded = 0;
  const maxText = options.maxGcodeText ?? 64 << 20;
  if (src.size < 10) throw new PreviewError(src.size >= 4 ? 'TRUNCATED' : 'MALFORMED', `BGCode file of ${src.size} bytes is shorter than its 10-byte header`);
  const header = await src.read(0, 10);
  if (header.readUInt32LE(0) !== MAGIC) throw new PreviewError('MALFORMED', 'not a BGCode file (no "GCDE" magic)');
  const version = header.readUInt32LE(4);
  if (version !== 1) throw new PreviewError('UNSUPPORTED', `BGCode version ${version} (only 1 is known)`);
  const checksumType = header.readUInt16LE(8);
  if (checksumType !== 0 && checksumType !== 1) throw new PreviewError('MALFORMED', `BGCode checksum type ${checksumType} (0 or 1 expected)`);
  const crcSize = checksumType === 1 ? 4 : 0;

  const file: BgcodeFile = {
    version,
    checksumType,
    fileMetadata: {},
    printerMetadata: {},
    printMetadata: {},
    slicerMetadata: {},
    thumbnails: [],
    gcode: { blocks: 0, compressedBytes: 0, uncompressedBytes: 0, compressions: [], encodings: [], verified: mode !== 'skip' && crcSize > 0 },
    blocks: [],
  };
  const textParts: string[] = [];
  let textLen = 0;
  let stopped = false;

  let off = 10;
  while (off < src.size && !stopped) {
    if (options.signal?.aborted) throw new PreviewError('ABORTED', 'reading stopped: nobody waits for the result any more');
    if (file.blocks.length >= maxBlocks) throw new PreviewError('TOO_LARGE', `BGCode file has more than ${maxBlocks} blocks`);
    if (src.size - off < 8) throw new PreviewError('TRUNCATED', `BGCode block header at ${off} is cut off`);
    const h8 = await src.read(off, 8);
    const type = h8.readUInt16LE(0);
    const compression = h8.readUInt16LE(2);
    const uncompressedSize = h8.readUInt32LE(4);
    if (type > 5) throw new PreviewError('MALFORMED', `BGCode block at ${off} has unknown type ${type}`);
    if (compression > 3) throw new PreviewError('MALFORMED', `BGCode block at ${off} has unknown compression ${compression}`);
    const headerSize = compression === 0 ? 8 : 12;
    const paramsSize = type === BGCODE_BLOCK.THUMBNAIL ? 6 : 2;
    if (src.size - off < headerSize + paramsSize) throw new PreviewError('TRUNCATED', `BGCode block at ${off} is cut off in its header`);
    const head = await src.read(off, headerSize + paramsSize);
    const compressedSize = compression === 0 ? uncompressedSize : head.readUInt32LE(8);
    const dataStart = off + headerSize + paramsSize;
    const blockEnd = dataStart + compressedSize + crcSize;
    if (blockEnd > src.size) {
      throw new PreviewError('TRUNCATED', `BGCode block at ${off} (type ${type}) needs ${blockEnd - off} bytes, file has ${src.size - off} left`);
    }
    const limit =
      type === BGCODE_BLOCK.GCODE ? BGCODE_LIMITS.gcodeBlockBytes : type === BGCODE_BLOCK.THUMBNAIL ? BGCODE_LIMITS.thumbnailBytes : BGCODE_LIMITS.metadataBytes;
    if (uncompressedSize > limit) throw new PreviewError('TOO_LARGE', `BGCode block at ${off} declares ${uncompressedSize} bytes (limit ${limit})`);

    const info: BgcodeBlockInfo = { type, compression, uncompressedSize, compressedSize, offset: off };
    const params = head.subarray(headerSize);
    if (type === BGCODE_BLOCK.THUMBNAIL) {
      info.format = params.readUInt16LE(0);
      info.width = params.readUInt16LE(2);
      info.height = params.readUInt16LE(4);
    } else {
      info.encoding = params.readUInt16LE(0);
    }
    file.blocks.push(info);

    const isGcode = type === BGCODE_BLOCK.GCODE;
    if (isGcode) {
      const g = file.gcode;
      g.blocks++;
      g.compressedBytes += compressedSize;
      g.uncompressedBytes += uncompressedSize;
      if (!g.compressions.includes(compression)) g.compressions.push(compression);
      if (!g.encodings.includes(info.encoding!)) g.encodings.push(info.encoding!);
      if (info.encoding! > 2) throw new PreviewError('MALFORMED', `BGCode G-code block at ${off} has unknown encoding ${info.encoding}`);
    }
    if (isGcode && mode === 'skip') {
      off = blockEnd;
      continue;
    }

    const data = await src.read(dataStart, compressedSize);
    if (crcSize) {
      const stored = (await src.read(dataStart + compressedSize, 4)).readUInt32LE(0);
      const actual = crc32(data, crc32(head)) >>> 0;
      if (stored !== actual) {
        throw new PreviewError('CHECKSUM', `BGCode block at ${off} (type ${type}) fails its CRC32 check (stored ${hex(stored)}, computed ${hex(actual)})`);
      }
    }

    if (isGcode) {
      if (mode === 'decode') {
        // The work of one read is bounded too: past the budget the rest of the G-code stays undecoded.
        if (decoded + uncompressedSize > maxDecoded) {
          file.gcode.decodeStopped = true;
          file.gcode.textTruncated = true;
          break;
        }
        decoded += uncompressedSize;
        const raw = decompressBgcodeBlock(data, compression, uncompressedSize, off);
        const text = info.encoding === 0 ? raw.toString('latin1') : meatpackDecode(raw);
        if (options.onGcode && options.onGcode(text) === false) stopped = true;
        if (textLen < maxText) {
          const part = text.length + textLen > maxText ? text.slice(0, maxText - textLen) : text;
          textParts.push(part);
          textLen += part.length;
          if (part.length < text.length) file.gcode.textTruncated = true;
        } else if (text.length) file.gcode.textTruncated = true;
      }
    } else if (type === BGCODE_BLOCK.THUMBNAIL) {
      const bytes = decompressBgcodeBlock(data, compression, uncompressedSize, off);
      const format = THUMBNAIL_FORMATS[info.format!];
      if (!format) throw new PreviewError('MALFORMED', `BGCode thumbnail at ${off} has unknown format ${info.format}`);
      const actual = imageInfo(bytes);
      if (!actual) throw new PreviewError('MALFORMED', `BGCode thumbnail at ${off} (${format} ${info.width}x${info.height}) is not a readable image`);
      file.thumbnails.push({ format: actual.format, width: info.width || actual.width, height: info.height || actual.height, data: Buffer.from(bytes) });
    } else {
      const text = decompressBgcodeBlock(data, compression, uncompressedSize, off).toString('utf8');
      const map = info.encoding === 1 ? parseJsonMetadata(text, off) : parseIni(text);
      const target =
        type === BGCODE_BLOCK.FILE_METADATA
          ? file.fileMetadata
          : type === BGCODE_BLOCK.PRINTER_METADATA
            ? file.printerMetadata
            : type === BGCODE_BLOCK.PRINT_METADATA
              ? file.printMetadata
              : file.slicerMetadata;
      Object.assign(target, map);
    }
    off = blockEnd;
  }
  if (mode === 'decode') file.gcode.text = textParts.join('');
  return file;
}

const hex = (n: number) => `0x${n.toString(16).padStart(8, '0')}`;

/**
 * A source that reads ahead in windows of READ_WINDOW bytes: the parser walks forward, so headers,
 * parameters, CRCs and small blocks are cut from memory. Larger reads go straight to the source.
 */
function windowed(src: ByteSource): ByteSource {
  let start = 0;
  let buf: Buffer = Buffer.alloc(0);
  return {
    size: src.size,
    async read(offset, length) {
      if (offset >= start && offset + length <= start + buf.length) return buf.subarray(offset - start, offset - start + length);
      if (length > READ_WINDOW / 2 || offset < 0 || offset + length > src.size) return src.read(offset, length);
      start = offset;
      buf = await src.read(offset, Math.min(READ_WINDOW, src.size - offset));
      return buf.subarray(0, length);
    },
    close: () => src.close(),
  };
}

/** `key=value` lines (keys may contain spaces and brackets: "filament used [g]=0.75"). */
export function parseIni(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const l = line.endsWith('\r') ? line.slice(0, -1) : line;
    const eq = l.indexOf('=');
    if (eq <= 0) continue;
    out[l.slice(0, eq).trim()] = l.slice(eq + 1).trim();
  }
  return out;
}

function parseJsonMetadata(text: string, off: number): Record<string, string> {
  let obj: unknown;
  try {
    obj = JSON.parse(text);
  } catch (err) {
    throw new PreviewError('MALFORMED', `BGCode metadata block at ${off} is not valid JSON`, { cause: err });
  }
  const out: Record<string, string> = {};
  if (obj && typeof obj === 'object' && !Array.isArray(obj)) {
    for (const [k, v] of Object.entries(obj as Record<string, unknown>)) out[k] = typeof v === 'string' ? v : JSON.stringify(v);
  }
  return out;
}

/** Decompresses one block's data and checks it has exactly the declared size. */
export function decompressBgcodeBlock(data: Buffer, compression: number, uncompressedSize: number, offset = 0): Buffer {
  let out: Buffer;
  try {
    switch (compression) {
      case BGCODE_COMPRESSION.NONE:
        out = data;
        break;
      case BGCODE_COMPRESSION.DEFLATE:
        out = inflateSync(data, { maxOutputLength: Math.max(1, uncompressedSize) });
        break;
      case BGCODE_COMPRESSION.HEATSHRINK_11_4:
      case BGCODE_COMPRESSION.HEATSHRINK_12_4:
        out = heatshrinkDecode(data, compression === 2 ? 11 : 12, 4, uncompressedSize);
        break;
      default:
        throw new PreviewError('MALFORMED', `unknown compression ${compression}`);
    }
  } catch (err) {
    if (err instanceof PreviewError) throw err;
    const tooBig = err instanceof RangeError || /larger than|maxOutputLength/i.test((err as Error).message);
    throw new PreviewError(tooBig ? 'TOO_LARGE' : 'MALFORMED', `BGCode block at ${offset} does not decompress: ${(err as Error).message}`, { cause: err });
  }
  if (out.length !== uncompressedSize) {
    throw new PreviewError('MALFORMED', `BGCode block at ${offset} decompresses to ${out.length} bytes, ${uncompressedSize} declared`);
  }
  return out;
}

/** Normalised metadata of a BGCode file: printer metadata first, then print, slicer and file metadata. */
export function bgcodeMetadata(file: BgcodeFile): PrintMetadata {
  const raw = { ...file.slicerMetadata, ...file.printMetadata, ...file.printerMetadata };
  const producer = file.fileMetadata.Producer ?? file.fileMetadata.producer ?? null;
  return mergeMetadata(metadataFromSlicerKeys(raw, { slicer: producer }));
}

/** The largest thumbnail (PNG/QOI preferred over JPG at equal size). */
export function pickBgcodeThumbnail(file: BgcodeFile): BgcodeThumbnail | null {
  let best: BgcodeThumbnail | null = null;
  for (const t of file.thumbnails) {
    if (!best || t.width * t.height > best.width * best.height || (t.width * t.height === best.width * best.height && best.format === 'jpg' && t.format !== 'jpg')) best = t;
  }
  return best;
}
