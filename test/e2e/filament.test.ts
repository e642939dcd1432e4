/**
 * Filament tracking over real simulators (MQTT + FTPS): an RFID spool is
 * created and put in its slot from the AMS report alone; a queued 3-colour
 * print takes each filament's grams off the spool of the tray it printed
 * from; a failed print takes its progress's share; the queue waits on a
 * printer whose spool is too light, naming the grams, and a printer with
 * enough takes the print.
 */
import { bambu3mf, prusaGcode } from '../../service/simulators/seed-files';
import { control, until } from '../helpers/farm';
import { startService, type Harness } from '../helpers/service';
import { connectWs } from '../helpers/ws';
import { addPrinters, bambuSim, itemUntil, prusaSim, queueServiceOptions, upload, type SimPrinter } from './queue-helpers';

const TAG_RED = 'A1'.repeat(16);
const round2 = (n: number) => Math.round(n * 100) / 100;

describe('filament: spools over the simulators', () => {
  let printers: SimPrinter[] = [];
  let h: Harness;
  const spool = async (id: number) => (await h.get(`/api/v1/spools/${id}`)).body;
  const jobOf = async (itemId: string) => {
    const item = await itemUntil(h, itemId, (i) => i.dispatches.some((d: { job_id: number | null }) => d.job_id !== null), 'the job of the copy');
    return item.dispatches.find((d: { job_id: number | null }) => d.job_id !== null).job_id as number;
  };
  const usageOf = (jobId: number, slots: number) =>
    until(async () => {
      const job = (await h.get(`/api/v1/jobs/${jobId}`)).body;
      // The job's totals are written just after its usage rows (a statement apart): both are waited for.
      return job.filament_usage.length === slots && job.material_info.actual_usage !== null ? job : null;
    }, `the usage of job ${jobId}`, 20_000);

  beforeAll(async () => {
    printers = [await bambuSim('x1c-a', 'X1C #01', 'X1C', 5), await bambuSim('x1c-b', 'X1C #02', 'X1C', 40), await prusaSim('mk4s-a', 'MK4S #01', 'MK4S', 5)];
    for (const p of printers) p.body.plate_auto_clear = true;
    // Screen starts right after queued prints: no one-new-job-a-minute limit here.
    h = await startService({ ...queueServiceOptions, jobTracking: { minIntervalMs: 0 } });
    await addPrinters(h, printers);
  });
  afterAll(async () => {
    await h?.close();
    await Promise.all(printers.map((p) => p.close()));
  });

  test('an RFID spool in the AMS becomes a spool in its slot from the report alone', async () => {
    const found = await until(async () => {
      const list = (await h.get('/api/v1/spools?printer_id=x1c-a')).body.spools;
      return list.length === 1 ? list[0] : null;
    }, 'the RFID spool of x1c-a');
    expect(found).toMatchObject({ material: 'PLA', color: '#FFFFFF', brand: 'Bambu Lab', printer_id: 'x1c-a', slot: 0, rfid_uuid: expect.stringMatching(/^[0-9A-F]{32}$/), initial_weight_g: 1000, remaining_weight_g: 1000 });
    const printer = (await h.get('/api/v1/printers/x1c-a')).body;
    expect(printer.materials[0]).toMatchObject({ slot: 0, spool_id: found.id, remaining_weight_g: 1000 });
  });

  test('a queued 3-colour print takes each filament from the spool of its tray', async () => {
    await control(printers[0].control, 'materials', {
      materials: [
        { slot: 0, type: 'PLA', color: '#FF0000', tray_uuid: TAG_RED, remain: 50 },
        { slot: 1, type: 'PLA', color: '#00FF00' },
        { slot: 2, type: 'PLA', color: '#0000FF' },
      ],
    });
    const red = await until(async () => (await h.get('/api/v1/spools?printer_id=x1c-a')).body.spools.find((s: { rfid_uuid: string }) => s.rfid_uuid === TAG_RED), 'the red RFID spool');
    // The AMS says 50 % of a 1000 g spool; the white spool left slot 0.
    expect(red).toMatchObject({ slot: 0, remaining_weight_g: 500, color: '#FF0000' });
    const green = (await h.post('/api/v1/spools', { material: 'PLA', color: '#00FF00', initial_weight_g: 1000, remaining_weight_g: 400, cost_per_kg: 20 })).body;
    const blue = (await h.post('/api/v1/spools', { material: 'PLA', color: '#0000FF', remaining_weight_g: 300 })).body;
    await h.put('/api/v1/printers/x1c-a/slots/1', { spool_id: green.id });
    await h.put('/api/v1/printers/x1c-a/slots/2', { spool_id: blue.id });

    const file = await upload(
      h,
      'Tricolour.gcode.3mf',
      bambu3mf({ model: 'X1C', filaments: [{ type: 'PLA', color: '#0000FF', grams: 3 }, { type: 'PLA', color: '#FF0000', grams: 12.5 }, { type: 'PLA', color: '#00FF00', grams: 7.25 }] }),
    );
    const { body } = await h.post('/api/v1/queue', { file_id: file, target: { printer_ids: ['x1c-a'] } });
    const jobId = await jobOf(body.id);
    await control(printers[0].control, 'finish');
    const job = await usageOf(jobId, 3);
    expect(job.filament_usage).toEqual([
      { spool_id: red.id, slot: 0, material: 'PLA', color: '#FF0000', grams: 12.5, cost: round2(12.5 * 0.025) },
      { spool_id: green.id, slot: 1, material: 'PLA', color: '#00FF00', grams: 7.25, cost: round2(7.25 * 0.02) },
      { spool_id: blue.id, slot: 2, material: 'PLA', color: '#0000FF', grams: 3, cost: round2(3 * 0.025) },
    ]);
    expect(job.material_info.actual_usage).toBe(22.75);
    expect(job.costs.material_cost).toBe(round2(round2(12.5 * 0.025) + round2(7.25 * 0.02) + round2(3 * 0.025)));
    expect((await spool(red.id)).remaining_weight_g).toBe(487.5);
    expect((await spool(green.id)).remaining_weight_g).toBe(392.75);
    expect((await spool(blue.id)).remaining_weight_g).toBe(297);
    const stats = (await h.get('/api/v1/statistics/filament')).body;
    expect(stats.per_material).toEqual(expect.arrayContaining([expect.objectContaining({ material: 'PLA', grams: 22.75 })]));
    expect(stats.per_spool).toEqual(expect.arrayContaining([expect.objectContaining({ spool_id: green.id, grams: 7.25 })]));
  });

  test('a print failed at 40 % takes 40 % of its grams', async () => {
    await control(printers[1].control, 'materials', { materials: [{ slot: 0, type: 'PLA', color: '#FFFFFF' }] });
    const white = (await h.post('/api/v1/spools', { material: 'PLA', color: '#FFFFFF', remaining_weight_g: 1000 })).body;
    await h.put('/api/v1/printers/x1c-b/slots/0', { spool_id: white.id });
    const file = await upload(h, 'Half.gcode.3mf', bambu3mf({ model: 'X1C', filaments: [{ type: 'PLA', color: '#FFFFFF', grams: 50 }] }));
    const { body } = await h.post('/api/v1/queue', { file_id: file, target: { printer_ids: ['x1c-b'] } });
    const jobId = await jobOf(body.id);
    await until(async () => ((await h.get(`/api/v1/jobs/${jobId}`)).body.progress >= 40 ? true : null), 'progress 40 %', 60_000);
    await control(printers[1].control, 'pause');
    await control(printers[1].control, 'fail');
    const job = await usageOf(jobId, 1);
    expect(job.status).toBe('failed');
    expect(job.progress).toBeGreaterThanOrEqual(40);
    expect(job.progress).toBeLessThan(100);
    const grams = round2((50 * job.progress) / 100);
    expect(job.filament_usage).toEqual([expect.objectContaining({ spool_id: white.id, slot: 0, grams })]);
    expect((await spool(white.id)).remaining_weight_g).toBe(round2(1000 - grams));
    // The failed copy would go back to the queue: the item is cancelled (and anything it started again stopped).
    await h.del(`/api/v1/queue/${body.id}`);
    await control(printers[1].control, 'cancel').catch(() => undefined);
    await until(async () => ((await h.get('/api/v1/printers/x1c-b')).body.current_job === null ? true : null), 'x1c-b free');
  }, 60_000);

  test('the queue waits on a printer whose spool is too light, naming the grams; a printer with enough takes the print', async () => {
    const green = (await h.get('/api/v1/spools?printer_id=x1c-a')).body.spools.find((s: { slot: number }) => s.slot === 1);
    await h.request('PATCH', `/api/v1/spools/${green.id}`, { remaining_weight_g: 80 });
    const file = await upload(h, 'Heavy.gcode.3mf', bambu3mf({ model: 'X1C', filaments: [{ type: 'PLA', color: '#00FF00', grams: 120 }] }));

    const waiting = (await h.post('/api/v1/queue', { file_id: file, target: { printer_ids: ['x1c-a'] } })).body;
    const reason = await itemUntil(h, waiting.id, (i) => i.waiting_reason !== null, 'a waiting reason');
    expect(reason).toMatchObject({ dispatches: [], waiting_reason: 'not enough PLA on X1C #01: 120 g needed, 80 g left' });

    // Without a target, the printer with enough filament (1000 g less the failed print's share on x1c-b) takes it.
    const other = (await h.post('/api/v1/queue', { file_id: file })).body;
    const started = await itemUntil(h, other.id, (i) => i.dispatches[0]?.state === 'printing', 'a dispatch printing');
    expect(started.dispatches[0].printer_id).toBe('x1c-b');
    await h.del(`/api/v1/queue/${other.id}`);
    await control(printers[1].control, 'cancel');

    // Enough loaded (grams corrected after weighing): the waiting item starts on x1c-a.
    await h.request('PATCH', `/api/v1/spools/${green.id}`, { remaining_weight_g: 500 });
    const now = await itemUntil(h, waiting.id, (i) => i.dispatches[0]?.state === 'printing', 'the waiting item printing');
    expect(now.dispatches[0].printer_id).toBe('x1c-a');
    await h.del(`/api/v1/queue/${waiting.id}`);
    await control(printers[0].control, 'cancel');
  }, 60_000);

  test('a print started on the printer\'s screen is charged to the tray it fed from', async () => {
    const red = (await h.get('/api/v1/spools?printer_id=x1c-a')).body.spools.find((x: { slot: number }) => x.slot === 0);
    const state = (await (await fetch(`${printers[0].control}/state`)).json()) as { files: string[] };
    const file = state.files.find((f) => f.endsWith('.3mf'))!;
    await control(printers[0].control, 'print', { file });
    const job = await until(async () => {
      const jobs = (await h.get('/api/v1/jobs?printer_id=x1c-a&status=printing')).body.jobs;
      return jobs.find((j: { queue_item_id: string | null }) => j.queue_item_id === null) ?? null;
    }, 'the job of the screen start', 20_000);
    await control(printers[0].control, 'finish');
    const done = await usageOf(job.id, 1);
    // The file's grams when the service knows them, else the drop of the AMS's percentage of the tag.
    const [use] = done.filament_usage;
    expect(use).toMatchObject({ spool_id: red.id, slot: 0 });
    expect(use.grams).toBeGreaterThan(0);
    expect((await spool(red.id)).remaining_weight_g).toBe(round2(red.remaining_weight_g - use.grams));
  }, 60_000);

  test('a PrusaLink print takes the G-code\'s grams off the spool assigned to slot 0', async () => {
    const spool = (await h.post('/api/v1/spools', { material: 'PLA', color: '#FFFFFF', remaining_weight_g: 750, cost_per_kg: 40 })).body;
    expect((await h.put('/api/v1/printers/mk4s-a/slots/0', { spool_id: spool.id })).status).toBe(200);
    const file = await upload(h, 'Cube_MK4S.gcode', prusaGcode({ model: 'MK4S', filaments: [{ type: 'PLA', color: '#FFFFFF', grams: 18.4 }] }));
    const { body } = await h.post('/api/v1/queue', { file_id: file, target: { printer_ids: ['mk4s-a'] } });
    const jobId = await jobOf(body.id);
    await control(printers[2].control, 'finish');
    const job = await usageOf(jobId, 1);
    expect(job.filament_usage).toEqual([{ spool_id: spool.id, slot: 0, material: 'PLA', color: '#FFFFFF', grams: 18.4, cost: round2(18.4 * 0.04) }]);
    expect((await h.get(`/api/v1/spools/${spool.id}`)).body.remaining_weight_g).toBe(731.6);

    // Printed again with no spool in the slot: the grams stay on the job, and an alert says so at once.
    const ws = await connectWs(h.base);
    try {
      expect((await h.del('/api/v1/printers/mk4s-a/slots/0')).status).toBe(200);
      const again = (await h.post('/api/v1/queue', { file_id: file, target: { printer_ids: ['mk4s-a'] } })).body;
      const second = await jobOf(again.id);
      await control(printers[2].control, 'finish');
      expect((await usageOf(second, 1)).filament_usage).toEqual([expect.objectContaining({ spool_id: null, slot: 0, grams: 18.4 })]);
      const alert = await ws.next((f) => f.type === 'system_alert' && f.data.job_id === second, 10_000);
      expect(alert.data).toMatchObject({ level: 'warning', printer_id: 'mk4s-a', message: expect.stringContaining('18.4 g from slot 0 with no spool assigned') });
    } finally {
      await ws.close();
    }
  }, 60_000);
});
