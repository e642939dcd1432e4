/**
 * Compatibility with real slicer output: every file in ../shared/fixtures
 * (3mf, bgcode, gcode, models). Read in place, never copied. Skipped with a
 * message when the folder is absent.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { extractThumbnail, readMetadata } from '../../service/preview';
import { heatshrinkDecode, heatshrinkDecodeReference, readBgcode } from '../../service/preview/bgcode';
import { analyzeGcode } from '../../service/preview/gcode-analyzer';
import { readGcodeMetadata } from '../../service/preview/gcode-meta';
import { parseStl } from '../../service/preview/mesh';
import { decodePng } from '../../service/preview/png';
import { read3mf } from '../../service/preview/threemf';
import { centreCoverage } from './builders';

const FIXTURES = process.env.PRINTFARM_FIXTURES ?? path.resolve(__dirname, '../../../shared/fixtures');
const haveFixtures = existsSync(FIXTURES);
if (!haveFixtures) console.warn(`preview compatibility tests skipped: no real slicer files at ${FIXTURES} (set PRINTFARM_FIXTURES)`);
const describeFixtures = haveFixtures ? describe : describe.skip;

const list = (sub: string) => (haveFixtures && existsSync(path.join(FIXTURES, sub)) ? readdirSync(path.join(FIXTURES, sub)).map((f) => path.join(FIXTURES, sub, f)) : []);
const fixture = (sub: string, name: string) => path.join(FIXTURES, sub, name);

/** What each known file must give; files not listed still have to produce a picture and metadata without errors. */
const EXPECTED: Record<string, Partial<Record<string, unknown>>> = {
  'bambustudio-02.01.00.59_4-plate_project.3mf': { layer_height: 0.2, infill: 15, nozzle_temperature: 220, bed_temperature: 45, material_type: 'PLA', support_material: false, printer_model: 'Bambu Lab X1 Carbon', slicer: 'BambuStudio 02.01.00.59', estimated_print_time: null },
  'slicr-3d-2.6.1_prusaslicer-fork_t180_project.3mf': { layer_height: 0.3, infill: 20, nozzle_temperature: 200, material_type: 'PLA', support_material: false, slicer: 'PrusaSlicer 2.6.1', printer_model: null },
  'prusaslicer-2.8.1_mk4s_mini-cube_hs12-meatpack_qoi.bgcode': { estimated_print_time: 221, layer_height: 0.2, infill: 15, layer_count: 31, nozzle_temperature: 225, bed_temperature: 60, filament_used_g: 0.75, material_type: 'PLA', printer_model: 'MK4S', slicer: 'PrusaSlicer 2.8.1', support_material: false },
  'prusaslicer-2.6.0_mini-cube_hs12-meatpack_png.bgcode': { estimated_print_time: 1926, layer_height: 0.15, nozzle_temperature: 240, bed_temperature: 90, filament_used_g: 3.01, material_type: 'PETG', printer_model: 'MINI', slicer: 'PrusaSlicer 2.6.0' },
  'prusaslicer-2.8.1_mk4s_mini-cube_qoi-thumbs.gcode': { estimated_print_time: 221, layer_height: 0.2, infill: 15, layer_count: 31, nozzle_temperature: 225, bed_temperature: 60, filament_used_g: 0.75, material_type: 'PLA', printer_model: 'MK4S', slicer: 'PrusaSlicer 2.8.1' },
  'prusaslicer-2.5.0_mk3smmu2s_png-thumb.gcode': { estimated_print_time: 632, layer_height: 0.2, filament_used_g: 1.49, printer_model: 'MK3SMMU2S', slicer: 'PrusaSlicer 2.5.0', layer_count: 31 },
  'cura-4.10.0_marlin_kreistest.gcode': { estimated_print_time: 1479, layer_height: 1, layer_count: 10, infill: 0, slicer: 'Cura 4.10.0' },
};

const PICTURE: Record<string, { method: string; width?: number; height?: number; source?: string }> = {
  'bambustudio-02.01.00.59_4-plate_project.3mf': { method: 'extracted', source: 'Metadata/plate_1.png' },
  'slicr-3d-2.6.1_prusaslicer-fork_t180_project.3mf': { method: 'extracted', width: 256, height: 256, source: 'Metadata/thumbnail.png' },
  'prusaslicer-2.8.1_mk4s_mini-cube_hs12-meatpack_qoi.bgcode': { method: 'extracted', width: 313, height: 173 },
  'prusaslicer-2.6.0_mini-cube_hs12-meatpack_png.bgcode': { method: 'extracted', width: 220, height: 124 },
  'prusaslicer-2.8.1_mk4s_mini-cube_qoi-thumbs.gcode': { method: 'extracted', width: 313, height: 173, source: 'thumbnail_QOI 313x173' },
  'prusaslicer-2.5.0_mk3smmu2s_png-thumb.gcode': { method: 'extracted', width: 160, height: 120 },
  'cura-4.10.0_marlin_kreistest.gcode': { method: 'analyzed' },
};

