import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { extractThumbnail, previewFileType, readMetadata, sniffFileType, THUMBNAIL_PRIORITY } from '../../service/preview';
import { bgcodeMetadata, readBgcode } from '../../service/preview/bgcode';
import { readGcodeMetadata } from '../../service/preview/gcode-meta';
import { decodePng } from '../../service/preview/png';
import { bgcodeFile, curaStyleGcode, ini, seed, u16 } from './builders';

const bambu3mf = seed.threemf;
const prusaBgcode = seed.bgcode;
const prusaGcode = seed.gcode;
const cubeStl = seed.stl;

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'pf-preview-index-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('file types', () => {
  test('by extension or file name, case-insensitive', () => {
    expect(previewFileType('.3mf')).toBe('3mf');
    expect(previewFileType('Cube_PLA.gcode.3mf')).toBe('3mf');
    expect(previewFileType('gcode.3mf')).toBe('3mf');
    expect(previewFileType('.BGCODE')).toBe('bgcode');
    expect(previewFileType('part.gco')).toBe('gcode');
    expect(previewFileType('.g')).toBe('gcode');
    expect(previewFileType('gcode')).toBe('gcode');
    expect(previewFileType('benchy.STL')).toBe('stl');
    expect(previewFileType('.obj')).toBe('obj');
    expect(previewFileType('.step')).toBeNull();
    expect(THUMBNAIL_PRIORITY).toEqual({ '3mf': 1, bgcode: 1, stl: 2, obj: 2, gcode: 3 });
  });

  test('by content when the name says nothing', () => {
    expect(sniffFileType(bambu3mf())).toBe('3mf');
    expect(sniffFileType(prusaBgcode())).toBe('bgcode');
    const stl = cubeStl();
    expect(sniffFileType(stl, stl.length)).toBe('stl');
    expect(sniffFileType(Buffer.from('solid x\n facet normal 0 0 1\n'))).toBe('stl');
    expect(sniffFileType(Buffer.from('# made by hand\nv 0 0 0\n'))).toBe('obj');
    expect(sniffFileType(prusaGcode())).toBe('gcode');
    expect(sniffFileType(Buffer.from([0, 1, 2, 3]))).toBeNull();
  });
});

describe('extractThumbnail dispatches by type', () => {
  test('3MF, BGCode and G-code pictures are extracted; STL is generated; G-code without a picture is analysed', async () => {
    const stlPath = path.join(dir, 'cube.stl');
    writeFileSync(stlPath, cubeStl());
    const cases = [
      [bambu3mf(), '.gcode.3mf', 'extracted', 'Metadata/plate_1.png', 256],
      [prusaBgcode(), '.bgcode', 'extracted', 'bgcode thumbnail 313x173', 313],
      [prusaGcode(), '.gcode', 'extracted', 'thumbnail 313x173', 313],
      [stlPath, undefined, 'generated', 'mesh', 200],
      [Buffer.from(curaStyleGcode()), 'file.gcode', 'analyzed', 'toolpath', 200],
    ] as const;
    for (const [input, type, method, source, width] of cases) {
      const r = await extractThumbnail(input, type, { size: 200 });
      expect([method, r.method, r.source, r.width, r.error]).toEqual([method, method, source, width, undefined]);
      expect(decodePng(r.data).width).toBe(width);
    }
    const analysed = await extractThumbnail(Buffer.from(curaStyleGcode()), '.gcode', { size: 64 });
    expect(analysed.analysis).toMatchObject({ method: 'marker', marker: ';LAYER:0' });
  });

  test('a BGCode without thumbnails gets a toolpath preview from its decoded G-code', async () => {
    const gcode = curaStyleGcode({ layers: 5 });
    const buf = bgcodeFile([
      { type: 3, params: u16(0), data: ini({ printer_model: 'MK4S' }) },
      { type: 1, compression: 3, params: u16(0), data: Buffer.from(gcode) },
    ]);
    const r = await extractThumbnail(buf, '.bgcode', { size: 96 });
    expect(r).toMatchObject({ method: 'analyzed', source: 'toolpath', width: 96, analysis: { method: 'marker' } });
  });

  test('failures become a placeholder with the reason; fallback: false throws instead', async () => {
    const r = await extractThumbnail(Buffer.from('PK\u0003\u0004 broken'), '.3mf', { size: 128 });
    expect(r).toMatchObject({ method: 'placeholder', source: 'placeholder', width: 128, height: 128, error: { code: 'MALFORMED' } });
    expect(decodePng(r.data)).toMatchObject({ width: 128, height: 128 });
    await expect(extractThumbnail(Buffer.from('garbage'), '.stl', { fallback: false })).rejects.toMatchObject({ code: 'MALFORMED' });
    await expect(extractThumbnail(Buffer.from('x'), '.step', { fallback: false })).rejects.toMatchObject({ code: 'UNSUPPORTED' });
    await expect(extractThumbnail(Buffer.from([9, 9, 9]), undefined, { fallback: false })).rejects.toMatchObject({ code: 'UNSUPPORTED' });
    expect((await extractThumbnail(path.join(dir, 'missing.gcode'))).error).toMatchObject({ code: 'ERROR', message: expect.stringContaining('ENOENT') });
  });
});

