/**
 * A defensive ZIP reader for 3MF packages. It reads the central directory
 * (ZIP64 included) through positioned reads, checks entry count, declared
 * sizes and compression ratios before inflating anything, inflates with a hard
 * output cap and verifies each entry's CRC32. Entry names are data only: they
 * are never used as file-system paths.
 */
import { crc32, inflateRawSync } from 'node:zlib';
import { Inflate } from 'fflate';
import { PreviewError } from './errors';
import type { ByteSource } from './source';

export interface ZipLimits {
  /** Entries at most (default 10 000). */
  maxEntries?: number;
  /** Sum of declared uncompressed sizes at most (default 500 MiB). */
  maxTotalUncompressed?: number;
  /** Declared uncompressed / compressed ratio at most, for entries over 1 MiB (default 200). */
  maxRatio?: number;
  /** Central directory bytes at most (default 16 MiB). */
  maxCentralDirectory?: number;
}

export const ZIP_DEFAULT_LIMITS: Required<ZipLimits> = {
  maxEntries: 10_000,
  maxTotalUncompressed: 500 * 1024 * 1024,
  maxRatio: 200,
  maxCentralDirectory: 16 * 1024 * 1024,
};

export interface ZipEntry {
  /** The name exactly as stored (data only; may contain "../", backslashes, anything). */
  name: string;
  /** Lookup key: forward slashes, no leading slash, lower case. */
  key: string;
  method: number;
  flags: number;
  crc: number;
  compressedSize: number;
  uncompressedSize: number;
  localHeaderOffset: number;
}

const SIG_EOCD = 0x06054b50;
const SIG_ZIP64_LOCATOR = 0x07064b50;
const SIG_ZIP64_EOCD = 0x06064b50;
const SIG_CENTRAL = 0x02014b50;
const SIG_LOCAL = 0x04034b50;

export function zipKey(name: string): string {
  return name.replace(/\\/g, '/').replace(/^\/+/, '').toLowerCase();
}

export class ZipArchive {
  private readonly byKey = new Map<string, ZipEntry>();

  private constructor(
    private readonly src: ByteSource,
    readonly entries: readonly ZipEntry[],
    readonly limits: Required<ZipLimits>,
  ) {
    for (const e of entries) if (!this.byKey.has(e.key)) this.byKey.set(e.key, e);
  }

