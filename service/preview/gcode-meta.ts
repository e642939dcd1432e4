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
 *
 * This module holds the readers (path, Buffer, stream) and the thumbnail choice; the byte
 * scanner is `gcode-meta-scanner.ts`, the line reader `gcode-meta-lines.ts`, the layer-marker
 * search `gcode-layers.ts`.
 */
import { open } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { PreviewError } from './errors';
import { GcodeMetaScanner } from './gcode-meta-scanner';
import type { GcodeMetaOptions, GcodeMetaResult } from './gcode-meta-types';
import type { PrintMetadata } from './metadata';
import { toDisplayImage, type ImageFormat } from './png';

export { GcodeMetaScanner } from './gcode-meta-scanner';
export type { GcodeFlavor, GcodeMetaOptions, GcodeMetaResult, GcodeMetaStats, GcodeThumbnail } from './gcode-meta-types';

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