describe('the simulator seed files read back with the values they were made with', () => {
  test('.gcode.3mf, .gcode, .bgcode', async () => {
    expect(await readMetadata(bambu3mf(), '.3mf')).toMatchObject({ estimated_print_time: 622, filament_used_g: 2.65, layer_count: 40, bed_temperature: 55, printer_model: 'Bambu Lab P1S' });
    const gc = await readGcodeMetadata(prusaGcode());
    expect(gc.metadata).toMatchObject({ estimated_print_time: 750, filament_used_g: 3.14, layer_height: 0.2, infill: 15, nozzle_temperature: 215, bed_temperature: 60, printer_model: 'MK4S', layer_count: 50, support_material: false });
    expect(gc.thumbnails).toHaveLength(2);
    const bg = await readBgcode(prusaBgcode(), { gcode: 'decode' });
    expect(bgcodeMetadata(bg)).toMatchObject({ printer_model: 'MK4S', estimated_print_time: 750, filament_used_g: 3.14, slicer: 'PrusaSlicer 2.8.1' });
    expect(bg.gcode.text).toContain(';LAYER_CHANGE');
  });
});

describe('readMetadata dispatches by type', () => {
  test('one shape for every format', async () => {
    const keys = ['bed_temperature', 'estimated_print_time', 'filament_used_g', 'infill', 'layer_count', 'layer_height', 'material_type', 'nozzle_temperature', 'printer_model', 'slicer', 'support_material'];
    const three = await readMetadata(bambu3mf(), '3mf');
    const bg = await readMetadata(prusaBgcode(), 'bgcode');
    const gc = await readMetadata(prusaGcode(), 'gcode');
    const stl = await readMetadata(cubeStl(), 'stl');
    for (const m of [three, bg, gc, stl]) expect(Object.keys(m).sort()).toEqual(keys);
    expect(three).toMatchObject({ estimated_print_time: 622, layer_count: 40, slicer: 'BambuStudio 02.01.00.59' });
    expect(bg).toMatchObject({ estimated_print_time: 750, layer_count: 50, printer_model: 'MK4S' });
    expect(gc).toMatchObject({ estimated_print_time: 750, layer_count: 50, printer_model: 'MK4S' });
    expect(Object.values(stl).every((v) => v === null)).toBe(true);
    expect((await readMetadata(prusaBgcode(), 'bgcode', { countLayers: false })).layer_count).toBeNull();
  });

  test('by path, sniffing the type from content when the name has none', async () => {
    const p = path.join(dir, 'noext');
    writeFileSync(p, prusaBgcode());
    expect((await readMetadata(p)).printer_model).toBe('MK4S');
    await expect(readMetadata(Buffer.from('PK\u0003\u0004'), '.3mf')).rejects.toMatchObject({ code: 'MALFORMED' });
  });
});
