import { crc32 } from 'node:zlib';
import { bgcodeMetadata, decompressBgcodeBlock, heatshrinkDecode, heatshrinkDecodeReference, meatpackDecode, pickBgcodeThumbnail, readBgcode } from '../../service/preview/bgcode';
import { PreviewError } from '../../service/preview/errors';
import { bgcodeBlock, bgcodeFile, heatshrinkEncode, ini, jpegHeader, meatpackEncode, thumbnailPng, thumbnailQoi, towerMoves, u16, type BlockSpec } from './builders';

const GCODE = ['M109 S215', 'G28', ';LAYER_CHANGE', ';Z:0.2', ...towerMoves(40)].join('\n') + '\n';

const printer = { printer_model: 'MK4S', filament_type: 'PETG', nozzle_diameter: '0.4', bed_temperature: '85', temperature: '240', fill_density: '25%', layer_height: '0.15', support_material: '1', 'filament used [g]': '4.20' };
const print = { 'total filament used [g]': '4.20', 'estimated printing time (normal mode)': '1h 2m 3s' };

const PICTURES = { png: thumbnailPng(16, 16), qoi: thumbnailQoi(313, 173), jpg: jpegHeader(480, 240) };

function file(gcodeBlocks: BlockSpec[], extra: BlockSpec[] = []): Buffer {
  return bgcodeFile([
    { type: 0, params: u16(0), data: ini({ Producer: 'PrusaSlicer 2.9.0' }) },
    { type: 3, params: u16(0), data: ini(printer) },
    { type: 5, params: u16(0, 16, 16), data: PICTURES.png },
    { type: 5, params: u16(2, 313, 173), data: PICTURES.qoi },
    { type: 5, params: u16(1, 480, 240), data: PICTURES.jpg },
    { type: 4, params: u16(0), data: ini(print), compression: 1 },
    { type: 2, params: u16(0), data: ini({ ...printer, arc_fitting: 'disabled' }), compression: 1 },
    ...extra,
    ...gcodeBlocks,
  ]);
}

/** G-code split into blocks of about `size` bytes at line ends, as PrusaSlicer does. */
const blocks = (text: string, size: number, compression: number, encoding = 0): BlockSpec[] => {
  const parts: string[] = [];
  let cur = '';
  for (const line of text.split(/(?<=\n)/)) {
    if (cur.length + line.length > size && cur) {
      parts.push(cur);
      cur = '';
    }
    cur += line;
  }
  if (cur) parts.push(cur);
  return parts.map((part) => ({ type: 1, compression, params: u16(encoding), data: encoding ? meatpackEncode(part.replace(/\n$/, ''), { keepComments: encoding === 2 }) : Buffer.from(part, 'latin1') }));
};

