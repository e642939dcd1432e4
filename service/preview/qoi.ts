/**
 * QOI ("Quite OK Image") decoder to RGBA, as used by PrusaSlicer for
 * `thumbnail_QOI` blocks and BGCode thumbnails (format 2). Spec: qoiformat.org.
 */
import { PreviewError } from './errors';

export interface RgbaImage {
  width: number;
  height: number;
  /** width * height * 4 bytes, row-major, RGBA. */
  data: Buffer;
}

/** Refuse images larger than this many pixels (64 Mpx = 256 MB of RGBA) unless told otherwise. */
export const QOI_MAX_PIXELS = 64 * 1024 * 1024;

const OP_INDEX = 0x00;
const OP_DIFF = 0x40;
const OP_LUMA = 0x80;
const OP_RUN = 0xc0;
const OP_RGB = 0xfe;
const OP_RGBA = 0xff;
const MASK_2 = 0xc0;
const HEADER_SIZE = 14;

export function isQoi(buf: Uint8Array): boolean {
  return buf.length >= 4 && buf[0] === 0x71 && buf[1] === 0x6f && buf[2] === 0x69 && buf[3] === 0x66; // "qoif"
}

export function qoiSize(buf: Uint8Array): { width: number; height: number } | null {
  if (!isQoi(buf) || buf.length < HEADER_SIZE) return null;
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  return { width: view.getUint32(4, false), height: view.getUint32(8, false) };
}

export function decodeQoi(buf: Uint8Array, maxPixels = QOI_MAX_PIXELS): RgbaImage {
  if (buf.length < HEADER_SIZE) throw new PreviewError('TRUNCATED', 'QOI image shorter than its 14-byte header');
  if (!isQoi(buf)) throw new PreviewError('MALFORMED', 'not a QOI image (no "qoif" magic)');
  const { width, height } = qoiSize(buf)!;
  const channels = buf[12];
  if (width === 0 || height === 0) throw new PreviewError('MALFORMED', `QOI image has an empty size ${width}x${height}`);
  if (channels !== 3 && channels !== 4) throw new PreviewError('MALFORMED', `QOI image has ${channels} channels (3 or 4 expected)`);
  if (width * height > maxPixels) throw new PreviewError('TOO_LARGE', `QOI image ${width}x${height} exceeds ${maxPixels} pixels`);

  const pixels = width * height;
  const out = Buffer.alloc(pixels * 4);
  const index = new Uint8Array(64 * 4);
  let r = 0;
  let g = 0;
  let b = 0;
  let a = 255;
  let run = 0;
  let p = HEADER_SIZE;
  const end = buf.length;

  for (let px = 0; px < pixels; px++) {
    if (run > 0) {
      run--;
    } else {
      if (p >= end) throw new PreviewError('TRUNCATED', `QOI data ends after ${px} of ${pixels} pixels`);
      const b1 = buf[p++];
      if (b1 === OP_RGB) {
        if (p + 3 > end) throw new PreviewError('TRUNCATED', 'QOI data ends inside an RGB op');
        r = buf[p++];
        g = buf[p++];
        b = buf[p++];
      } else if (b1 === OP_RGBA) {
        if (p + 4 > end) throw new PreviewError('TRUNCATED', 'QOI data ends inside an RGBA op');
        r = buf[p++];
        g = buf[p++];
        b = buf[p++];
        a = buf[p++];
      } else {
        const tag = b1 & MASK_2;
        if (tag === OP_INDEX) {
          const i = (b1 & 0x3f) * 4;
          r = index[i];
          g = index[i + 1];
          b = index[i + 2];
          a = index[i + 3];
        } else if (tag === OP_DIFF) {
          r = (r + ((b1 >> 4) & 0x03) - 2) & 0xff;
          g = (g + ((b1 >> 2) & 0x03) - 2) & 0xff;
          b = (b + (b1 & 0x03) - 2) & 0xff;
        } else if (tag === OP_LUMA) {
          if (p >= end) throw new PreviewError('TRUNCATED', 'QOI data ends inside a LUMA op');
          const b2 = buf[p++];
          const vg = (b1 & 0x3f) - 32;
          r = (r + vg - 8 + ((b2 >> 4) & 0x0f)) & 0xff;
          g = (g + vg) & 0xff;
          b = (b + vg - 8 + (b2 & 0x0f)) & 0xff;
        } else if (tag === OP_RUN) {
          run = b1 & 0x3f;
        }
      }
      const h = ((r * 3 + g * 5 + b * 7 + a * 11) % 64) * 4;
      index[h] = r;
      index[h + 1] = g;
      index[h + 2] = b;
      index[h + 3] = a;
    }
    const o = px * 4;
    out[o] = r;
    out[o + 1] = g;
    out[o + 2] = b;
    out[o + 3] = a;
  }
  return { width, height, data: out };
}

/** A QOI encoder (RGBA, no cleverness beyond the format's ops): used by tests and simulators to make real QOI data. */
export function encodeQoi(img: RgbaImage): Buffer {
  const { width, height, data } = img;
  const chunks: number[] = [];
  const header = Buffer.alloc(HEADER_SIZE);
  header.write('qoif', 0, 'latin1');
  header.writeUInt32BE(width, 4);
  header.writeUInt32BE(height, 8);
  header[12] = 4;
  header[13] = 0;
  const index = new Uint8Array(64 * 4);
  let pr = 0;
  let pg = 0;
  let pb = 0;
  let pa = 255;
  let run = 0;
  const pixels = width * height;
  for (let px = 0; px < pixels; px++) {
    const o = px * 4;
    const r = data[o];
    const g = data[o + 1];
    const b = data[o + 2];
    const a = data[o + 3];
    if (r === pr && g === pg && b === pb && a === pa) {
      run++;
      if (run === 62 || px === pixels - 1) {
        chunks.push(OP_RUN | (run - 1));
        run = 0;
      }
      continue;
    }
    if (run > 0) {
      chunks.push(OP_RUN | (run - 1));
      run = 0;
    }
    const h = ((r * 3 + g * 5 + b * 7 + a * 11) % 64) * 4;
    if (index[h] === r && index[h + 1] === g && index[h + 2] === b && index[h + 3] === a) {
      chunks.push(OP_INDEX | (h / 4));
    } else {
      index[h] = r;
      index[h + 1] = g;
      index[h + 2] = b;
      index[h + 3] = a;
      if (a === pa) {
        const vr = ((r - pr + 384) % 256) - 128;
        const vg = ((g - pg + 384) % 256) - 128;
        const vb = ((b - pb + 384) % 256) - 128;
        const vgr = vr - vg;
        const vgb = vb - vg;
        if (vr > -3 && vr < 2 && vg > -3 && vg < 2 && vb > -3 && vb < 2) {
          chunks.push(OP_DIFF | ((vr + 2) << 4) | ((vg + 2) << 2) | (vb + 2));
        } else if (vgr > -9 && vgr < 8 && vg > -33 && vg < 32 && vgb > -9 && vgb < 8) {
          chunks.push(OP_LUMA | (vg + 32), ((vgr + 8) << 4) | (vgb + 8));
        } else {
          chunks.push(OP_RGB, r, g, b);
        }
      } else {
        chunks.push(OP_RGBA, r, g, b, a);
      }
    }
    pr = r;
    pg = g;
    pb = b;
    pa = a;
  }
  return Buffer.concat([header, Buffer.from(chunks), Buffer.from([0, 0, 0, 0, 0, 0, 0, 1])]);
}
