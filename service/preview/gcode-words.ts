/**
 * G-code line parsing for the toolpath scanner: a G/M line's command and its X Y Z E I J (R)
 * words, read into a reused record without allocating (millions of lines per file).
 */

export interface Words {
  letter: number; // 'G' | 'M' | 0
  code: number;
  x: number;
  y: number;
  z: number;
  e: number;
  i: number;
  j: number;
  has: number; // bit flags
}
export const HX = 1;
export const HY = 2;
export const HZ = 4;
export const HE = 8;
export const HI = 16;
export const HJ = 32;
export const HR = 64;

/** Parses a G/M line's command and X Y Z E I J words into `w` (no allocation). */
export function parseWords(line: string, w: Words): void {
  const n = line.length;
  let p = 0;
  w.letter = 0;
  w.has = 0;
  while (p < n && (line.charCodeAt(p) === 32 || line.charCodeAt(p) === 9)) p++;
  let c = line.charCodeAt(p) | 32;
  if (c === 110 /* n */) {
    p++;
    while (p < n && line.charCodeAt(p) >= 48 && line.charCodeAt(p) <= 57) p++;
    while (p < n && (line.charCodeAt(p) === 32 || line.charCodeAt(p) === 9)) p++;
    c = line.charCodeAt(p) | 32;
  }
  if (c !== 103 /* g */ && c !== 109 /* m */) return;
  p++;
  let code = 0;
  let digits = 0;
  while (p < n) {
    const d = line.charCodeAt(p) - 48;
    if (d < 0 || d > 9) break;
    code = code * 10 + d;
    digits++;
    p++;
  }
  if (digits === 0) return;
  // "M862.3" and the like: a sub-code; keep it out of the main code.
  if (p < n && line.charCodeAt(p) === 46) {
    code += 0.5;
    p++;
    while (p < n && line.charCodeAt(p) >= 48 && line.charCodeAt(p) <= 57) p++;
  }
  w.letter = c === 103 ? 71 : 77;
  w.code = code;
  if (w.letter !== 71) return;
  while (p < n) {
    const ch = line.charCodeAt(p);
    if (ch === 59 /* ; */) break;
    if (ch === 32 || ch === 9) {
      p++;
      continue;
    }
    const letter = ch | 32;
    p++;
    // number: [+-]digits[.digits][e[+-]digits]
    const start = p;
    let sign = 1;
    let cc = line.charCodeAt(p);
    if (cc === 45) {
      sign = -1;
      p++;
    } else if (cc === 43) p++;
    let val = 0;
    let any = false;
    while (p < n) {
      cc = line.charCodeAt(p) - 48;
      if (cc < 0 || cc > 9) break;
      val = val * 10 + cc;
      any = true;
      p++;
    }
    if (p < n && line.charCodeAt(p) === 46) {
      p++;
      let scale = 0.1;
      while (p < n) {
        cc = line.charCodeAt(p) - 48;
        if (cc < 0 || cc > 9) break;
        val += cc * scale;
        scale *= 0.1;
        any = true;
        p++;
      }
    }
    if (p < n && (line.charCodeAt(p) | 32) === 101 && any) {
      // exponent (rare): fall back to Number() for exactness
      let q = p + 1;
      if (line.charCodeAt(q) === 45 || line.charCodeAt(q) === 43) q++;
      while (q < n && line.charCodeAt(q) >= 48 && line.charCodeAt(q) <= 57) q++;
      val = Math.abs(Number(line.slice(start, q)));
      p = q;
    }
    while (p < n && line.charCodeAt(p) !== 32 && line.charCodeAt(p) !== 9 && line.charCodeAt(p) !== 59) p++; // junk after the number
    if (!any) continue;
    val *= sign;
    switch (letter) {
      case 120:
        w.x = val;
        w.has |= HX;
        break;
      case 121:
        w.y = val;
        w.has |= HY;
        break;
      case 122:
        w.z = val;
        w.has |= HZ;
        break;
      case 101:
        w.e = val;
        w.has |= HE;
        break;
      case 105:
        w.i = val;
        w.has |= HI;
        break;
      case 106:
        w.j = val;
        w.has |= HJ;
        break;
      case 114:
        w.has |= HR;
        break;
    }
  }
}