describe('reading BGCode', () => {
  test.each([
    ['uncompressed', 0],
    ['Deflate', 1],
    ['heatshrink 11/4', 2],
    ['heatshrink 12/4', 3],
  ])('%s G-code blocks decode to the original text; metadata and thumbnails are read', async (_name, compression) => {
    const buf = file(blocks(GCODE, 4096, compression));
    const f = await readBgcode(buf, { gcode: 'decode' });
    expect(f.gcode.text).toBe(GCODE);
    expect(f.gcode).toMatchObject({ blocks: blocks(GCODE, 4096, 0).length, compressions: [compression], encodings: [0], verified: true, uncompressedBytes: GCODE.length });
    expect(f.fileMetadata).toEqual({ Producer: 'PrusaSlicer 2.9.0' });
    expect(f.printMetadata['estimated printing time (normal mode)']).toBe('1h 2m 3s');
    expect(f.slicerMetadata.arc_fitting).toBe('disabled');
    expect(f.thumbnails.map((t) => [t.format, t.width, t.height])).toEqual([
      ['png', 16, 16],
      ['qoi', 313, 173],
      ['jpg', 480, 240],
    ]);
    expect(pickBgcodeThumbnail(f)).toMatchObject({ format: 'jpg', width: 480 });
    expect(bgcodeMetadata(f)).toEqual({
      estimated_print_time: 3723,
      layer_height: 0.15,
      infill: 25,
      layer_count: null,
      support_material: true,
      material_type: 'PETG',
      nozzle_temperature: 240,
      bed_temperature: 85,
      filament_used_g: 4.2,
      slicer: 'PrusaSlicer 2.9.0',
      printer_model: 'MK4S',
    });
  });

  test('MeatPack (encoding 1) and MeatPack keeping comments (encoding 2), also in no-spaces mode', async () => {
    const withComments = await readBgcode(file(blocks(GCODE, 2048, 3, 2)), { gcode: 'decode' });
    expect(withComments.gcode.encodings).toEqual([2]);
    expect(withComments.gcode.text).toBe(GCODE);
    const stripped = await readBgcode(file(blocks(GCODE, 2048, 3, 1)), { gcode: 'decode' });
    expect(stripped.gcode.text).toBe(GCODE.split('\n').filter((l) => l && !l.startsWith(';')).join('\n') + '\n');
    const text = 'G1 X10.5 Y20 E0.75 F1800\nM104 S215\nG1 E-0.8\n';
    expect(meatpackDecode(meatpackEncode(text, { noSpaces: true }))).toBe(text);
    // A literal 0xFF byte that is not a command passes through.
    expect(meatpackDecode(Buffer.from([0xff, 0x41, 0x42]))).toBe('\u00ffAB');
  });

  test('the fast heatshrink decoder agrees with heatshrink-ts on 11/4 and 12/4 data', () => {
    const sample = Buffer.from(GCODE.repeat(3));
    for (const w of [11, 12]) {
      const packed = heatshrinkEncode(sample, w, 4);
      expect(packed.length).toBeLessThan(sample.length / 2);
      expect(heatshrinkDecode(packed, w, 4, sample.length).equals(sample)).toBe(true);
      expect(heatshrinkDecodeReference(packed, w, 4).equals(sample)).toBe(true);
    }
  });

  test('gcode "skip" walks only block headers; "verify" checks every CRC without decoding', async () => {
    const buf = file(blocks(GCODE, 1024, 3));
    const skipped = await readBgcode(buf, { gcode: 'skip' });
    expect(skipped.gcode).toMatchObject({ blocks: blocks(GCODE, 1024, 0).length, verified: false });
    expect(skipped.gcode.text).toBeUndefined();
    const verified = await readBgcode(buf);
    expect(verified.gcode.verified).toBe(true);
    // Corrupting a G-code block is only noticed when it is read.
    const bad = Buffer.from(buf);
    bad[bad.length - 10] ^= 0xff;
    await expect(readBgcode(bad, { gcode: 'skip' })).resolves.toBeDefined();
    await expect(readBgcode(bad)).rejects.toMatchObject({ code: 'CHECKSUM' });
  });

  test('files without checksums (type 0) read too', async () => {
    const buf = bgcodeFile([{ type: 3, params: u16(0), data: ini(printer) }, ...blocks(GCODE, 8192, 1)], false);
    const f = await readBgcode(buf, { gcode: 'decode' });
    expect(f.checksumType).toBe(0);
    expect(f.gcode.text).toBe(GCODE);
    expect(f.gcode.verified).toBe(false);
  });

  test('onGcode can stop the reading early', async () => {
    let calls = 0;
    const f = await readBgcode(file(blocks(GCODE, 512, 1)), { gcode: 'decode', onGcode: () => ++calls < 2 });
    expect(calls).toBe(2);
    expect(f.gcode.text!.length).toBeLessThanOrEqual(1024);
    expect(GCODE.startsWith(f.gcode.text!)).toBe(true);
  });
});

