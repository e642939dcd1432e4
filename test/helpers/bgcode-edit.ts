/**
 * Rewrites the metadata blocks of a real BGCode file, keeping every other
 * block (thumbnails, the heatshrink/MeatPack G-code) byte for byte: how a test
 * makes "the same file, sliced with a detached printer profile" out of a real
 * PrusaSlicer file. Edited blocks are written uncompressed with a fresh CRC32.
 */
import { crc32 } from 'node:zlib';
import { decompressBgcodeBlock } from '../../service/preview/bgcode';

/** Block types: 0 file metadata, 1 G-code, 2 slicer metadata, 3 printer metadata, 4 print metadata, 5 thumbnail. */
export type BgcodeEdit = (type: number, entries: Record<string, string>) => Record<string, string>;

export function editBgcodeMetadata(file: Buffer, edit: BgcodeEdit): Buffer {
  const checksum = file.readUInt16LE(8);
  const parts: Buffer[] = [file.subarray(0, 10)];
  let off = 10;
  while (off < file.length) {
    const type = file.readUInt16LE(off);
    const compression = file.readUInt16LE(off + 2);
    const size = file.readUInt32LE(off + 4);
    const headLen = compression ? 12 : 8;
    const compressed = compression ? file.readUInt32LE(off + 8) : size;
    const paramsLen = type === 5 ? 6 : 2;
    const dataStart = off + headLen + paramsLen;
    const end = dataStart + compressed + (checksum ? 4 : 0);
    const isMetadata = type === 0 || type === 2 || type === 3 || type === 4;
    if (!isMetadata) {
      parts.push(file.subarray(off, end));
      off = end;
      continue;
    }
    const text = decompressBgcodeBlock(file.subarray(dataStart, dataStart + compressed), compression, size, off).toString('utf8');
    const entries: Record<string, string> = {};
    for (const line of text.split('\n')) {
      const eq = line.indexOf('=');
      if (eq > 0) entries[line.slice(0, eq)] = line.slice(eq + 1);
    }
    const data = Buffer.from(Object.entries(edit(type, entries)).map(([k, v]) => `${k}=${v}\n`).join(''));
    const head = Buffer.alloc(8);
    head.writeUInt16LE(type, 0);
    head.writeUInt16LE(0, 2);
    head.writeUInt32LE(data.length, 4);
    const body = Buffer.concat([head, Buffer.from([0, 0]), data]);
    parts.push(body);
    if (checksum) {
      const crc = Buffer.alloc(4);
      crc.writeUInt32LE(crc32(body) >>> 0, 0);
      parts.push(crc);
    }
    off = end;
  }
  return Buffer.concat(parts);
}

/**
 * A PrusaSlicer file as it looks after its printer profile was detached from the system preset: an empty
 * printer_model, a profile name of the user's choosing, the notes and the G-code's own checks left as they were.
 */
export function detachProfile(file: Buffer, profileName = 'Farm printer 3'): Buffer {
  return editBgcodeMetadata(file, (_type, entries) => {
    const out = { ...entries };
    if ('printer_model' in out) out.printer_model = '';
    if ('printer_settings_id' in out) out.printer_settings_id = profileName;
    return out;
  });
}
