/**
 * A Klipper printer in the farm, end to end over real WebSocket JSON-RPC:
 * the service registers it, shows its status on /ws, makes one job of a
 * print across a restart, sends it a queued G-code that starts exactly once,
 * shows a shutdown Klipper as an error with its message, and stays up when
 * the printer floods it or sends garbage.
 */
import { klipperGcode, prusaBgcode, prusaGcode } from '../../service/simulators/seed-files';
import { control, until } from '../helpers/farm';
import { startService, type Harness } from '../helpers/service';
import { connectWs } from '../helpers/ws';
import { addPrinters, itemUntil, klipperSim, queueServiceOptions, simState, upload, type SimPrinter } from './queue-helpers';

const GCODE = 'cube_0.2mm_PLA_12m.gcode';

describe('a Klipper printer in the farm', () => {
  let printer: SimPrinter;
  let h: Harness;
  beforeEach(async () => {
    printer = await klipperSim('voron-01', 'Voron #01', 'Voron 2.4 350', 20);
    h = await startService(queueServiceOptions);
  });
  afterEach(async () => {
    await h?.close();
    await printer?.close();
  });

  const detail = async () => (await h.get(`/api/v1/printers/${printer.id}`)).body;
  const jobs = async () => (await h.get(`/api/v1/jobs?printer_id=${printer.id}`)).body.jobs as Record<string, any>[]; // eslint-disable-line @typescript-eslint/no-explicit-any

  test('registered with type klipper; status, temperatures and progress reach /ws as the deltas come; one job across a restart', async () => {
    const created = await h.post('/api/v1/printers', { ...printer.body });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ type: 'klipper', status: 'configuring' });
    await until(async () => (await detail()).connection_status === 'connected', 'connected', 15_000);
    const d = await detail();
    expect(d).toMatchObject({ type: 'klipper', model: 'Voron 2.4 350', http_port: printer.body.http_port, firmware_version: expect.stringMatching(/^v0\.12/), nozzle_diameter: 0.4, auth_method: null });
    expect(d.capabilities).toEqual({ has_camera: false, has_ams: false, supports_remote_control: true });
    const list = (await h.get('/api/v1/printers?type=klipper')).body;
    expect(list.printers.map((p: { id: string }) => p.id)).toEqual([printer.id]);
    expect(JSON.stringify(list)).not.toContain('moonraker-key'); // no API key in list responses

    const ws = await connectWs(h.base);
    await control(printer.control, 'print', { file: GCODE });
    const printing = await ws.next((f) => f.type === 'printer_status' && f.data.printer_id === printer.id && f.data.status === 'printing', 5000);
    expect(printing.data).toMatchObject({ job_name: GCODE, layer_total: 50 });
    const created1 = await ws.next((f) => f.type === 'job_auto_created' && f.data.printer_id === printer.id, 10_000);
    expect(created1.data).toMatchObject({ filename: GCODE, status: 'running' });
    await ws.next((f) => f.type === 'printer_status' && f.data.printer_id === printer.id && Number(f.data.progress) >= 2 && (f.data.temperatures as { nozzle: number }).nozzle > 200, 20_000);

    // The pause reaches /ws: the simulator pushes it as it answers the control call (the wait is generous, a
    // loaded CI machine is slow; no timing is asserted).
    await control(printer.control, 'pause');
    await ws.next((f) => f.type === 'printer_status' && f.data.printer_id === printer.id && f.data.status === 'paused', 10_000);
    await ws.close();

    await h.stop();
    h = await h.restart(queueServiceOptions);
    await until(async () => (await detail()).connection_status === 'connected', 'connected again', 15_000);
    await control(printer.control, 'resume');
    await until(async () => (await detail()).status === 'printing', 'printing again', 10_000);
    expect(await jobs()).toHaveLength(1);
    await control(printer.control, 'finish');
    const done = await until(async () => (await jobs()).find((j) => j.status === 'completed'), 'completed', 10_000);
    expect(done).toMatchObject({ id: Number(created1.data.id), progress: 100 });
    expect(await jobs()).toHaveLength(1);
    expect((await detail()).statistics).toMatchObject({ total_jobs: 1, successful_jobs: 1 });
  }, 60_000);

  test('dropped mid-print while Moonraker answers late, twice (the print ends during the second drop): one job, which follows the print and completes', async () => {
    await addPrinters(h, [printer]);
    const ws = await connectWs(h.base);
    await control(printer.control, 'print', { file: GCODE });
    const job = await until(async () => (await jobs()).find((j) => j.status === 'printing'), 'job printing', 10_000);
    // Every answer comes 500 ms late, the 4 Hz deltas do not: on each reconnect deltas arrive while the subscription
    // is set up (what a loaded host made happen now and then, and ended the job there).
    await control(printer.control, 'faults', { rpc_delay_ms: 500 });
    const dropAndReturn = async (meanwhile?: string) => {
      await control(printer.control, 'offline');
      await until(async () => (await detail()).status === 'offline', 'offline', 10_000);
      if (meanwhile) await control(printer.control, meanwhile);
      await control(printer.control, 'online');
      await until(async () => (await detail()).connection_status === 'connected', 'connected again', 15_000);
    };

    await dropAndReturn();
    const progress = (await simState(printer)).progress;
    const followed = await until(async () => (await jobs()).find((j) => j.progress >= progress + 1), 'the job following the print', 10_000);
    expect(followed).toMatchObject({ id: job.id, status: 'printing' });

    await dropAndReturn('finish');
    const done = await until(async () => (await jobs()).find((j) => j.status !== 'printing'), 'the job ended', 15_000);
    expect(done).toMatchObject({ id: job.id, status: 'completed', progress: 100 });
    await h.service.context.tracker.idle();
    expect(await jobs()).toHaveLength(1);
    const ends = ws.frames.filter((f) => f.type === 'job_update' && f.data.change === 'status' && f.data.status !== 'printing');
    expect(ends.map((f) => f.data.status)).toEqual(['completed']);
    await ws.close();
  }, 60_000);

  test('the queue sends a G-code sliced for the model to the free Klipper printer, acknowledged once; other files wait with a reason', async () => {
    await addPrinters(h, [printer]);
    const foreign = await upload(h, 'Prusa.gcode', prusaGcode({ model: 'MK4S' }));
    const wrong = (await h.post('/api/v1/queue', { file_id: foreign })).body;
    expect((await itemUntil(h, wrong.id, (i) => i.waiting_reason !== null, 'a waiting reason')).waiting_reason).toBe('sliced for MK4S; no MK4S in the farm');
    const bgcode = await upload(h, 'Part.bgcode', prusaBgcode({ model: 'MK4S' }));
    const odd = (await h.post('/api/v1/queue', { file_id: bgcode })).body;
    expect((await itemUntil(h, odd.id, (i) => i.waiting_reason !== null, 'a waiting reason')).waiting_reason).toBe('no printer in the farm prints .bgcode files');
    await h.del(`/api/v1/queue/${wrong.id}`);
    await h.del(`/api/v1/queue/${odd.id}`);

    const file = await upload(h, 'Voron Bracket.gcode', klipperGcode('Voron 2.4 350'));
    const item = (await h.post('/api/v1/queue', { file_id: file })).body;
    const started = await itemUntil(h, item.id, (i) => i.dispatches.some((x: { state: string }) => x.state === 'printing'), 'the copy printing');
    expect(started.dispatches).toEqual([expect.objectContaining({ printer_id: printer.id, state: 'printing', attempt: 1, error: null })]);
    const sim = await simState(printer);
    expect(sim).toMatchObject({ prints_started: 1, status: 'printing', file: 'Voron_Bracket.gcode', last_start: { source: 'upload', file: 'Voron_Bracket.gcode' } });
    await control(printer.control, 'finish');
    const done = await itemUntil(h, item.id, (i) => i.status === 'completed', 'completed');
    expect(done.dispatches).toEqual([expect.objectContaining({ state: 'completed' })]);
    expect((await simState(printer)).prints_started).toBe(1);
    const job = (await jobs()).find((j) => j.queue_item_id === item.id);
    expect(job).toMatchObject({ status: 'completed' });
  }, 60_000);

  test('files: listed in the catalog, downloaded byte-identical, the current print file fetched with its thumbnail', async () => {
    await addPrinters(h, [printer]);
    const listed = await until(async () => {
      const files = (await h.get(`/api/v1/files?printer_id=${printer.id}&limit=100`)).body.files as Record<string, any>[]; // eslint-disable-line @typescript-eslint/no-explicit-any
      return files.length ? files : null;
    }, 'files listed after connect', 10_000);
    const file = listed.find((f) => f.filename === GCODE)!;
    expect(file).toMatchObject({ printer_id: printer.id, file_size: klipperGcode('Voron 2.4 350').length });
    expect((await h.post(`/api/v1/files/${file.id}/download`)).status).toBe(202);
    await until(async () => (await h.get(`/api/v1/files/${file.id}/download/status`)).body.status === 'completed', 'downloaded', 10_000);
    const content = await fetch(`${h.base}/api/v1/files/${file.id}/content`);
    expect(Buffer.from(await content.arrayBuffer()).equals(klipperGcode('Voron 2.4 350'))).toBe(true);

    await control(printer.control, 'print', { file: GCODE });
    await until(async () => (await detail()).status === 'printing', 'printing', 10_000);
    const fetched = await h.post('/api/v1/files/download', { printer_id: printer.id });
    expect(fetched.body).toMatchObject({ filename: GCODE, file_id: file.id });
    expect(fetched.body.status).toMatch(/^exists_/); // the local copy made above
    const thumb = await h.post(`/api/v1/files/${file.id}/thumbnail/extract`);
    expect(thumb.body).toMatchObject({ success: true });
    expect((await h.post('/api/v1/files/download', { printer_id: printer.id })).body).toMatchObject({ status: 'exists_with_thumbnail', has_thumbnail: true });
  }, 60_000);

  test('a file that names no model goes to a Klipper printer only when the item targets it', async () => {
    await addPrinters(h, [printer]);
    const bare = Buffer.from('G28\nG1 X10 Y10 F3000\nG1 X20 E1\n');
    const file = await upload(h, 'Bare.gcode', bare);
    const untargeted = (await h.post('/api/v1/queue', { file_id: file })).body;
    const waiting = await itemUntil(h, untargeted.id, (i) => i.waiting_reason !== null, 'a waiting reason');
    expect(waiting).toMatchObject({ dispatches: [], waiting_reason: 'the file names no printer model: it goes only to a printer the item targets' });
    await h.del(`/api/v1/queue/${untargeted.id}`);
    const targeted = (await h.post('/api/v1/queue', { file_id: file, target: { printer_ids: [printer.id] } })).body;
    await itemUntil(h, targeted.id, (i) => i.dispatches.some((x: { state: string }) => x.state === 'printing'), 'the targeted copy printing');
    expect((await simState(printer)).prints_started).toBe(1);
  }, 60_000);

  test("a material requirement waits until Spoolman's active spool is that material", async () => {
    await printer.close();
    printer = await klipperSim('voron-01', 'Voron #01', 'Voron 2.4 350', 20, { spool: { id: 1, material: 'PLA', color_hex: 'FFFFFF', weight: 1000, remaining_weight: 900 } });
    await addPrinters(h, [printer]);
    expect((await detail()).materials).toEqual([{ slot: 0, type: 'PLA', color: '#FFFFFF', remaining_percent: 90, spool_id: null, remaining_weight_g: null }]);
    const file = await upload(h, 'Clip.gcode', klipperGcode('Voron 2.4 350'));
    const item = (await h.post('/api/v1/queue', { file_id: file, requirements: { material: 'PETG' } })).body;
    expect((await itemUntil(h, item.id, (i) => i.waiting_reason !== null, 'a waiting reason')).waiting_reason).toBe('PETG not loaded on Voron #01');
    await control(printer.control, 'spool', { id: 2, material: 'PETG', color_hex: '000000' });
    await itemUntil(h, item.id, (i) => i.dispatches.some((x: { state: string }) => x.state === 'printing'), 'the copy printing');
    expect((await simState(printer)).prints_started).toBe(1);
  }, 60_000);

  test('a shutdown Klipper shows as an error with its message; a flood and a huge frame leave the service up', async () => {
    await addPrinters(h, [printer]);
    await control(printer.control, 'shutdown', { message: 'Heater extruder not heating at expected rate' });
    const down = await until(async () => {
      const d = await detail();
      return d.status === 'error' && d;
    }, 'error', 10_000);
    expect(down.status_message).toBe('Klipper shutdown: Heater extruder not heating at expected rate');
    await control(printer.control, 'restart');
    await until(async () => (await detail()).status === 'online', 'online again', 10_000);

    await control(printer.control, 'hostile', { kind: 'flood', count: 5000 });
    await control(printer.control, 'hostile', { kind: 'huge', bytes: 6 * 1024 * 1024 });
    await control(printer.control, 'hostile', { kind: 'garbage', count: 100 });
    expect((await h.get('/api/v1/health')).status).toBe(200);
    await until(async () => (await detail()).connection_status === 'connected', 'reconnected after the faults', 20_000);
    expect((await h.get('/api/v1/health')).status).toBe(200);
  }, 60_000);
});
