/**
 * The queue hears a printer's temperatures only while they can matter to it (service/queue/dispatcher.ts,
 * followsTelemetry): under a heat-up limit, a print heating up at the printer (not the queue's) holds the
 * next start, and the report that only says its bed reached temperature lets it go, at once, not at the
 * next safety pass 30 s later. The heating printer is a hand-driven one (its reports are written here);
 * the free one is a simulated X1C that takes the upload.
 */
import { bambu3mf } from '../../service/simulators/seed-files';
import { until } from '../helpers/farm';
import { startHostileBambu, type HostileBambu } from '../helpers/hostile-bambu';
import { startService, type Harness } from '../helpers/service';
import { addPrinters, bambuSim, item, itemUntil, queueServiceOptions, upload, type SimPrinter } from './queue-helpers';

describe('queue: a heat-up that ends with a report of temperatures alone', () => {
  let h: Harness;
  let free: SimPrinter;
  let heating: HostileBambu;

  beforeAll(async () => {
    free = await bambuSim('x1c-free', 'X1C free', 'X1C', 50);
    heating = await startHostileBambu('p1s-hand', '01P00A000000042');
    // The hand-driven printer reports only when told to: a short watchdog would take it offline (and so wake the queue).
    h = await startService({ ...queueServiceOptions, fleet: { ...queueServiceOptions.fleet, watchdogMs: 60_000 } });
    expect((await h.post('/api/v1/printers', heating.printer)).status).toBe(201);
    await until(async () => (await h.get('/api/v1/printers/p1s-hand')).body?.connection_status === 'connected', 'hand-driven printer connected');
    // The monitoring driver's first full report (the pushall answer, idle): a report sent before it would be held
    // and then replaced by it, and the printer's view may show the connection test's driver, whose link is gone.
    await until(async () => h.service.context.fleet.stateOf('p1s-hand') !== undefined, 'the first full report');
    await addPrinters(h, [free]);
    expect((await h.put('/api/v1/settings', { queue_max_concurrent_heatups: 1 })).status).toBe(200);
  });
  afterAll(async () => {
    await h?.close();
    await heating?.close();
    await free?.close();
  });

  test('the start waits for the heat-up and goes as soon as the bed is warm', async () => {
    // A print started at the printer, its bed 30 °C short of its target: heating, as the service counts it.
    await heating.report({ gcode_state: 'RUNNING', subtask_name: 'Hand start', gcode_file: '/sdcard/hand.gcode', mc_percent: 1, mc_remaining_time: 90, nozzle_temper: 220, nozzle_target_temper: 220, bed_temper: 30, bed_target_temper: 60 });
    await until(async () => (await h.get('/api/v1/printers/p1s-hand')).body?.status === 'printing', 'hand-driven printer printing');
    const file = await upload(h, 'Warm.gcode.3mf', bambu3mf({ model: 'X1C' }));
    const { body } = await h.post('/api/v1/queue', { file_id: file, copies: 1 });
    await itemUntil(h, body.id, (i) => typeof i.waiting_reason === 'string' && i.waiting_reason.startsWith('waiting for heat-up'), 'held by the heat-up');
    expect((await item(h, body.id)).waiting_reason).toBe('waiting for heat-up: 1 printer heating (Hostile p1s-hand); queue_max_concurrent_heatups is 1');
    expect((await item(h, body.id)).dispatches).toEqual([]);

    // Only a temperature moves: the queue, which follows this printer's temperatures while it prints under a
    // heat-up limit, starts the copy now (the safety pass would be up to 30 s away).
    await heating.report({ bed_temper: 59 });
    const started = await itemUntil(h, body.id, (i) => i.dispatches.length === 1, 'started after the heat-up', 8_000);
    expect(started.dispatches[0].printer_id).toBe('x1c-free');
  });
});
