/**
 * Grams per filament from real slicer files (the shared fixtures: PrusaSlicer
 * G-code and BGCode, an MMU2S file with one value per extruder) and from the
 * project's own Bambu 3MF and G-code builders; and what the AMS report says of
 * RFID spools and the tray in use.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { readFilamentGrams } from '../../../service/filament/file-grams';
import { activeSlotOf, materialsOf } from '../../../service/printers/bambu/materials';
import { bambu3mf, prusaGcode } from '../../../service/simulators/seed-files';

const FIXTURES = path.join(__dirname, '../../../../shared/fixtures');
const fixture = (p: string) => path.join(FIXTURES, p);
const haveFixtures = fs.existsSync(FIXTURES);
if (!haveFixtures) process.stderr.write(`note: file-grams fixture tests skipped: ${FIXTURES} is absent\n`);
const withFixtures = haveFixtures ? test : test.skip;

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

function temp(name: string, data: Buffer): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'grams-'));
  dirs.push(dir);
  const file = path.join(dir, name);
  fs.writeFileSync(file, data);
  return file;
}

describe('grams per filament from print files', () => {
  withFixtures('PrusaSlicer MMU2S G-code: one figure per extruder, unused extruders left out', async () => {
    const file = fixture('gcode/prusaslicer-2.5.0_mk3smmu2s_png-thumb.gcode');
    expect(await readFilamentGrams(file, path.basename(file))).toEqual([
      { filament: 1, type: 'PLA', color: expect.anything(), grams: 1.2 },
      { filament: 3, type: 'PLA', color: expect.anything(), grams: 0.29 },
    ]);
  });

  withFixtures('PrusaSlicer 2.8.1 G-code and its BGCode twin', async () => {
    const g = fixture('gcode/prusaslicer-2.8.1_mk4s_mini-cube_qoi-thumbs.gcode');
    expect(await readFilamentGrams(g, path.basename(g))).toEqual([expect.objectContaining({ filament: 1, type: 'PLA', grams: 0.75 })]);
    const b = fixture('bgcode/prusaslicer-2.8.1_mk4s_mini-cube_hs12-meatpack_qoi.bgcode');
    expect(await readFilamentGrams(b, path.basename(b))).toEqual([expect.objectContaining({ filament: 1, type: 'PLA', grams: 0.75 })]);
  });

  withFixtures('an unsliced Bambu project states no grams', async () => {
    const f = fixture('3mf/bambustudio-02.01.00.59_4-plate_project.3mf');
    expect(await readFilamentGrams(f, path.basename(f))).toEqual([]);
  });

  test('a sliced 3MF: used_g of each filament of the plate, by its 1-based id', async () => {
    const file = temp('x.gcode.3mf', bambu3mf({ model: 'X1C', filaments: [{ type: 'PLA', color: '#FF0000', grams: 12.5 }, { type: 'PETG', color: '#00FF00', grams: 3 }] }));
    expect(await readFilamentGrams(file, 'x.gcode.3mf')).toEqual([
      { filament: 1, type: 'PLA', color: '#FF0000', grams: 12.5 },
      { filament: 2, type: 'PETG', color: '#00FF00', grams: 3 },
    ]);
  });

  test('a two-tool G-code', async () => {
    const file = temp('x.gcode', prusaGcode({ model: 'XL', filaments: [{ type: 'PLA', color: '#FFFFFF', grams: 4 }, { type: 'PETG', color: '#000000', grams: 1.5 }] }));
    expect(await readFilamentGrams(file, 'x.gcode')).toEqual([
      { filament: 1, type: 'PLA', color: '#FFFFFF', grams: 4 },
      { filament: 2, type: 'PETG', color: '#000000', grams: 1.5 },
    ]);
  });
});

describe('the AMS report: RFID spools and the tray in use', () => {
  test('tray_uuid all zeros is no tag; tray_weight and tray_now are read', () => {
    const print = {
      ams: {
        tray_now: '1',
        ams: [
          {
            id: '0',
            tray: [
              { id: '0', tray_type: 'PLA', tray_color: 'FF0000FF', remain: 80, tray_uuid: 'a1b2c3d4e5f60718293a4b5c6d7e8f90', tray_weight: '1000' },
              { id: '1', tray_type: 'PETG', tray_color: '000000FF', remain: -1, tray_uuid: '00000000000000000000000000000000', tray_weight: '0' },
            ],
          },
        ],
      },
    };
    expect(materialsOf(print)).toEqual([
      { slot: 0, type: 'PLA', color: '#FF0000', remaining_percent: 80, tray_uuid: 'A1B2C3D4E5F60718293A4B5C6D7E8F90', tray_weight_g: 1000 },
      { slot: 1, type: 'PETG', color: '#000000', remaining_percent: null, tray_uuid: null, tray_weight_g: null },
    ]);
    expect(activeSlotOf(print)).toBe(1);
    expect(activeSlotOf({ ams: { tray_now: '255' } })).toBeNull();
    expect(activeSlotOf({ ams: { tray_now: '254' } })).toBe(254);
    expect(activeSlotOf({ ams: { tray_now: 'x' } })).toBeNull();
  });
});
