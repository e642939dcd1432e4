/**
 * 3MF packages made in memory: ZIP archives with relationship parts, and the
 * offsets of their central-directory records for patching hostile archives.
 */
import { strToU8, zipSync } from 'fflate';

export function zip(files: Record<string, Uint8Array | string>, level = 6): Buffer {
  const entries: Record<string, Uint8Array> = {};
  for (const [k, v] of Object.entries(files)) entries[k] = typeof v === 'string' ? strToU8(v) : v;
  return Buffer.from(zipSync(entries, { level: level as 6 }));
}

export const RELS_THUMBNAIL = 'http://schemas.openxmlformats.org/package/2006/relationships/metadata/thumbnail';

export function relsXml(targets: { target: string; type: string }[]): string {
  return (
    '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">' +
    '<Relationship Target="/3D/3dmodel.model" Id="rel-1" Type="http://schemas.microsoft.com/3dmanufacturing/2013/01/3dmodel"/>' +
    targets.map((t, i) => `<Relationship Target="${t.target}" Id="rel-${i + 2}" Type="${t.type}"/>`).join('') +
    '</Relationships>'
  );
}

/** Offsets of every central-directory record, by entry name. */
export function centralRecords(buf: Buffer): Map<string, number> {
  const out = new Map<string, number>();
  let eocd = -1;
  for (let i = buf.length - 22; i >= 0; i--) {
    if (buf.readUInt32LE(i) === 0x06054b50) {
      eocd = i;
      break;
    }
  }
  let p = buf.readUInt32LE(eocd + 16);
  const count = buf.readUInt16LE(eocd + 10);
  for (let i = 0; i < count; i++) {
    const nameLen = buf.readUInt16LE(p + 28);
    const name = buf.toString('utf8', p + 46, p + 46 + nameLen);
    out.set(name, p);
    p += 46 + nameLen + buf.readUInt16LE(p + 30) + buf.readUInt16LE(p + 32);
  }
  return out;
}

export function eocdOffset(buf: Buffer): number {
  for (let i = buf.length - 22; i >= 0; i--) if (buf.readUInt32LE(i) === 0x06054b50) return i;
  throw new Error('no EOCD');
}
