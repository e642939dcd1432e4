/**
 * The model bug of issue 23 over real PrusaLink simulators: a real PrusaSlicer
 * MK4S BGCode whose printer profile was detached (empty printer_model; the
 * model only in the G-code's M862.3 check, printer_notes and the profile) never
 * starts on a Core One; a file that names no model waits with a reason until
 * the operator targets a printer.
 */
import fs from 'node:fs';
import path from 'node:path';
import { prusaGcode } from '../../service/simulators/seed-files';
import { detachProfile } from '../helpers/bgcode-edit';
import { control } from '../helpers/farm';
import { startService, type Harness } from '../helpers/service';
import { addPrinters, itemUntil, prusaSim, queueServiceOptions, simState, upload, type SimPrinter } from './queue-helpers';

const REAL_BGCODE = path.join(__dirname, '../../../shared/fixtures/bgcode/prusaslicer-2.8.1_mk4s_mini-cube_hs12-meatpack_qoi.bgcode');
const withFixtures = fs.existsSync(REAL_BGCODE) ? test : test.skip;
const printingOn = (i: Record<string, any>) => i.dispatches.filter((d: { state: string }) => d.state === 'printing').map((d: { printer_id: string }) => d.printer_id); // eslint-disable-line @typescript-eslint/no-explicit-any

describe('queue: a file goes only to the model it names', () => {
  let printers: SimPrinter[] = [];
  let h: Harness;
  beforeAll(async () => {
    printers = [await prusaSim('core-one-a', 'Core One #01', 'Core One'), await prusaSim('mk4s-a', 'MK4S #01', 'MK4S')];
    h = await startService(queueServiceOptions);
    await addPrinters(h, printers);
  });
  afterAll(async () => {
    await h?.close();
    await Promise.all(printers.map((p) => p.close()));
  });
  const [coreOne, mk4s] = [() => printers[0], () => printers[1]];

  withFixtures('a detached-profile MK4S BGCode never starts on a free Core One (skipped without ../shared/fixtures)', async () => {
    const file = await upload(h, 'mini-cube-detached.bgcode', detachProfile(fs.readFileSync(REAL_BGCODE)));
    const { body } = await h.post('/api/v1/queue', { file_id: file, copies: 2 });
    // The MK4S takes one copy; the second waits for the MK4S although the Core One is free.
    const waiting = await itemUntil(h, body.id, (i) => printingOn(i).length === 1 && i.waiting_reason !== null, 'one copy printing, one waiting');
    expect(printingOn(waiting)).toEqual(['mk4s-a']);
    expect(waiting).toMatchObject({ remaining: 1, waiting_reason: 'all compatible printers busy' });
    expect((await simState(mk4s())).last_start).toMatchObject({ file: expect.stringMatching(/mini-cube-detached\.bgcode$/) });
    await control(mk4s().control, 'finish');
    await itemUntil(h, body.id, (i) => i.waiting_reason === 'plate needs clearing on MK4S #01', 'the MK4S plate reason');
    expect((await simState(coreOne())).prints_started).toBe(0);
    await h.post('/api/v1/printers/mk4s-a/plate-cleared');
    await itemUntil(h, body.id, (i) => printingOn(i).length === 1 && i.completed === 1, 'the second copy printing');
    await control(mk4s().control, 'finish');
    const done = await itemUntil(h, body.id, (i) => i.status === 'completed', 'completed');
    expect(done.dispatches.map((d: { printer_id: string }) => d.printer_id)).toEqual(['mk4s-a', 'mk4s-a']);
    expect((await simState(coreOne())).prints_started).toBe(0);
    await h.post('/api/v1/printers/mk4s-a/plate-cleared');
  });

  test('a file naming no model waits with a reason; targeted at the Core One, it starts there', async () => {
    const unnamed = prusaGcode({ model: 'MK4S' }).toString().replace('; printer_model = MK4S', '; printer_model = ');
    const file = await upload(h, 'no-model.gcode', Buffer.from(unnamed));
    const { body } = await h.post('/api/v1/queue', { file_id: file });
    const waiting = await itemUntil(h, body.id, (i) => i.waiting_reason !== null, 'a waiting reason');
    expect(waiting).toMatchObject({
      status: 'queued',
      dispatches: [],
      waiting_reason: 'the file names no printer model; it prints only on printers the item targets (target.printer_ids or target.models)',
    });
    const before = (await simState(coreOne())).prints_started;
    expect((await h.request('PATCH', `/api/v1/queue/${body.id}`, { target: { printer_ids: ['core-one-a'] } })).status).toBe(200);
    const started = await itemUntil(h, body.id, (i) => printingOn(i).length === 1, 'the targeted copy printing');
    expect(printingOn(started)).toEqual(['core-one-a']);
    expect((await simState(coreOne())).prints_started).toBe(before + 1);
  });
});