  /** Reads and checks the central directory. The caller keeps ownership of `src`. */
  static async open(src: ByteSource, limits: ZipLimits = {}): Promise<ZipArchive> {
    const lim = { ...ZIP_DEFAULT_LIMITS, ...limits };
    if (src.size < 22) throw new PreviewError('MALFORMED', `not a ZIP archive (${src.size} bytes, no end-of-central-directory record)`);
    const tailLen = Math.min(src.size, 22 + 0xffff);
    const tail = await src.read(src.size - tailLen, tailLen);
    let eocd = -1;
    for (let i = tail.length - 22; i >= 0; i--) {
      if (tail.readUInt32LE(i) === SIG_EOCD && i + 22 + tail.readUInt16LE(i + 20) <= tail.length) {
        eocd = i;
        break;
      }
    }
    if (eocd < 0) throw new PreviewError('MALFORMED', 'not a ZIP archive (no end-of-central-directory record)');
    const eocdPos = src.size - tailLen + eocd;
    let count = tail.readUInt16LE(eocd + 10);
    let cdSize = tail.readUInt32LE(eocd + 12);
    let cdOffset = tail.readUInt32LE(eocd + 16);
    if (count === 0xffff || cdSize === 0xffffffff || cdOffset === 0xffffffff) {
      if (eocdPos < 20) throw new PreviewError('MALFORMED', 'ZIP64 archive without its locator');
      const loc = await src.read(eocdPos - 20, 20);
      if (loc.readUInt32LE(0) !== SIG_ZIP64_LOCATOR) throw new PreviewError('MALFORMED', 'ZIP64 archive without its locator');
      const z64Off = readU64(loc, 8);
      if (z64Off + 56 > src.size) throw new PreviewError('MALFORMED', 'ZIP64 end record outside the file');
      const z64 = await src.read(z64Off, 56);
      if (z64.readUInt32LE(0) !== SIG_ZIP64_EOCD) throw new PreviewError('MALFORMED', 'ZIP64 end record signature missing');
      count = readU64(z64, 32);
      cdSize = readU64(z64, 40);
      cdOffset = readU64(z64, 48);
    }
    if (count > lim.maxEntries) throw new PreviewError('TOO_LARGE', `ZIP has ${count} entries (limit ${lim.maxEntries})`);
    if (cdSize > lim.maxCentralDirectory) throw new PreviewError('TOO_LARGE', `ZIP central directory of ${cdSize} bytes (limit ${lim.maxCentralDirectory})`);
    if (cdOffset + cdSize > src.size) throw new PreviewError('TRUNCATED', `ZIP central directory (${cdOffset}+${cdSize}) lies past the end of the ${src.size}-byte file`);
    const cd = await src.read(cdOffset, cdSize);

    const entries: ZipEntry[] = [];
    let total = 0;
    let p = 0;
    for (let i = 0; i < count; i++) {
      if (p + 46 > cd.length || cd.readUInt32LE(p) !== SIG_CENTRAL) throw new PreviewError('MALFORMED', `ZIP central directory entry ${i} is broken`);
      const flags = cd.readUInt16LE(p + 8);
      const method = cd.readUInt16LE(p + 10);
      const crc = cd.readUInt32LE(p + 16);
      let compressedSize = cd.readUInt32LE(p + 20);
      let uncompressedSize = cd.readUInt32LE(p + 24);
      const nameLen = cd.readUInt16LE(p + 28);
      const extraLen = cd.readUInt16LE(p + 30);
      const commentLen = cd.readUInt16LE(p + 32);
      let localHeaderOffset = cd.readUInt32LE(p + 42);
      const end = p + 46 + nameLen + extraLen + commentLen;
      if (end > cd.length) throw new PreviewError('MALFORMED', `ZIP central directory entry ${i} overruns the directory`);
      const name = cd.toString(flags & 0x800 ? 'utf8' : 'latin1', p + 46, p + 46 + nameLen);
      // ZIP64 extra field: the 64-bit values of the fields that are 0xFFFFFFFF, in order.
      let x = p + 46 + nameLen;
      const xEnd = x + extraLen;
      while (x + 4 <= xEnd) {
        const id = cd.readUInt16LE(x);
        const size = cd.readUInt16LE(x + 2);
        if (id === 0x0001) {
          let q = x + 4;
          const qEnd = Math.min(x + 4 + size, xEnd);
          if (uncompressedSize === 0xffffffff && q + 8 <= qEnd) (uncompressedSize = readU64(cd, q)), (q += 8);
          if (compressedSize === 0xffffffff && q + 8 <= qEnd) (compressedSize = readU64(cd, q)), (q += 8);
          if (localHeaderOffset === 0xffffffff && q + 8 <= qEnd) (localHeaderOffset = readU64(cd, q)), (q += 8);
        }
        x += 4 + size;
      }
      total += uncompressedSize;
      if (total > lim.maxTotalUncompressed) {
        throw new PreviewError('TOO_LARGE', `ZIP entries declare more than ${lim.maxTotalUncompressed} bytes uncompressed (zip bomb?)`);
      }
      if (localHeaderOffset + 30 > src.size) throw new PreviewError('MALFORMED', `ZIP entry "${clip(name)}" points outside the file`);
      entries.push({ name, key: zipKey(name), method, flags, crc, compressedSize, uncompressedSize, localHeaderOffset });
      p = end;
    }
    return new ZipArchive(src, entries, lim);
  }

  /** Case-insensitive lookup by name ("Metadata/plate_1.png", "/Metadata/plate_1.png"). */
  get(name: string): ZipEntry | undefined {
    return this.byKey.get(zipKey(name));
  }

  has(name: string): boolean {
    return this.byKey.has(zipKey(name));
  }

  /** Entry data, fully inflated and CRC-checked; refuses entries declared larger than `maxBytes`. */
  async read(entry: ZipEntry | string, maxBytes = 64 * 1024 * 1024): Promise<Buffer> {
    const e = typeof entry === 'string' ? this.get(entry) : entry;
    if (!e) throw new PreviewError('MALFORMED', `ZIP has no entry "${clip(String(entry))}"`);
    this.checkEntry(e, maxBytes);
    const raw = await this.rawData(e);
    let out: Buffer;
    if (e.method === 0) {
      if (raw.length !== e.uncompressedSize) throw new PreviewError('MALFORMED', `stored ZIP entry "${clip(e.name)}" has ${raw.length} bytes, ${e.uncompressedSize} declared`);
      out = raw;
    } else {
      try {
        // One byte of headroom: a stream longer than declared fails instead of being cut silently.
        out = inflateRawSync(raw, { maxOutputLength: e.uncompressedSize + 1 });
      } catch (err) {
        const tooBig = err instanceof RangeError || /maxOutputLength|larger than/i.test((err as Error).message);
        throw new PreviewError(tooBig ? 'TOO_LARGE' : 'MALFORMED', `ZIP entry "${clip(e.name)}" does not inflate${tooBig ? ' within its declared size' : ''}: ${(err as Error).message}`, { cause: err });
      }
      if (out.length !== e.uncompressedSize) {
        throw new PreviewError(out.length > e.uncompressedSize ? 'TOO_LARGE' : 'MALFORMED', `ZIP entry "${clip(e.name)}" inflates to ${out.length} bytes, ${e.uncompressedSize} declared`);
      }
    }
    if ((crc32(out) >>> 0) !== e.crc) throw new PreviewError('CHECKSUM', `ZIP entry "${clip(e.name)}" fails its CRC32 check`);
    return out;
  }

