/**
 * BGCode files made in memory with correct CRCs: blocks stored plain, with
 * Deflate, or heatshrink 11/4 and 12/4 (a small test-only encoder), and
 * G-code packed with MeatPack (a test-only packer following libbgcode's
 * binarizer).
 */
import { crc32 } from 'node:zlib';
import { zlibSync } from 'fflate';

export interface BlockSpec {
  type: number;
  /** 0 none, 1 Deflate, 2 heatshrink 11/4, 3 heatshrink 12/4 */
  compression?: number;
  params: Buffer;
  data: Buffer;
}

export const u16 = (...values: number[]) => {
  const b = Buffer.alloc(values.length * 2);
  values.forEach((v, i) => b.writeUInt16LE(v, i * 2));
  return b;
};

export const ini = (entries: Record<string, string>) =>
  Buffer.from(
    Object.entries(entries)
      .map(([k, v]) => `${k}=${v}\n`)
      .join(''),
  );

export function bgcodeBlock(spec: BlockSpec, checksum = true): Buffer {
  const compression = spec.compression ?? 0;
  const payload =
    compression === 0
      ? spec.data
      : compression === 1
        ? Buffer.from(zlibSync(spec.data))
        : heatshrinkEncode(spec.data, compression === 2 ? 11 : 12, 4);
  const header = Buffer.alloc(compression ? 12 : 8);
  header.writeUInt16LE(spec.type, 0);
  header.writeUInt16LE(compression, 2);
  header.writeUInt32LE(spec.data.length, 4);
  if (compression) header.writeUInt32LE(payload.length, 8);
  const body = Buffer.concat([header, spec.params, payload]);
  if (!checksum) return body;
  const crc = Buffer.alloc(4);
  crc.writeUInt32LE(crc32(body) >>> 0, 0);
  return Buffer.concat([body, crc]);
}

export function bgcodeFile(blocks: BlockSpec[], checksum = true): Buffer {
  const header = Buffer.concat([Buffer.from('GCDE'), Buffer.from([1, 0, 0, 0]), u16(checksum ? 1 : 0)]);
  return Buffer.concat([header, ...blocks.map((b) => bgcodeBlock(b, checksum))]);
}

/**
 * Test-only heatshrink encoder: greedy LZSS with a small hash chain. Produces
 * the standard bitstream (tag 1 + literal byte; tag 0 + (offset-1) in
 * `windowBits` bits + (count-1) in `lookaheadBits` bits; MSB first).
 */
export function heatshrinkEncode(input: Uint8Array, windowBits: number, lookaheadBits: number): Buffer {
  const out: number[] = [];
  let cur = 0;
  let nbits = 0;
  const put = (value: number, bits: number) => {
    for (let i = bits - 1; i >= 0; i--) {
      cur = (cur << 1) | ((value >> i) & 1);
      nbits++;
      if (nbits === 8) {
        out.push(cur);
        cur = 0;
        nbits = 0;
      }
    }
  };
  const maxOffset = 1 << windowBits;
  const maxLen = 1 << lookaheadBits;
  const chains = new Map<number, number[]>();
  const key = (i: number) => (input[i] << 8) | input[i + 1];
  const remember = (i: number) => {
    if (i + 1 >= input.length) return;
    const k = key(i);
    let list = chains.get(k);
    if (!list) chains.set(k, (list = []));
    list.push(i);
    if (list.length > 48) list.shift();
  };
  let i = 0;
  while (i < input.length) {
    let bestLen = 0;
    let bestOff = 0;
    if (i + 1 < input.length) {
      const list = chains.get(key(i)) ?? [];
      for (let c = list.length - 1; c >= 0; c--) {
        const j = list[c];
        const off = i - j;
        if (off > maxOffset) break;
        let len = 0;
        while (len < maxLen && i + len < input.length && input[j + len] === input[i + len]) len++;
        if (len > bestLen) {
          bestLen = len;
          bestOff = off;
          if (len === maxLen) break;
        }
      }
    }
    if (bestLen >= 2) {
      put(0, 1);
      put(bestOff - 1, windowBits);
      put(bestLen - 1, lookaheadBits);
      for (let k = 0; k < bestLen; k++) remember(i + k);
      i += bestLen;
    } else {
      put(1, 1);
      put(input[i], 8);
      remember(i);
      i++;
    }
  }
  if (nbits > 0) out.push(cur << (8 - nbits));
  return Buffer.from(out);
}

/**
 * Test-only MeatPack packer following libbgcode's MPBinarizer: comment lines
 * pass through unpacked (packing disabled around them) when `keepComments`;
 * G lines lose their spaces; pairs of packable characters share a byte.
 */
export function meatpackEncode(text: string, opts: { keepComments?: boolean; noSpaces?: boolean } = {}): Buffer {
  const keepComments = opts.keepComments ?? true;
  const noSpaces = opts.noSpaces ?? false;
  const table = '0123456789. \nGX';
  const codeOf = (c: string): number => {
    if (noSpaces && c === 'E') return 11;
    if (noSpaces && c === ' ') return -1;
    return table.indexOf(c);
  };
  const out: number[] = [0xff, 0xff, 251];
  if (noSpaces) out.push(0xff, 0xff, 247);
  let packing = true;
  for (const raw of text.split('\n')) {
    const line = raw + '\n';
    if (raw.startsWith(';')) {
      if (!keepComments) continue;
      if (packing) {
        out.push(0xff, 0xff, 250);
        packing = false;
      }
      for (const ch of line) out.push(ch.charCodeAt(0));
      continue;
    }
    let l = raw.split(';')[0].trim();
    if (!l) continue;
    if (/G\d/.test(l)) l = l.replace(/ /g, '');
    l += '\n';
    const bytes: number[] = [];
    for (let i = 0; i < l.length; i += 2) {
      const c1 = l[i];
      const c2 = i + 1 < l.length ? l[i + 1] : '\n';
      const p1 = codeOf(c1);
      const p2 = codeOf(c2);
      if (p1 >= 0 && p2 >= 0) bytes.push((p2 << 4) | p1);
      else if (p1 >= 0) bytes.push(0xf0 | p1, c2.charCodeAt(0));
      else if (p2 >= 0) bytes.push((p2 << 4) | 0x0f, c1.charCodeAt(0));
      else bytes.push(0xff, c1.charCodeAt(0), c2.charCodeAt(0));
    }
    if (!packing) {
      out.push(0xff, 0xff, 251);
      packing = true;
    }
    out.push(...bytes);
  }
  return Buffer.from(out);
}
