/**
 * Compatibility and tray mapping as pure functions: what a file says (read
 * from real-format files) against what a printer reports.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { amsMapping, checkPrinter, mismatchReason, type PrinterFacts } from '../../../service/queue/compatibility';
import { readFileFacts, type FileFacts } from '../../../service/queue/file-facts';
import { modelKey, sameModel, shortModel } from '../../../service/queue/models';
import { projectFileFields } from '../../../service/printers/bambu/project-file';
import { materialsOf } from '../../../service/printers/bambu/materials';
import { bambu3mf, prusaBgcode, prusaGcode } from '../../../service/simulators/seed-files';

const FIXTURES = path.join(__dirname, '../../../../shared/fixtures');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'queue-compat-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

function write(name: string, data: Buffer): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, data);
  return file;
}

const x1c = (over: Partial<PrinterFacts> = {}): PrinterFacts => ({
  id: 'x1c-01',
  name: 'X1C #01',
  type: 'bambu_lab',
  model: 'X1C',
  nozzle_diameter: 0.4,
  materials: [{ slot: 0, type: 'PLA', color: '#FFFFFF', remaining_percent: 80 }],
  ...over,
});

describe('models', () => {
  test('file and printer spellings of one model reduce to one key', () => {
    expect(modelKey('Bambu Lab X1 Carbon')).toBe('x1c');
    expect(modelKey('BL-P001')).toBe('x1c');
    expect(modelKey('X1C')).toBe('x1c');
    expect(sameModel('Bambu Lab A1', 'A1')).toBe(true);
    expect(sameModel('Bambu Lab A1 mini', 'A1')).toBe(false);
    expect(sameModel('COREONE', 'Core One')).toBe(true);
    expect(sameModel('MK4IS', 'MK4')).toBe(true);
    expect(sameModel('MK4S', 'MK4')).toBe(false);
    expect(sameModel(null, 'MK4')).toBe(false);
    expect(shortModel('Bambu Lab A1')).toBe('A1');
  });
});

describe('file facts', () => {
  test('a Bambu 3MF: model, nozzle and the plate\'s filaments from slice_info and project_settings', async () => {
    const file = write('two.gcode.3mf', bambu3mf({ model: 'A1', filaments: [{ type: 'PLA', color: '#FF0000' }, { type: 'PETG', color: '#000000' }] }));
    const facts = await readFileFacts(file, 'two.gcode.3mf', 1);
    expect(facts).toEqual({
      format: '3mf',
      printer_model: 'Bambu Lab A1',
      model_source: 'plate_printer_model_id',
      vendor_family: null,
      nozzle_diameter: 0.4,
      filament_count: 2,
      filaments: [
        { id: 1, type: 'PLA', color: '#FF0000' },
        { id: 2, type: 'PETG', color: '#000000' },
      ],
      sliced_plates: [1],
      bounds: null,
      print_time_s: 622,
    });
  });

  test('PrusaSlicer G-code and BGCode name their printer_model and filament', async () => {
    for (const [name, data] of [['cube.gcode', prusaGcode({ model: 'Core One' })], ['cube.bgcode', prusaBgcode({ model: 'Core One' })]] as const) {
      const facts = await readFileFacts(write(name, data), name);
      expect(facts).toMatchObject({ printer_model: 'COREONE', nozzle_diameter: 0.4, filaments: [{ id: 1, type: 'PLA', color: '#FFFFFF' }] });
    }
  });

  const real = (sub: string) => path.join(FIXTURES, sub);
  (fs.existsSync(FIXTURES) ? test : test.skip)('real slicer files: PrusaSlicer 2.8.1 MK4S G-code and BGCode (skipped without ../shared/fixtures)', async () => {
    for (const name of ['gcode/prusaslicer-2.8.1_mk4s_mini-cube_qoi-thumbs.gcode', 'bgcode/prusaslicer-2.8.1_mk4s_mini-cube_hs12-meatpack_qoi.bgcode']) {
      const facts = await readFileFacts(real(name), name);
      expect(facts).toMatchObject({ printer_model: 'MK4S', nozzle_diameter: 0.4, filaments: [expect.objectContaining({ id: 1, type: 'PLA' })] });
    }
  });
});

describe('compatibility', () => {
  const facts = (over: Partial<FileFacts> = {}): FileFacts => ({
    format: '3mf',
    printer_model: 'Bambu Lab X1 Carbon',
    model_source: 'printer_model',
    vendor_family: null,
    nozzle_diameter: 0.4,
    filament_count: 1,
    filaments: [{ id: 1, type: 'PLA', color: '#FFFFFF' }],
    sliced_plates: [1],
    bounds: null,
    print_time_s: null,
    ...over,
  });
  const none = { target: null, requirements: null };

  test('the model the file was sliced for decides; target narrows further', () => {
    expect(checkPrinter(facts(), none, x1c())).toEqual({ ok: true, ams_mapping: [0] });
    expect(checkPrinter(facts({ printer_model: 'Bambu Lab A1' }), none, x1c())).toEqual({ ok: false, mismatch: { kind: 'model', reason: 'sliced for Bambu Lab A1' } });
    expect(checkPrinter(facts(), { target: { printer_ids: ['other'] }, requirements: null }, x1c())).toMatchObject({ ok: false, mismatch: { kind: 'target' } });
    expect(checkPrinter(facts(), { target: { printer_type: 'prusa_core' }, requirements: null }, x1c())).toMatchObject({ ok: false, mismatch: { kind: 'target' } });
    expect(checkPrinter(facts({ format: 'gcode' }), none, x1c())).toMatchObject({ ok: false, mismatch: { kind: 'format' } });
    expect(checkPrinter(facts({ nozzle_diameter: 0.6 }), none, x1c())).toMatchObject({ ok: false, mismatch: { kind: 'nozzle', reason: 'X1C #01 has a 0.4 mm nozzle, the file needs 0.6 mm' } });
  });

  test('materials: a needed filament must be loaded; a requirement replaces the file\'s type', () => {
    expect(checkPrinter(facts(), { target: null, requirements: { material: 'PETG' } }, x1c())).toEqual({ ok: false, mismatch: { kind: 'material', reason: 'PETG not loaded on X1C #01' } });
    const petg = x1c({ materials: [{ slot: 0, type: 'PLA', color: '#FFFFFF', remaining_percent: null }, { slot: 3, type: 'PETG', color: '#000000', remaining_percent: null }] });
    expect(checkPrinter(facts(), { target: null, requirements: { material: 'PETG' } }, petg)).toEqual({ ok: true, ams_mapping: [3] });
    expect(checkPrinter(facts(), { target: null, requirements: { material: 'PETG', color: '#FF0000' } }, petg)).toMatchObject({ ok: false, mismatch: { kind: 'material', reason: 'PETG #FF0000 not loaded on X1C #01' } });
    // A printer that does not report its filament can't satisfy a requirement, but prints the file's own filament.
    const prusa: PrinterFacts = { id: 'mk4', name: 'MK4S #01', type: 'prusa_core', model: 'MK4S', nozzle_diameter: 0.4, materials: null };
    const g = facts({ format: 'gcode', printer_model: 'MK4S' });
    expect(checkPrinter(g, none, prusa)).toEqual({ ok: true, ams_mapping: [] });
    expect(checkPrinter(g, { target: null, requirements: { material: 'PLA' } }, prusa)).toMatchObject({ ok: false, mismatch: { kind: 'material' } });
  });

  test('ams_mapping: per printer, same colour preferred, -1 for unused filaments and the external spool', () => {
    const f = facts({
      filament_count: 3,
      filaments: [
        { id: 1, type: 'PLA', color: '#000000' },
        { id: 3, type: 'PETG', color: '#FFFFFF' },
      ],
    });
    const trays = [
      { slot: 0, type: 'PLA', color: '#FFFFFF', remaining_percent: null },
      { slot: 1, type: 'PLA', color: '#000000', remaining_percent: null },
      { slot: 254, type: 'PETG', color: '#FFFFFF', remaining_percent: null },
    ];
    expect(amsMapping(f, trays, null)).toEqual({ mapping: [1, -1, -1], missing: null });
    // The same file on another printer gets that printer's trays.
    const other = [
      { slot: 5, type: 'PETG', color: '#FFFFFF', remaining_percent: null },
      { slot: 6, type: 'PLA', color: '#000000', remaining_percent: null },
    ];
    expect(amsMapping(f, other, null)).toEqual({ mapping: [6, -1, 5], missing: null });
    expect(amsMapping(f, [trays[0]], null)).toMatchObject({ missing: 'PETG' });
  });

  test('waiting reasons name the model as people know it, else the printers', () => {
    const a1 = facts({ printer_model: 'Bambu Lab A1' });
    const printer = x1c();
    expect(mismatchReason(a1, [{ printer, mismatch: { kind: 'model', reason: 'sliced for Bambu Lab A1' } }], 1)).toBe('sliced for Bambu Lab A1; no A1 in the farm');
    expect(
      mismatchReason(
        a1,
        [
          { printer, mismatch: { kind: 'model', reason: 'x' } },
          { printer, mismatch: { kind: 'material', reason: 'PETG not loaded on X1C #02' } },
        ],
        2,
      ),
    ).toBe('PETG not loaded on X1C #02');
    expect(mismatchReason(a1, [], 0)).toBe('no printers in the farm');
  });
});

describe('Bambu start command and reports', () => {
  test('project_file carries fresh decimal ids, JSON booleans and this printer\'s mapping', () => {
    const fields = projectFileFields(
      { localPath: '/x', remoteName: 'Cube_A.gcode.3mf', plate: 2, taskId: '123456', amsMapping: [2, -1], options: { bed_leveling: true, timelapse: false, flow_cali: false, vibration_cali: true } },
      'X1C',
    );
    expect(fields).toMatchObject({
      param: 'Metadata/plate_2.gcode',
      url: 'file:///sdcard/Cube_A.gcode.3mf',
      file: 'Cube_A.gcode.3mf',
      subtask_name: 'Cube_A',
      task_id: '123456',
      subtask_id: '123456',
      project_id: '123456',
      bed_leveling: true,
      auto_bed_leveling: 1,
      timelapse: false,
      vibration_cali: true,
      use_ams: true,
      ams_mapping: [2, -1],
      ams_mapping2: [{ ams_id: 0, slot_id: 2 }, { ams_id: 255, slot_id: 255 }],
    });
    expect(projectFileFields({ localPath: '/x', remoteName: 'a.3mf', plate: 1, taskId: '9', amsMapping: [-1], options: { bed_leveling: false, timelapse: false, flow_cali: false, vibration_cali: false } }, 'H2D')).toMatchObject({
      url: 'ftp:///a.3mf',
      use_ams: false,
    });
  });

  test('AMS trays and the external spool become materials', () => {
    const materials = materialsOf({
      ams: { ams: [{ id: '1', tray: [{ id: '0', tray_type: 'PETG', tray_color: '000000FF', remain: 40 }, { id: '1' }] }] },
      vt_tray: { id: '254', tray_type: 'TPU', tray_color: 'FF0000FF', remain: -1 },
    });
    expect(materials).toEqual([
      { slot: 4, type: 'PETG', color: '#000000', remaining_percent: 40 },
      { slot: 254, type: 'TPU', color: '#FF0000', remaining_percent: null },
    ]);
  });
});
