/**
 * Pictures for the preview tests: thumbnails made in memory as PNG, QOI and a
 * JPEG header (what slicers embed), and readers of the PNGs the service renders.
 */
import { PNG } from 'pngjs';
import { encodePng } from '../../../service/preview/png';
import { encodeQoi } from '../../../service/preview/qoi';

/**
 * RGBA of a small picture: a shaded square on a transparent background tinted
 * by `hue` (like the simulator's thumbnails, but encoded with one fixed PNG
 * filter: pngjs's adaptive filtering is very slow inside jest's sandbox).
 */
export function thumbnailRgba(width: number, height: number, hue = 200): Buffer {
  const data = Buffer.alloc(width * height * 4);
  const h = hue / 360;
  const f = (n: number) => {
    const k = (n + h * 12) % 12;
    return 0.5 - 0.3 * Math.max(-1, Math.min(k - 3, 9 - k, 1));
  };
  const [r, g, b] = [f(0) * 255, f(8) * 255, f(4) * 255];
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 4;
      const shade = 0.6 + (0.4 * (width - x + y)) / (width + height);
      data[i] = Math.round(r * shade);
      data[i + 1] = Math.round(g * shade);
      data[i + 2] = Math.round(b * shade);
      data[i + 3] = x > width * 0.2 && x < width * 0.8 && y > height * 0.2 && y < height * 0.8 ? 255 : 0;
    }
  }
  return data;
}

export function thumbnailPng(width: number, height: number, hue = 200): Buffer {
  return encodePng(thumbnailRgba(width, height, hue), width, height);
}

/** A QOI picture with the same content as thumbnailPng. */
export function thumbnailQoi(width: number, height: number, hue = 200): Buffer {
  return encodeQoi({ width, height, data: thumbnailRgba(width, height, hue) });
}

/** A minimal baseline-JPEG header (SOI, APP0, SOF0) with the given size: enough for size sniffing. */
export function jpegHeader(width: number, height: number): Buffer {
  const app0 = Buffer.from([0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01, 0x01, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00]);
  const sof = Buffer.from([0xff, 0xc0, 0x00, 0x11, 0x08, height >> 8, height & 0xff, width >> 8, width & 0xff, 0x03, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1]);
  return Buffer.concat([Buffer.from([0xff, 0xd8]), app0, sof, Buffer.from([0xff, 0xd9])]);
}

/** Alpha at (x, y) of a PNG. */
export function alphaAt(png: Buffer, x: number, y: number): number {
  const img = PNG.sync.read(png);
  return img.data[(y * img.width + x) * 4 + 3];
}

/** Fraction of non-transparent pixels in the central third of a PNG. */
export function centreCoverage(png: Buffer): { width: number; height: number; coverage: number } {
  const img = PNG.sync.read(png);
  let on = 0;
  let all = 0;
  for (let y = Math.floor(img.height / 3); y < Math.floor((2 * img.height) / 3); y++) {
    for (let x = Math.floor(img.width / 3); x < Math.floor((2 * img.width) / 3); x++) {
      all++;
      if (img.data[(y * img.width + x) * 4 + 3] > 0) on++;
    }
  }
  return { width: img.width, height: img.height, coverage: on / all };
}
