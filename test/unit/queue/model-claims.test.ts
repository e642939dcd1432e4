/**
 * Every place a file names its printer counts (issue 23): the firmware's
 * M862.3 check, printer_model, the plate's printer_model_id, printer_notes
 * keywords and the profile name; a file naming none prints only where it is
 * targeted; plates that don't fit a model's build volume don't go there.
 * Read from real PrusaSlicer files (../shared/fixtures) and made ones.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { checkPrinter, mismatchReason, type PrinterFacts } from '../../../service/queue/compatibility';
import { readFileFacts, type FileFacts } from '../../../service/queue/file-facts';
import { misfit } from '../../../service/queue/file-bounds';
import { modelClaim } from '../../../service/queue/model-claims';
import { modelInText, modelSpec } from '../../../service/queue/models';
import { prusaGcode } from '../../../service/simulators/seed-files';
import { detachProfile } from '../../helpers/bgcode-edit';

const FIXTURES = path.join(__dirname, '../../../../shared/fixtures');
const REAL_BGCODE = path.join(FIXTURES, 'bgcode/prusaslicer-2.8.1_mk4s_mini-cube_hs12-meatpack_qoi.bgcode');
const REAL_GCODE = path.join(FIXTURES, 'gcode/prusaslicer-2.8.1_mk4s_mini-cube_qoi-thumbs.gcode');
const REAL_MK3 = path.join(FIXTURES, 'gcode/prusaslicer-2.5.0_mk3smmu2s_png-thumb.gcode');
const withFixtures = fs.existsSync(FIXTURES) ? test : test.skip;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'queue-claims-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const write = (name: string, data: Buffer | string) => {
  const file = path.join(dir, name);
  fs.writeFileSync(file, data);
  return file;
};

const prusa = (id: string, model: string): PrinterFacts => ({ id, name: `${model} #${id}`, type: 'prusa_core', model, nozzle_diameter: 0.4, materials: null });
const none = { target: null, requirements: null };

describe('where a file names its printer', () => {
  test('strongest first: the firmware check, then printer_model, notes, profile name', () => {
    expect(modelClaim({ printer_model: 'MK4S' }, { model: 'COREONE', nozzle: null })).toMatchObject({ model: 'COREONE', source: 'firmware_check' });
    expect(modelClaim({ printer_model: '', printer_notes: 'keep these\\nPRINTER_VENDOR_PRUSA3D\\nPRINTER_MODEL_MK4S\\nPG' }, null)).toEqual({ model: 'MK4S', source: 'printer_notes', vendor_family: 'prusa_core' });
    expect(modelClaim({ printer_settings_id: 'Original Prusa MK4S 0.4 nozzle - Copy' }, null)).toMatchObject({ model: 'MK4S', source: 'printer_settings_id' });
    expect(modelClaim({ printer_settings_id: 'Farm printer 3' }, null)).toEqual({ model: null, source: null, vendor_family: null });
    expect(modelClaim({ printer_model: 'Bambu Lab X1 Carbon' }, null, 'N2S')).toMatchObject({ model: 'Bambu Lab A1', source: 'plate_printer_model_id' });
    expect(modelClaim({ printer_model_id: 'C12' }, null)).toMatchObject({ model: 'Bambu Lab P1S', source: 'printer_model_id' });
  });

  test('profile names: the longest known model wins, unknown names say nothing', () => {
    expect(modelInText('Original Prusa MK4S 0.4 nozzle')).toBe('MK4S');
    expect(modelInText('Original Prusa MK4 Input Shaper 0.4 nozzle')).toBe('MK4');
    expect(modelInText('Prusa CORE One HF0.4 nozzle')).toBe('Core One');
    expect(modelInText('Bambu Lab A1 mini 0.4 nozzle')).toBe('A1 mini');
    expect(modelInText('Bambu Lab X1 Carbon 0.4 nozzle')).toBe('X1C');
    expect(modelInText('My big printer')).toBeNull();
  });

  withFixtures('real PrusaSlicer 2.8.1 files: the M862.3/M862.1 checks are read from G-code and heatshrink/MeatPack BGCode', async () => {
    for (const file of [REAL_GCODE, REAL_BGCODE]) {
      const facts = await readFileFacts(file, path.basename(file));
      expect(facts).toMatchObject({ printer_model: 'MK4S', model_source: 'firmware_check', nozzle_diameter: 0.4, print_time_s: 221 });
      expect(facts.bounds).toEqual({ min_x: 118.75, min_y: 98.75, max_x: 131.25, max_y: 111.25, height: 6.2 });
    }
    // PrusaSlicer 2.5 MK3S MMU2S: M862.3 "MK3SMMU2S" outranks the notes' PRINTER_MODEL_MK3.
    expect(await readFileFacts(REAL_MK3, 'mk3.gcode')).toMatchObject({ printer_model: 'MK3SMMU2S', model_source: 'firmware_check' });
  });

  withFixtures('a detached-profile MK4S BGCode (empty printer_model) is still an MK4S file and never fits a Core One', async () => {
    const file = write('detached.bgcode', detachProfile(fs.readFileSync(REAL_BGCODE)));
    const facts = await readFileFacts(file, 'detached.bgcode');
    expect(facts).toMatchObject({ printer_model: 'MK4S', model_source: 'firmware_check' });
    expect(checkPrinter(facts, none, prusa('c1', 'Core One'))).toEqual({ ok: false, mismatch: { kind: 'model', reason: 'sliced for MK4S' } });
    expect(checkPrinter(facts, none, prusa('m1', 'MK4S'))).toEqual({ ok: true, ams_mapping: [] });
    const reason = mismatchReason(facts, [{ printer: prusa('c1', 'Core One'), mismatch: { kind: 'model', reason: 'sliced for MK4S' } }], 1);
    expect(reason).toBe('sliced for MK4S (its M862.3 model check); no MK4S in the farm');
  });

  test('a G-code with an empty printer_model names its model in printer_notes and printer_settings_id', async () => {
    const text = prusaGcode({ model: 'MK4S' }).toString().replace('; printer_model = MK4S', '; printer_model = \n; printer_notes = Do not remove\\nPRINTER_VENDOR_PRUSA3D\\nPRINTER_MODEL_COREONE\\n');
    const facts = await readFileFacts(write('notes.gcode', text), 'notes.gcode');
    expect(facts).toMatchObject({ printer_model: 'COREONE', model_source: 'printer_notes', vendor_family: 'prusa_core' });
    expect(checkPrinter(facts, none, prusa('m1', 'MK4S'))).toMatchObject({ ok: false, mismatch: { kind: 'model' } });
    expect(checkPrinter(facts, none, prusa('c1', 'Core One'))).toMatchObject({ ok: true });
  });
});

describe('a file that names no model', () => {
  const unnamed = async (): Promise<FileFacts> => {
    const text = prusaGcode().toString().replace('; printer_model = MK4S', '; printer_model = ');
    return readFileFacts(write('unnamed.gcode', text), 'unnamed.gcode');
  };

  test('prints nowhere untargeted, with a reason that says how to send it', async () => {
    const facts = await unnamed();
    expect(facts.printer_model).toBeNull();
    const r = checkPrinter(facts, none, prusa('m1', 'MK4S'));
    expect(r).toEqual({ ok: false, mismatch: { kind: 'unnamed', reason: 'the file names no printer model' } });
    expect(mismatchReason(facts, [{ printer: prusa('m1', 'MK4S'), mismatch: { kind: 'unnamed' as const, reason: 'the file names no printer model' } }], 1)).toBe(
      'the file names no printer model; it prints only on printers the item targets (target.printer_ids or target.models)',
    );
    // A family alone is still a guess (an MK4S file on a Core One): only printers or models count.
    expect(checkPrinter(facts, { target: { printer_type: 'prusa_core' }, requirements: null }, prusa('m1', 'MK4S'))).toMatchObject({ ok: false, mismatch: { kind: 'unnamed' } });
  });

  test('prints where the operator targets it', async () => {
    const facts = await unnamed();
    expect(checkPrinter(facts, { target: { printer_ids: ['m1'] }, requirements: null }, prusa('m1', 'MK4S'))).toEqual({ ok: true, ams_mapping: [] });
    expect(checkPrinter(facts, { target: { models: ['Core One'] }, requirements: null }, prusa('c1', 'COREONE'))).toEqual({ ok: true, ams_mapping: [] });
  });
});

describe('bed and height', () => {
  test('a plate beyond the model\'s build volume does not go there', () => {
    const mini = modelSpec('MINI')!;
    expect(mini).toMatchObject({ bed: { x: 180, y: 180 }, height: 180 });
    const big = { min_x: 10, min_y: 10, max_x: 240, max_y: 200, height: 50 };
    expect(misfit(big, mini.bed, mini.height)).toBe('the objects reach 240 x 200 mm, beyond its 180 x 180 mm bed');
    expect(misfit(big, modelSpec('MK4S')!.bed, modelSpec('MK4S')!.height)).toBeNull();
    expect(misfit({ ...big, max_x: 100, max_y: 100, height: 250 }, modelSpec('Core One')!.bed, 270)).toBeNull();
    expect(misfit({ ...big, max_x: 100, max_y: 100, height: 250 }, modelSpec('MK4S')!.bed, 220)).toBe('the objects are 250 mm high, more than its 220 mm');
    expect(misfit(null, mini.bed, mini.height)).toBeNull();
  });

  test('a targeted file that names no model is still checked against the printer\'s bed', async () => {
    const text = prusaGcode()
      .toString()
      .replace('; printer_model = MK4S', '; printer_model = \n; objects_info = {"objects":[{"name":"Big","polygon":[[20,20],[230,20],[230,190],[20,190]]}]}');
    const facts = await readFileFacts(write('big.gcode', text), 'big.gcode');
    const target = { target: { printer_ids: ['mini', 'm1'] }, requirements: null };
    expect(checkPrinter(facts, target, prusa('mini', 'MINI'))).toMatchObject({ ok: false, mismatch: { kind: 'size', reason: 'the objects reach 230 x 190 mm, beyond its 180 x 180 mm bed (MINI #mini)' } });
    expect(checkPrinter(facts, target, prusa('m1', 'MK4S'))).toMatchObject({ ok: true });
  });
});
