/**
 * The print queue over HTTP, without printers that answer: items are stored,
 * listed in the dispatcher's order, changed, held, released and cancelled,
 * every change reaches /ws as queue_update, and a waiting item says why in words.
 */
import { PrintfarmClient, PrintfarmError } from '../../service/client';
import { bambu3mf, prusaGcode } from '../../service/simulators/seed-files';
import { bambu, expectError, startService, uploadFile, type Harness } from '../helpers/service';
import { until } from '../helpers/farm';
import { connectWs, type WsClient } from '../helpers/ws';
import { describeDialects } from '../helpers/dialects';

describeDialects('print queue API', (db) => {
  let h: Harness;
  let ws: WsClient;
  let x1cFile: string;
  let a1File: string;
  beforeAll(async () => {
    h = await startService(await db.options());
    ws = await connectWs(h.base);
    x1cFile = await uploadFile(h.base, 'Cube X1C.gcode.3mf', bambu3mf({ model: 'X1C' }));
    a1File = await uploadFile(h.base, 'Cube A1.gcode.3mf', bambu3mf({ model: 'A1' }));
    expect((await h.post('/api/v1/printers', bambu('x1c-01', { name: 'X1C #01' }))).status).toBe(201);
  });
  afterAll(async () => {
    await ws.close();
    await h.close();
  });

  test('an item is created with its defaults, announced on /ws and listed', async () => {
    const res = await h.post('/api/v1/queue', { file_id: x1cFile, copies: 3 });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      file_id: x1cFile,
      name: 'Cube X1C',
      plate: 1,
      copies: 3,
      remaining: 3,
      printing: 0,
      completed: 0,
      failed: 0,
      priority: 0,
      status: 'queued',
      waiting_reason: null,
      target: null,
      requirements: null,
      options: { bed_leveling: true, timelapse: false, flow_cali: false, vibration_cali: false },
      start_after: null,
      finish_by: null,
      position: 1,
      files: [{ file_id: x1cFile, plate: 1, printing: 0, completed: 0, failed: 0 }],
      created_at: expect.any(String),
      updated_at: expect.any(String),
      dispatches: [],
    });
    const frame = await ws.next((f) => f.type === 'queue_update' && f.data.id === res.body.id);
    expect(frame.data).toMatchObject({ id: res.body.id, copies: 3, status: 'queued' });
    // The only X1C is not connected: the item says so.
    const waiting = await until(async () => {
      const r = await h.get(`/api/v1/queue/${res.body.id}`);
      return r.body.waiting_reason ? r.body : null;
    }, 'a waiting reason');
    expect(waiting.waiting_reason).toBe('all compatible printers offline');
  });

  test('a file sliced for a model the farm lacks waits, naming the model', async () => {
    const res = await h.post('/api/v1/queue', { file_id: a1File, name: 'A1 part', priority: 5 });
    expect(res.status).toBe(201);
    const item = await until(async () => {
      const r = await h.get(`/api/v1/queue/${res.body.id}`);
      return r.body.waiting_reason ? r.body : null;
    }, 'a waiting reason');
    expect(item).toMatchObject({ status: 'queued', waiting_reason: 'sliced for Bambu Lab A1; no A1 in the farm' });
    // Higher priority first in the list.
    const list = await h.get('/api/v1/queue?status=queued');
    expect(list.status).toBe(200);
    expect(list.body.items[0].id).toBe(res.body.id);
    expect(list.body.pagination).toEqual({ page: 1, limit: 50, total_items: 2, total_pages: 1, has_next: false, has_previous: false });
  });

  test('PATCH, hold, release and DELETE change the item and say so', async () => {
    const { body: item } = await h.post('/api/v1/queue', { file_id: x1cFile, copies: 2, requirements: { material: 'PETG' }, target: { printer_type: 'bambu_lab' } });
    const patched = await h.request('PATCH', `/api/v1/queue/${item.id}`, { copies: 4, priority: -3, name: 'Renamed', requirements: null });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ copies: 4, remaining: 4, priority: -3, name: 'Renamed', requirements: null, target: { printer_type: 'bambu_lab' } });
    const held = await h.post(`/api/v1/queue/${item.id}/hold`);
    expect(held.body).toMatchObject({ status: 'held' });
    expectError(await h.request('PATCH', `/api/v1/queue/${item.id}`, { copies: 0 }), 422, 'VALIDATION_ERROR');
    const released = await h.post(`/api/v1/queue/${item.id}/release`);
    expect(released.body).toMatchObject({ status: 'queued' });
    expectError(await h.post(`/api/v1/queue/${item.id}/release`), 409, 'QUEUE_ITEM_STATE');
    const cancelled = await h.del(`/api/v1/queue/${item.id}`);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toMatchObject({ status: 'cancelled', remaining: 0, waiting_reason: null });
    expectError(await h.del(`/api/v1/queue/${item.id}`), 409, 'QUEUE_ITEM_STATE');
    expectError(await h.request('PATCH', `/api/v1/queue/${item.id}`, { priority: 1 }), 409, 'QUEUE_ITEM_STATE');
    await ws.next((f) => f.type === 'queue_update' && f.data.id === item.id && f.data.status === 'cancelled');
  });

  test('bad input gets the error body', async () => {
    expectError(await h.post('/api/v1/queue', { file_id: 'nope' }), 404, 'FILE_NOT_FOUND');
    expectError(await h.post('/api/v1/queue', { file_id: x1cFile, plate: 2 }), 422, 'VALIDATION_ERROR');
    expectError(await h.post('/api/v1/queue', { file_id: x1cFile, copies: 1001 }), 422, 'VALIDATION_ERROR');
    expectError(await h.post('/api/v1/queue', { file_id: x1cFile, requirements: { color: 'red' } }), 422, 'VALIDATION_ERROR');
    expectError(await h.post('/api/v1/queue', { file_id: x1cFile, extra: 1 }), 422, 'VALIDATION_ERROR');
    const stl = await uploadFile(h.base, 'cube.stl', Buffer.from('solid x\nendsolid x\n'));
    expectError(await h.post('/api/v1/queue', { file_id: stl }), 422, 'VALIDATION_ERROR');
    expectError(await h.get('/api/v1/queue/unknown'), 404, 'QUEUE_ITEM_NOT_FOUND');
    expectError(await h.post('/api/v1/printers/none/plate-cleared'), 404, 'PRINTER_NOT_FOUND');
  });

  test('pausing dispatch is a waiting reason; printers show plate and materials', async () => {
    const gcode = await uploadFile(h.base, 'cube.gcode', prusaGcode());
    const { body: item } = await h.post('/api/v1/queue', { file_id: gcode });
    expect((await h.put('/api/v1/settings', { queue_dispatch_enabled: false })).status).toBe(200);
    await until(async () => (await h.get(`/api/v1/queue/${item.id}`)).body.waiting_reason === 'dispatching paused', 'the paused reason');
    expect((await h.put('/api/v1/settings', { queue_dispatch_enabled: true })).status).toBe(200);
    await until(async () => (await h.get(`/api/v1/queue/${item.id}`)).body.waiting_reason !== 'dispatching paused', 'dispatching to resume');

    const printers = await h.get('/api/v1/printers');
    expect(printers.body.printers[0]).toMatchObject({ id: 'x1c-01', plate_state: 'clear', plate_auto_clear: false, nozzle_diameter: null, materials: [] });
    const cleared = await h.post('/api/v1/printers/x1c-01/plate-cleared');
    expect(cleared.body).toEqual({ id: 'x1c-01', plate_state: 'clear', message: 'Plate marked clear', cleared_at: expect.any(String) });
    expect((await h.put('/api/v1/printers/x1c-01', { plate_auto_clear: true })).status).toBe(200);
    expect((await h.get('/api/v1/printers/x1c-01')).body).toMatchObject({ plate_auto_clear: true, plate_state: 'clear' });
  });

  test('the typed client uploads, queues, holds, lists and clears plates', async () => {
    const client = new PrintfarmClient(h.base);
    const file = await client.files.upload('Client.gcode.3mf', bambu3mf({ model: 'X1C' }));
    const item = await client.queue.add({ file_id: file.id, copies: 2, target: { printer_ids: ['x1c-01'] } });
    expect(item).toMatchObject({ file_id: file.id, copies: 2, status: 'queued' });
    expect((await client.queue.hold(item.id)).status).toBe('held');
    expect((await client.queue.list({ status: 'held' })).items.map((i) => i.id)).toEqual([item.id]);
    expect((await client.queue.update(item.id, { priority: 9 })).priority).toBe(9);
    expect((await client.queue.release(item.id)).status).toBe('queued');
    expect((await client.queue.cancel(item.id)).status).toBe('cancelled');
    expect((await client.printers.plateCleared('x1c-01')).plate_state).toBe('clear');
    await expect(client.queue.get('missing')).rejects.toMatchObject({ status: 404, code: 'QUEUE_ITEM_NOT_FOUND' });
    await expect(client.queue.get('missing')).rejects.toBeInstanceOf(PrintfarmError);
  });
});
