/**
 * PNG encoding (pngjs), image sniffing (PNG / JPEG / QOI dimensions from the
 * header alone) and the neutral "no preview" placeholder.
 */
import { PNG } from 'pngjs';
import { PreviewError } from './errors';
import { decodeQoi, isQoi, qoiSize, type RgbaImage } from './qoi';

export type ImageFormat = 'png' | 'jpg' | 'qoi';

export interface ImageInfo {
  format: ImageFormat;
  width: number;
  height: number;
}

/** Largest picture the library will encode: 8192 x 8192. */
export const MAX_IMAGE_SIDE = 8192;

export function encodePng(rgba: Uint8Array, width: number, height: number): Buffer {
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1 || width > MAX_IMAGE_SIDE || height > MAX_IMAGE_SIDE) {
    throw new PreviewError('TOO_LARGE', `image size ${width}x${height} outside 1..${MAX_IMAGE_SIDE}`);
  }
  if (rgba.length !== width * height * 4) {
    throw new PreviewError('MALFORMED', `RGBA buffer has ${rgba.length} bytes, ${width * height * 4} expected for ${width}x${height}`);
  }
  const png = new PNG({ width, height, colorType: 6, inputHasAlpha: true });
  png.data = Buffer.isBuffer(rgba) ? rgba : Buffer.from(rgba.buffer, rgba.byteOffset, rgba.byteLength);
  // One fixed filter ("Up"): pngjs's adaptive choice tries all five per row, several times slower for little gain here.
  return PNG.sync.write(png, { colorType: 6, filterType: 2, deflateLevel: 6 });
}

export function decodePng(buf: Uint8Array): RgbaImage {
  try {
    const png = PNG.sync.read(Buffer.isBuffer(buf) ? buf : Buffer.from(buf));
    return { width: png.width, height: png.height, data: png.data };
  } catch (err) {
    throw new PreviewError('MALFORMED', `PNG does not decode: ${(err as Error).message}`, { cause: err });
  }
}

const PNG_MAGIC = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

export function isPng(buf: Uint8Array): boolean {
  return buf.length >= 8 && PNG_MAGIC.every((b, i) => buf[i] === b);
}

export function isJpeg(buf: Uint8Array): boolean {
  return buf.length >= 3 && buf[0] === 0xff && buf[1] === 0xd8 && buf[2] === 0xff;
}

/** Format and size from the first bytes; null when the data is none of PNG, JPEG, QOI or its header is cut. */
export function imageInfo(buf: Uint8Array): ImageInfo | null {
  if (isPng(buf)) {
    // The IHDR chunk comes first: length(4) "IHDR"(4) width(4) height(4).
    if (buf.length < 24 || buf[12] !== 0x49 || buf[13] !== 0x48 || buf[14] !== 0x44 || buf[15] !== 0x52) return null;
    const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    return { format: 'png', width: view.getUint32(16, false), height: view.getUint32(20, false) };
  }
  if (isQoi(buf)) {
    const size = qoiSize(buf);
    return size ? { format: 'qoi', ...size } : null;
  }
  if (isJpeg(buf)) {
    const size = jpegSize(buf);
    return size ? { format: 'jpg', ...size } : null;
  }
  return null;
}

/** Walks JPEG markers up to the first SOFn frame header. */
function jpegSize(buf: Uint8Array): { width: number; height: number } | null {
  let p = 2;
  while (p + 4 <= buf.length) {
    if (buf[p] !== 0xff) return null;
    const marker = buf[p + 1];
    if (marker === 0xff) {
      p++;
      continue;
    }
    if (marker === 0xd8 || (marker >= 0xd0 && marker <= 0xd7) || marker === 0x01) {
      p += 2;
      continue;
    }
    const len = (buf[p + 2] << 8) | buf[p + 3];
    if (len < 2) return null;
    const isSof = marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
    if (isSof) {
      if (p + 9 > buf.length) return null;
      return { height: (buf[p + 5] << 8) | buf[p + 6], width: (buf[p + 7] << 8) | buf[p + 8] };
    }
    p += 2 + len;
  }
  return null;
}

/** A picture a browser can show: PNG and JPEG as they are, QOI converted to PNG. */
export function toDisplayImage(data: Buffer): { data: Buffer; mime: 'image/png' | 'image/jpeg'; width: number; height: number } {
  const info = imageInfo(data);
  if (!info) throw new PreviewError('MALFORMED', 'embedded picture is neither PNG, JPEG nor QOI');
  if (info.format === 'png') return { data, mime: 'image/png', width: info.width, height: info.height };
  if (info.format === 'jpg') return { data, mime: 'image/jpeg', width: info.width, height: info.height };
  const img = decodeQoi(data);
  return { data: encodePng(img.data, img.width, img.height), mime: 'image/png', width: img.width, height: img.height };
}

/**
 * A neutral placeholder: a light grey rounded card with a darker "no" sign
 * (a ring crossed by a diagonal bar) in the middle, on a transparent background.
 */
export function placeholderPng(width = 256, height = width): Buffer {
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 8 || height < 8 || width > MAX_IMAGE_SIDE || height > MAX_IMAGE_SIDE) {
    throw new PreviewError('TOO_LARGE', `placeholder size ${width}x${height} outside 8..${MAX_IMAGE_SIDE}`);
  }
  // Drawn and deflated on the event loop (tens of ms, more under load) and always the same: made once per size.
  const key = `${width}x${height}`;
  let png = placeholders.get(key);
  if (!png) {
    png = drawPlaceholder(width, height);
    if (placeholders.size >= 8) placeholders.delete(placeholders.keys().next().value!);
    placeholders.set(key, png);
  }
  return Buffer.from(png);
}

const placeholders = new Map<string, Buffer>();

function drawPlaceholder(width: number, height: number): Buffer {
  const data = Buffer.alloc(width * height * 4);
  const card = [0xe4, 0xe6, 0xea];
  const mark = [0x9a, 0xa0, 0xa8];
  const radius = Math.min(width, height) * 0.08;
  const cx = width / 2;
  const cy = height / 2;
  const ringOuter = Math.min(width, height) * 0.22;
  const stroke = Math.max(1.5, Math.min(width, height) * 0.035);
  const ringInner = ringOuter - stroke;
  const inv = 1 / Math.SQRT2;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const px = x + 0.5;
      const py = y + 0.5;
      // Rounded-rectangle card covering the whole image.
      const dx = Math.max(radius - px, px - (width - radius), 0);
      const dy = Math.max(radius - py, py - (height - radius), 0);
      if (dx * dx + dy * dy > radius * radius) continue;
      const o = (y * width + x) * 4;
      const rx = px - cx;
      const ry = py - cy;
      const dist = Math.hypot(rx, ry);
      // Distance to the diagonal through the centre (top-left to bottom-right).
      const diag = Math.abs((rx - ry) * inv);
      const onMark = (dist <= ringOuter && dist >= ringInner) || (dist < ringInner && diag <= stroke / 2);
      const c = onMark ? mark : card;
      data[o] = c[0];
      data[o + 1] = c[1];
      data[o + 2] = c[2];
      data[o + 3] = 255;
    }
  }
  return encodePng(data, width, height);
}
