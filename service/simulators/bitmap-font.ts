/**
 * A tiny 5x7 bitmap font for the simulators' camera pictures: enough to write
 * a printer's name, state and progress into a frame so that a screenshot of a
 * camera wall tells the printers apart. Each glyph is seven rows of five bits
 * (the most significant of the five is the left column), as 14 hex digits.
 */
const GLYPHS: Record<string, string> = {
  ' ': '00000000000000',
  '0': '0e11131519110e',
  '1': '040c040404040e',
  '2': '0e11010204081f',
  '3': '1f02040201110e',
  '4': '02060a121f0202',
  '5': '1f101e0101110e',
  '6': '0608101e11110e',
  '7': '1f010204080808',
  '8': '0e11110e11110e',
  '9': '0e11110f01020c',
  A: '0e11111f111111',
  B: '1e11111e11111e',
  C: '0e11101010110e',
  D: '1c12111111121c',
  E: '1f10101e10101f',
  F: '1f10101e101010',
  G: '0e11101711110f',
  H: '1111111f111111',
  I: '0e04040404040e',
  J: '0702020202120c',
  K: '11121418141211',
  L: '1010101010101f',
  M: '111b1515111111',
  N: '11111915131111',
  O: '0e11111111110e',
  P: '1e11111e101010',
  Q: '0e11111115120d',
  R: '1e11111e141211',
  S: '0f10100e01011e',
  T: '1f040404040404',
  U: '1111111111110e',
  V: '11111111110a04',
  W: '1111111515150a',
  X: '11110a040a1111',
  Y: '1111110a040404',
  Z: '1f01020408101f',
  '-': '0000001f000000',
  '.': '00000000000c0c',
  ':': '000c0c000c0c00',
  '%': '18190204081303',
  '/': '00010204081000',
  '#': '0a0a1f0a1f0a0a',
  '(': '02040808080402',
  ')': '08040202020408',
  _: '0000000000001f',
  '?': '0e110102040004',
};

export const GLYPH_WIDTH = 5;
export const GLYPH_HEIGHT = 7;

/** Rows of a character (unknown characters print as "?"; lower case as upper case). */
export function glyphRows(char: string): number[] {
  const hex = GLYPHS[char.toUpperCase()] ?? GLYPHS['?'];
  const rows: number[] = [];
  for (let i = 0; i < GLYPH_HEIGHT; i++) rows.push(parseInt(hex.slice(i * 2, i * 2 + 2), 16));
  return rows;
}

/** Pixel width of `text` at `scale` (one blank column between characters). */
export function textWidth(text: string, scale: number): number {
  return text.length * (GLYPH_WIDTH + 1) * scale;
}

/** Draws `text` into an RGBA buffer of `width` pixels per row, top-left at (x, y), clipped to the picture. */
export function drawText(rgba: Buffer, width: number, height: number, text: string, x: number, y: number, scale: number, color: [number, number, number]): void {
  let cx = x;
  for (const char of text) {
    const rows = glyphRows(char);
    for (let row = 0; row < GLYPH_HEIGHT; row++) {
      for (let col = 0; col < GLYPH_WIDTH; col++) {
        if (!(rows[row] & (1 << (GLYPH_WIDTH - 1 - col)))) continue;
        fillRect(rgba, width, height, cx + col * scale, y + row * scale, scale, scale, color);
      }
    }
    cx += (GLYPH_WIDTH + 1) * scale;
  }
}

/** Fills a rectangle of an RGBA picture, clipped to it. */
export function fillRect(rgba: Buffer, width: number, height: number, x: number, y: number, w: number, h: number, [r, g, b]: [number, number, number]): void {
  const x0 = Math.max(0, Math.floor(x));
  const y0 = Math.max(0, Math.floor(y));
  const x1 = Math.min(width, Math.floor(x + w));
  const y1 = Math.min(height, Math.floor(y + h));
  for (let py = y0; py < y1; py++) {
    let i = (py * width + x0) * 4;
    for (let px = x0; px < x1; px++, i += 4) {
      rgba[i] = r;
      rgba[i + 1] = g;
      rgba[i + 2] = b;
      rgba[i + 3] = 255;
    }
  }
}
