/**
 * JpegSplitter cuts ffmpeg's image2pipe output into whole JPEGs whatever the
 * chunking, skips garbage, and drops a frame larger than its bound without
 * holding more than that bound in memory.
 */
import jpeg from 'jpeg-js';
import { JpegSplitter } from '../../../service/cameras/jpeg-splitter';

function picture(width: number, height: number, seed: number): Buffer {
  const data = Buffer.alloc(width * height * 4);
  for (let i = 0; i < data.length; i++) data[i] = (i * 31 + seed * 97 + ((i / 4) | 0) * 7) & 0xff;
  return Buffer.from(jpeg.encode({ data, width, height }, 80).data);
}

/** A JPEG with an APP1 segment right after SOI whose bytes hold FF D9 (as an EXIF thumbnail would). */
function withThumbnailLikeApp1(image: Buffer): Buffer {
  const payload = Buffer.from([0x45, 0x78, 0x69, 0x66, 0x00, 0x00, 0xff, 0xd8, 0x01, 0x02, 0xff, 0xd9, 0x00]);
  const segment = Buffer.alloc(4 + payload.length);
  segment.writeUInt16BE(0xffe1, 0);
  segment.writeUInt16BE(2 + payload.length, 2);
  payload.copy(segment, 4);
  return Buffer.concat([image.subarray(0, 2), segment, image.subarray(2)]);
}

const frames = [picture(16, 8, 1), withThumbnailLikeApp1(picture(24, 16, 2)), picture(8, 8, 3)];
const stream = Buffer.concat(frames);

function split(chunks: Buffer[], max?: number): { out: Buffer[]; splitter: JpegSplitter } {
  const splitter = new JpegSplitter(max);
  const out = chunks.flatMap((c) => splitter.push(c));
  return { out, splitter };
}

test('whole frames come out as they went in, in one chunk', () => {
  const { out, splitter } = split([stream]);
  expect(out).toEqual(frames);
  expect(splitter.pending).toBe(0);
  expect(splitter.skippedBytes).toBe(0);
  // Each is a JPEG a decoder takes, of its own size.
  expect(out.map((f) => jpeg.decode(f).width)).toEqual([16, 24, 8]);
});

test('every cut of the stream into two chunks gives the same frames (markers split across chunks included)', () => {
  const hex = (list: Buffer[]) => list.map((f) => f.toString('hex')).join(',');
  const wrong: number[] = [];
  for (let at = 1; at < stream.length; at++) {
    const { out } = split([stream.subarray(0, at), stream.subarray(at)]);
    if (hex(out) !== hex(frames)) wrong.push(at);
  }
  expect(wrong).toEqual([]);
});

test('one byte at a time gives the same frames', () => {
  const bytes = [...stream].map((b) => Buffer.from([b]));
  expect(split(bytes).out).toEqual(frames);
});

test('an FF D9 inside an APP segment does not end the frame early', () => {
  const { out } = split([frames[1]]);
  expect(out).toHaveLength(1);
  expect(out[0].length).toBe(frames[1].length);
  expect(jpeg.decode(out[0]).height).toBe(16);
});

test('garbage before, between and after frames is skipped and counted', () => {
  const noise = Buffer.from('not a jpeg \xff\x00 at all', 'latin1');
  const { out, splitter } = split([noise, frames[0], noise, frames[2], noise]);
  expect(out).toEqual([frames[0], frames[2]]);
  expect(splitter.skippedBytes).toBeGreaterThanOrEqual(2 * noise.length);
});

test('a frame larger than the bound is dropped, the next one comes through, memory stays bounded', () => {
  const big = picture(64, 64, 4);
  const small = picture(8, 8, 5);
  const max = Math.floor(big.length / 2);
  expect(small.length).toBeLessThan(max);
  const splitter = new JpegSplitter(max);
  const out: Buffer[] = [];
  let peak = 0;
  for (const part of [small, big, big, small]) {
    for (let at = 0; at < part.length; at += 97) {
      out.push(...splitter.push(part.subarray(at, at + 97)));
      peak = Math.max(peak, splitter.pending);
    }
  }
  expect(out).toEqual([small, small]);
  expect(splitter.oversize).toBe(2);
  expect(peak).toBeLessThanOrEqual(max + 2);
});

test('an endless stream without SOI holds nothing', () => {
  const splitter = new JpegSplitter(1024);
  for (let i = 0; i < 100; i++) expect(splitter.push(Buffer.alloc(4096, 0x41))).toEqual([]);
  expect(splitter.pending).toBe(0);
  expect(splitter.skippedBytes).toBe(409600);
});

test('a JPEG whose picture data never ends is dropped at the bound, not held for ever', () => {
  const splitter = new JpegSplitter(4096);
  const image = picture(8, 8, 6);
  const sos = image.indexOf(Buffer.from([0xff, 0xda]));
  // Headers and the start of the scan, then scan bytes (no marker among them) for ever.
  splitter.push(image.subarray(0, sos + 20));
  for (let i = 0; i < 50; i++) splitter.push(Buffer.alloc(1000, 0x11));
  expect(splitter.oversize).toBe(1);
  expect(splitter.pending).toBeLessThanOrEqual(4096);
  expect(splitter.push(frames[0])).toEqual([frames[0]]);
});