  /**
   * The first `bytes` of an entry (for the header of a large plate G-code or
   * model file), inflated incrementally so a huge entry is never expanded whole.
   */
  async readHead(entry: ZipEntry | string, bytes: number): Promise<Buffer> {
    const e = typeof entry === 'string' ? this.get(entry) : entry;
    if (!e) throw new PreviewError('MALFORMED', `ZIP has no entry "${clip(String(entry))}"`);
    this.checkEntry(e, Number.MAX_SAFE_INTEGER);
    if (e.uncompressedSize <= bytes) return this.read(e);
    const dataStart = await this.dataOffset(e);
    if (e.method === 0) return this.src.read(dataStart, Math.min(bytes, e.compressedSize));
    const parts: Buffer[] = [];
    let got = 0;
    let failed: unknown = null;
    const inflater = new Inflate((chunk) => {
      parts.push(Buffer.from(chunk));
      got += chunk.length;
    });
    const step = 4096; // at most ~4 MiB of output per step, even for a bomb
    for (let p = 0; p < e.compressedSize && got < bytes; p += step) {
      const len = Math.min(step, e.compressedSize - p);
      const piece = await this.src.read(dataStart + p, len);
      try {
        inflater.push(piece, p + len >= e.compressedSize);
      } catch (err) {
        failed = err;
        break;
      }
    }
    if (failed && got === 0) throw new PreviewError('MALFORMED', `ZIP entry "${clip(e.name)}" does not inflate: ${(failed as Error).message}`, { cause: failed });
    const all = Buffer.concat(parts);
    return all.subarray(0, Math.min(bytes, all.length));
  }

  private checkEntry(e: ZipEntry, maxBytes: number): void {
    if (e.flags & 0x1) throw new PreviewError('UNSUPPORTED', `ZIP entry "${clip(e.name)}" is encrypted`);
    if (e.method !== 0 && e.method !== 8) throw new PreviewError('UNSUPPORTED', `ZIP entry "${clip(e.name)}" uses compression method ${e.method}`);
    if (e.uncompressedSize > maxBytes) throw new PreviewError('TOO_LARGE', `ZIP entry "${clip(e.name)}" declares ${e.uncompressedSize} bytes (limit ${maxBytes})`);
    if (e.uncompressedSize > 1024 * 1024 && e.uncompressedSize / Math.max(1, e.compressedSize) > this.limits.maxRatio) {
      throw new PreviewError('TOO_LARGE', `ZIP entry "${clip(e.name)}" declares a ${Math.round(e.uncompressedSize / Math.max(1, e.compressedSize))}:1 compression ratio (zip bomb?)`);
    }
  }

  private async dataOffset(e: ZipEntry): Promise<number> {
    const lh = await this.src.read(e.localHeaderOffset, 30);
    if (lh.readUInt32LE(0) !== SIG_LOCAL) throw new PreviewError('MALFORMED', `ZIP entry "${clip(e.name)}" has no local header`);
    const start = e.localHeaderOffset + 30 + lh.readUInt16LE(26) + lh.readUInt16LE(28);
    if (start + e.compressedSize > this.src.size) throw new PreviewError('TRUNCATED', `ZIP entry "${clip(e.name)}" data runs past the end of the file`);
    return start;
  }

  private async rawData(e: ZipEntry): Promise<Buffer> {
    return this.src.read(await this.dataOffset(e), e.compressedSize);
  }
}

function readU64(buf: Buffer, off: number): number {
  const v = buf.readBigUInt64LE(off);
  if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new PreviewError('TOO_LARGE', 'ZIP64 value beyond 2^53');
  return Number(v);
}

const clip = (s: string) => (s.length > 120 ? `${s.slice(0, 117)}...` : s).replace(/[\u0000-\u001f]/g, '?');
