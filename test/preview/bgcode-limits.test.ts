/**
 * A BGCode file cannot make the reader work without bound: the number of blocks per file is capped,
 * block headers come from bulk reads (not three reads per block), the G-code decoded per read has a
 * budget, and a reader whose caller has gone stops.
 */
import fs from 'node:fs';
import path from 'node:path';
import { BGCODE_LIMITS, parseBgcodeSource, readBgcode } from '../../service/preview/bgcode';
import { PreviewError } from '../../service/preview/errors';
import { bufferSource, type ByteSource } from '../../service/preview/source';
import { tempDir } from '../helpers/service';
import { bgcodeBlock, bgcodeFile, u16 } from './builders';

/** A BGCode file of `n` empty G-code blocks (14 bytes each with CRC). */
function emptyBlocks(n: number): Buffer {
  const head = bgcodeFile([]);
  const block = bgcodeBlock({ type: 1, params: u16(0), data: Buffer.alloc(0) });
  const out = Buffer.alloc(head.length + n * block.length);
  head.copy(out, 0);
  for (let i = 0; i < n; i++) block.copy(out, head.length + i * block.length);
  return out;
}

function counting(src: ByteSource): ByteSource & { reads: number } {
  const counted = {
    reads: 0,
    size: src.size,
    read(offset: number, length: number) {
      counted.reads++;
      return src.read(offset, length);
    },
    close: () => src.close(),
  };
  return counted;
}

describe('BGCode reader limits', () => {
  test('a file of a million empty blocks is refused as TOO_LARGE after the block cap', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'million.bgcode');
    fs.writeFileSync(file, emptyBlocks(1_000_000));
    try {
      const err = await readBgcode(file, { gcode: 'decode' }).catch((e) => e);
      expect(err).toBeInstanceOf(PreviewError);
      expect(err).toMatchObject({ code: 'TOO_LARGE', message: `BGCode file has more than ${BGCODE_LIMITS.blocks} blocks` });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('block headers are read in bulk: 50,000 blocks take a handful of reads', async () => {
    const src = counting(bufferSource(emptyBlocks(50_000)));
    const file = await parseBgcodeSource(src, { gcode: 'verify' });
    expect(file.gcode.blocks).toBe(50_000);
    // 50,000 blocks of 14 bytes are 700 KB: one window of 1 MiB plus the file header.
    expect(src.reads).toBeLessThan(10);
  });

  test('a reader whose caller has gone stops with ABORTED', async () => {
    const abort = new AbortController();
    abort.abort();
    await expect(readBgcode(emptyBlocks(10), { signal: abort.signal })).rejects.toMatchObject({ code: 'ABORTED' });
  });

  test('G-code decoding stops at its byte budget; the layer count is not guessed from part of the file', async () => {
    const layer = Buffer.from(';LAYER_CHANGE\nG1 X1\n'.repeat(52_429)); // ~1 MiB
    const blocks = Array.from({ length: 6 }, () => ({ type: 1, compression: 1, params: u16(0), data: layer }));
    const buf = bgcodeFile(blocks);
    const file = await readBgcode(buf, { gcode: 'decode', maxDecodedBytes: 3 * layer.length });
    expect(file.gcode).toMatchObject({ decodeStopped: true, textTruncated: true });
    expect(file.gcode.text!.length).toBe(3 * layer.length);
    const whole = await readBgcode(buf, { gcode: 'decode' });
    expect(whole.gcode.decodeStopped).toBeUndefined();
    expect(whole.gcode.text!.length).toBe(6 * layer.length);
  });
});
