/**
 * The Klipper family in the queue's compatibility check (pure functions):
 * .gcode only, the model from the G-code's slicer keys against the printer's
 * configured model (free text), a file naming no model only where targeted.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { checkPrinter, mismatchReason, type PrinterFacts } from '../../../service/queue/compatibility';
import { readFileFacts } from '../../../service/queue/file-facts';
import { looselySameModel } from '../../../service/queue/models';
import { PRINTER_FAMILIES } from '../../../service/queue/printer-families';
import { klipperGcode, prusaBgcode, prusaGcode } from '../../../service/simulators/seed-files';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'klipper-compat-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
const facts = async (name: string, data: Buffer) => {
  fs.writeFileSync(path.join(dir, name), data);
  return readFileFacts(path.join(dir, name), name, 1);
};

const voron = (over: Partial<PrinterFacts> = {}): PrinterFacts => ({ id: 'voron-01', name: 'Voron #01', type: 'klipper', model: 'Voron 2.4 350', nozzle_diameter: 0.4, materials: null, ...over });
const none = { target: null, requirements: null };

describe('Klipper compatibility', () => {
  test('a G-code names its printer profile (printer_settings_id) beside printer_model', async () => {
    const f = await facts('v.gcode', klipperGcode('Voron 2.4 350'));
    expect(f).toMatchObject({ format: 'gcode', printer_model: 'Voron 2.4 350', printer_profile: 'Voron 2.4 350' });
  });

  test('the configured model in free text matches the slicer keys, loosely; another model does not', async () => {
    expect(looselySameModel('Voron 2.4 350', 'voron 2.4 350')).toBe(true);
    expect(looselySameModel('Voron 2.4 350 Afterburner 0.4 nozzle', 'Voron 2.4 350')).toBe(true);
    expect(looselySameModel('Voron_v2_350_afterburner', 'Voron 2.4 300')).toBe(false);
    expect(looselySameModel('SV08', 'Sovol SV08')).toBe(false); // too short to be found inside another name
    const f = await facts('v.gcode', klipperGcode('Voron 2.4 350'));
    expect(checkPrinter(f, none, voron())).toEqual({ ok: true, ams_mapping: [] });
    expect(checkPrinter(f, none, voron({ model: 'Sovol SV08' }))).toEqual({ ok: false, mismatch: { kind: 'model', reason: 'sliced for Voron 2.4 350' } });
    expect(checkPrinter(f, none, voron({ model: null }))).toMatchObject({ ok: false, mismatch: { kind: 'model' } });
  });

  test('only .gcode: a BGCode or a 3MF is refused in words', async () => {
    const b = await facts('p.bgcode', prusaBgcode({ model: 'MK4S' }));
    expect(checkPrinter(b, none, voron())).toEqual({ ok: false, mismatch: { kind: 'format', reason: 'Klipper printers print .gcode files' } });
    expect(PRINTER_FAMILIES.klipper.formats).toEqual(['gcode']);
  });

  test('a PrusaSlicer G-code for an MK4S is not for a Voron, and a PrusaLink printer still takes it', async () => {
    const f = await facts('mk4s.gcode', prusaGcode({ model: 'MK4S' }));
    expect(checkPrinter(f, none, voron())).toMatchObject({ ok: false, mismatch: { kind: 'model' } });
    expect(checkPrinter(f, none, { id: 'mk4s', name: 'MK4S', type: 'prusa_core', model: 'MK4S', nozzle_diameter: 0.4, materials: null })).toEqual({ ok: true, ams_mapping: [] });
  });

  test('a G-code that names no model goes to a Klipper printer only when the item targets it (by id, type or model)', async () => {
    const f = await facts('bare.gcode', Buffer.from('G28\nG1 X10 Y10\n'));
    const refused = checkPrinter(f, none, voron());
    expect(refused).toEqual({ ok: false, mismatch: { kind: 'model', reason: 'the file names no printer model: it goes only to a printer the item targets' } });
    expect(checkPrinter(f, { target: { printer_ids: ['voron-01'] }, requirements: null }, voron())).toMatchObject({ ok: true });
    expect(checkPrinter(f, { target: { printer_type: 'klipper' }, requirements: null }, voron())).toMatchObject({ ok: true });
    expect(checkPrinter(f, { target: { models: ['Voron 2.4 350'] }, requirements: null }, voron())).toMatchObject({ ok: true });
    // A PrusaLink printer (reported model) takes an unnamed G-code only when targeted by id or model, not by type.
    const mk4s: PrinterFacts = { id: 'mk4s', name: 'MK4S', type: 'prusa_core', model: 'MK4S', nozzle_diameter: 0.4, materials: null };
    expect(checkPrinter(f, none, mk4s)).toMatchObject({ ok: false, mismatch: { kind: 'unnamed' } });
    expect(checkPrinter(f, { target: { printer_type: 'prusa_core' }, requirements: null }, mk4s)).toMatchObject({ ok: false, mismatch: { kind: 'unnamed' } });
    expect(checkPrinter(f, { target: { printer_ids: ['mk4s'] }, requirements: null }, mk4s)).toMatchObject({ ok: true });
    if (refused.ok) throw new Error('expected a refusal');
    expect(mismatchReason(f, [{ printer: voron(), mismatch: refused.mismatch }], 1)).toBe('the file names no printer model: it goes only to a printer the item targets');
  });
});