describeFixtures('real slicer files', () => {
  const all = [...list('3mf'), ...list('bgcode'), ...list('gcode'), ...list('models')];

  test('the fixture folder has files of every kind', () => {
    for (const sub of ['3mf', 'bgcode', 'gcode', 'models']) expect([sub, list(sub).length > 0]).toEqual([sub, true]);
  });

  test.each(all.map((f) => [path.basename(f), f]))('%s: a picture without falling back to the placeholder', async (name, file) => {
    const r = await extractThumbnail(file, undefined, { fallback: false, size: 128 });
    const img = decodePng(r.mime === 'image/png' ? r.data : Buffer.alloc(0));
    expect([img.width, img.height]).toEqual([r.width, r.height]);
    const want = PICTURE[name] ?? { method: name.endsWith('.stl') || name.endsWith('.obj') ? 'generated' : 'extracted' };
    expect(r).toMatchObject(want);
    if (r.method !== 'extracted') expect(centreCoverage(r.data).coverage).toBeGreaterThan(0.01);
  });

  test.each(all.filter((f) => !/\.(stl|obj)$/i.test(f)).map((f) => [path.basename(f), f]))('%s: normalised metadata', async (name, file) => {
    const m = await readMetadata(file);
    expect(m).toMatchObject(EXPECTED[name] ?? {});
    expect(m.slicer).not.toBeNull();
  });

  test('every BGCode G-code block: CRC-checked, the fast heatshrink decoder matches heatshrink-ts byte for byte', async () => {
    for (const file of list('bgcode')) {
      const f = await readBgcode(file, { gcode: 'verify' });
      expect(f.gcode.verified).toBe(true);
      expect(f.gcode.compressions).toEqual([3]);
      expect(f.gcode.encodings).toEqual([2]);
      const buf = readFileSync(file);
      for (const b of f.blocks.filter((x) => x.type === 1)) {
        const start = b.offset + 12 + 2;
        const data = buf.subarray(start, start + b.compressedSize);
        const fast = heatshrinkDecode(data, 12, 4, b.uncompressedSize);
        expect(fast.equals(heatshrinkDecodeReference(data, 12, 4))).toBe(true);
      }
    }
  });

  test('the 2.8.1 BGCode decodes (heatshrink + MeatPack) to the same G-code as its ASCII twin', async () => {
    const bg = fixture('bgcode', 'prusaslicer-2.8.1_mk4s_mini-cube_hs12-meatpack_qoi.bgcode');
    const ascii = fixture('gcode', 'prusaslicer-2.8.1_mk4s_mini-cube_qoi-thumbs.gcode');
    if (!existsSync(bg) || !existsSync(ascii)) return;
    const decoded = (await readBgcode(bg, { gcode: 'decode' })).gcode.text!;
    // The ASCII file also carries the metadata and thumbnails the BGCode keeps in blocks: compare G-code lines.
    const code = (text: string) => text.split('\n').filter((l) => l.trim() && !l.startsWith(';'));
    expect(code(decoded)).toEqual(code(readFileSync(ascii, 'latin1')));
    expect(code(decoded).length).toBeGreaterThan(2000);
    // And the analyzer sees the same print start in both.
    const a = await analyzeGcode(Buffer.from(decoded, 'latin1'));
    expect(a).toMatchObject({ method: 'marker', marker: ';LAYER_CHANGE' });
    expect((await analyzeGcode(ascii)).marker).toBe(';LAYER_CHANGE');
  });

  test('G-code thumbnails: declared base64 lengths match, QOI thumbnails decode', async () => {
    for (const file of list('gcode')) {
      const r = await readGcodeMetadata(file);
      for (const t of r.thumbnails) expect(t.base64Length).toBe(t.declaredLength);
      expect(r.stats.thumbnailsSkipped).toBe(0);
    }
  });

  test('3MF: the Bambu project lists its four plates and each plate has its own cover', async () => {
    const file = fixture('3mf', 'bambustudio-02.01.00.59_4-plate_project.3mf');
    if (!existsSync(file)) return;
    const info = await read3mf(file);
    expect(info.plates).toEqual([1, 2, 3, 4]);
    expect(info.slicedPlates).toEqual([]);
    for (const plate of [1, 2, 3, 4]) expect((await extractThumbnail(file, '.3mf', { plate, fallback: false })).source).toBe(`Metadata/plate_${plate}.png`);
  });

  test('models: the binary STL with a COLOR= header and the ASCII STL parse to their triangle counts', () => {
    const bin = fixture('models', 'prusa-logo_binary.stl');
    const asc = fixture('models', '20mmbox_ascii.stl');
    if (existsSync(bin)) expect(parseStl(readFileSync(bin))).toMatchObject({ format: 'stl-binary', triangleCount: 614 });
    if (existsSync(asc)) expect(parseStl(readFileSync(asc))).toMatchObject({ format: 'stl-ascii', triangleCount: 12, max: [20, 20, 20] });
  });
});