describe('broken and hostile BGCode', () => {
  const good = file(blocks(GCODE, 1500, 3));

  test('cut at any point: always a PreviewError (TRUNCATED or MALFORMED), never a crash or a hang', async () => {
    // The format has no end marker: a cut exactly between blocks leaves a shorter valid file.
    const boundaries = new Set((await readBgcode(good, { gcode: 'skip' })).blocks.map((b) => b.offset));
    const codes = new Set<string>();
    for (let cut = 0; cut < good.length; cut += cut < 300 ? 1 : 37) {
      const err = await readBgcode(good.subarray(0, cut), { gcode: 'decode' }).then(
        () => null,
        (e: unknown) => e,
      );
      if (boundaries.has(cut)) {
        expect(err).toBeNull();
        continue;
      }
      expect(err).toBeInstanceOf(PreviewError);
      codes.add((err as PreviewError).code);
    }
    expect([...codes].sort()).toEqual(['MALFORMED', 'TRUNCATED']);
  });

  test('a wrong CRC is CHECKSUM and names the block', async () => {
    const bad = Buffer.from(good);
    bad[30] ^= 0x01; // inside the file-metadata block
    await expect(readBgcode(bad, { gcode: 'skip' })).rejects.toMatchObject({ code: 'CHECKSUM', message: expect.stringContaining('block at 10') });
  });

  test('bad magic, unknown version, checksum type, block type, compression, encoding', async () => {
    const patched = (off: number, bytes: number[]) => {
      const b = Buffer.from(good);
      bytes.forEach((v, i) => (b[off + i] = v));
      return b;
    };
    await expect(readBgcode(Buffer.from('PK\x03\x04 not bgcode'))).rejects.toMatchObject({ code: 'MALFORMED' });
    await expect(readBgcode(patched(4, [2]))).rejects.toMatchObject({ code: 'UNSUPPORTED' });
    await expect(readBgcode(patched(8, [7]))).rejects.toMatchObject({ code: 'MALFORMED' });
    await expect(readBgcode(patched(10, [9]))).rejects.toMatchObject({ code: 'MALFORMED', message: expect.stringContaining('unknown type 9') });
    await expect(readBgcode(patched(12, [5]))).rejects.toMatchObject({ code: 'MALFORMED', message: expect.stringContaining('compression 5') });
    const badEncoding = bgcodeFile([{ type: 1, params: u16(7), data: Buffer.from('G28\n') }]);
    await expect(readBgcode(badEncoding)).rejects.toMatchObject({ code: 'MALFORMED', message: expect.stringContaining('encoding 7') });
  });

  test('a block declaring a huge size is refused before anything is read', async () => {
    const block = bgcodeBlock({ type: 3, params: u16(0), data: Buffer.from('a=b\n') });
    block.writeUInt32LE(0x7fffffff, 4); // uncompressed size of an uncompressed block = its data length
    const buf = Buffer.concat([good.subarray(0, 10), block]);
    await expect(readBgcode(buf)).rejects.toMatchObject({ code: expect.stringMatching(/TRUNCATED|TOO_LARGE/) });
    const deflated = bgcodeBlock({ type: 3, params: u16(0), data: Buffer.from('a=b\n'), compression: 1 });
    deflated.writeUInt32LE(1 << 30, 4);
    const fixed = Buffer.concat([deflated.subarray(0, deflated.length - 4), Buffer.alloc(4)]);
    fixed.writeUInt32LE(crc32(fixed.subarray(0, fixed.length - 4)) >>> 0, fixed.length - 4);
    await expect(readBgcode(Buffer.concat([good.subarray(0, 10), fixed]))).rejects.toMatchObject({ code: 'TOO_LARGE' });
  });

  test('data that decompresses to another size than declared is MALFORMED', () => {
    expect(() => decompressBgcodeBlock(Buffer.from([0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01]), 1, 5)).toThrow(expect.objectContaining({ code: 'MALFORMED' }));
    expect(() => decompressBgcodeBlock(Buffer.from('garbage'), 1, 5)).toThrow(expect.objectContaining({ code: 'MALFORMED' }));
    const packed = heatshrinkEncode(Buffer.from('hello hello hello'), 12, 4);
    expect(() => decompressBgcodeBlock(packed, 3, 100)).toThrow(expect.objectContaining({ code: 'MALFORMED' }));
    expect(() => decompressBgcodeBlock(packed, 3, 5)).toThrow(expect.objectContaining({ code: 'MALFORMED' }));
  });

  test('a thumbnail that is not an image is MALFORMED', async () => {
    const buf = bgcodeFile([{ type: 5, params: u16(0, 16, 16), data: Buffer.from('definitely not a png') }]);
    await expect(readBgcode(buf)).rejects.toMatchObject({ code: 'MALFORMED' });
  });
});
