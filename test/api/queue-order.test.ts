/**
 * The queue's order and rules over HTTP on both databases (issue 23): moving
 * an item within its priority, variants (`files`) next to the single file_id
 * form, finish_by, and the working-hours setting refused with a clear 422.
 * No printer answers here: nothing starts, the items only wait.
 */
import { bambu3mf, prusaGcode } from '../../service/simulators/seed-files';
import { describeDialects } from '../helpers/dialects';
import { until } from '../helpers/farm';
import { bambu, expectError, startService, type Harness } from '../helpers/service';
import { upload } from '../e2e/queue-helpers';

describeDialects('queue order, variants and rules', (db) => {
  let h: Harness;
  let x1cFile: string;
  let mk4sFile: string;
  beforeAll(async () => {
    h = await startService(await db.options());
    x1cFile = await upload(h, 'Benchy X1C.gcode.3mf', bambu3mf({ model: 'X1C' }));
    mk4sFile = await upload(h, 'Benchy MK4S.gcode', prusaGcode({ model: 'MK4S' }));
    expect((await h.post('/api/v1/printers', bambu('x1c-01', { name: 'X1C #01' }))).status).toBe(201);
  });
  afterAll(() => h.close());

  const order = async (priority: number) =>
    ((await h.get('/api/v1/queue?status=queued&limit=100')).body.items as { id: string; priority: number }[]).filter((i) => i.priority === priority).map((i) => i.id);

  test('move: before an item or to a place, within its priority; new items still go last', async () => {
    const ids: string[] = [];
    for (const name of ['a', 'b', 'c', 'd']) ids.push((await h.post('/api/v1/queue', { file_id: x1cFile, name, priority: 7 })).body.id);
    const other = (await h.post('/api/v1/queue', { file_id: x1cFile, name: 'other', priority: 3 })).body.id;
    expect(await order(7)).toEqual(ids);

    const moved = await h.post(`/api/v1/queue/${ids[3]}/move`, { before: ids[1] });
    expect(moved.status).toBe(200);
    expect(moved.body).toMatchObject({ id: ids[3], position: 2 });
    expect(await order(7)).toEqual([ids[0], ids[3], ids[1], ids[2]]);

    expect((await h.post(`/api/v1/queue/${ids[0]}/move`, { position: 99 })).status).toBe(200);
    expect(await order(7)).toEqual([ids[3], ids[1], ids[2], ids[0]]);
    expect((await h.post(`/api/v1/queue/${ids[2]}/move`, { position: 1 })).status).toBe(200);
    expect(await order(7)).toEqual([ids[2], ids[3], ids[1], ids[0]]);

    const late = (await h.post('/api/v1/queue', { file_id: x1cFile, name: 'e', priority: 7 })).body.id;
    expect(await order(7)).toEqual([ids[2], ids[3], ids[1], ids[0], late]);
    // An item that changes to this priority goes last in it too.
    const changed = (await h.post('/api/v1/queue', { file_id: x1cFile, name: 'f', priority: 2 })).body.id;
    expect((await h.request('PATCH', `/api/v1/queue/${changed}`, { priority: 7 })).status).toBe(200);
    expect(await order(7)).toEqual([ids[2], ids[3], ids[1], ids[0], late, changed]);
    ids.push(changed);

    // Across priorities: refused with the way to do it.
    const across = await h.post(`/api/v1/queue/${ids[0]}/move`, { before: other });
    expectError(across, 422, 'VALIDATION_ERROR');
    expect(across.body.error.message).toMatch(/priority 3, not 7; change the priority/);
    expectError(await h.post(`/api/v1/queue/${ids[0]}/move`, { before: 'nope' }), 404, 'QUEUE_ITEM_NOT_FOUND');
    expectError(await h.post(`/api/v1/queue/${ids[0]}/move`, { before: ids[1], position: 1 }), 422, 'VALIDATION_ERROR');
    expectError(await h.post(`/api/v1/queue/${ids[0]}/move`, {}), 422, 'VALIDATION_ERROR');
    await h.del(`/api/v1/queue/${ids[1]}`);
    expectError(await h.post(`/api/v1/queue/${ids[1]}/move`, { position: 1 }), 409, 'QUEUE_ITEM_STATE');
    for (const id of [...ids, late, other]) await h.del(`/api/v1/queue/${id}`);
  });

  test('variants: files [{file_id, plate}], each checked; the single file_id form works as before', async () => {
    const res = await h.post('/api/v1/queue', { files: [{ file_id: x1cFile }, { file_id: mk4sFile }], copies: 4, name: 'Benchy' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      file_id: x1cFile,
      plate: 1,
      copies: 4,
      remaining: 4,
      files: [
        { file_id: x1cFile, plate: 1, printing: 0, completed: 0, failed: 0 },
        { file_id: mk4sFile, plate: 1, printing: 0, completed: 0, failed: 0 },
      ],
    });
    // Nothing in the farm fits the MK4S variant, the X1C is offline: the reason says so.
    const waiting = await until(async () => ((await h.get(`/api/v1/queue/${res.body.id}`)).body.waiting_reason ? (await h.get(`/api/v1/queue/${res.body.id}`)).body : null), 'a reason');
    expect(waiting.waiting_reason).toBe('all compatible printers offline');
    await h.del(`/api/v1/queue/${res.body.id}`);

    const twice = await h.post('/api/v1/queue', { files: [{ file_id: x1cFile }, { file_id: x1cFile, plate: 1 }] });
    expectError(twice, 422, 'VALIDATION_ERROR');
    expect(twice.body.error.details.fields[0]).toMatchObject({ field: 'files.1.file_id', message: 'the same file and plate is given twice' });
    const badPlate = await h.post('/api/v1/queue', { files: [{ file_id: mk4sFile }, { file_id: x1cFile, plate: 3 }] });
    expectError(badPlate, 422, 'VALIDATION_ERROR');
    expect(badPlate.body.error.details.fields[0]).toMatchObject({ field: 'files.1.plate' });
    expectError(await h.post('/api/v1/queue', { files: [{ file_id: 'missing' }] }), 404, 'FILE_NOT_FOUND');
    expectError(await h.post('/api/v1/queue', { file_id: x1cFile, files: [{ file_id: x1cFile }] }), 422, 'VALIDATION_ERROR');
    expectError(await h.post('/api/v1/queue', { copies: 2 }), 422, 'VALIDATION_ERROR');
  });

  test('finish_by is stored, changed and removed', async () => {
    const at = new Date(Date.now() + 3_600_000).toISOString();
    const res = await h.post('/api/v1/queue', { file_id: x1cFile, finish_by: at });
    expect(res.body.finish_by).toBe(at);
    expect((await h.request('PATCH', `/api/v1/queue/${res.body.id}`, { finish_by: null })).body.finish_by).toBeNull();
    expectError(await h.request('PATCH', `/api/v1/queue/${res.body.id}`, { finish_by: 'tomorrow' }), 422, 'VALIDATION_ERROR');
    await h.del(`/api/v1/queue/${res.body.id}`);
  });

  test('queue_hours: a bad window is refused with 422 naming it; a good one is stored', async () => {
    for (const [value, message] of [
      ['Mon-Fri 7-22', '"Mon-Fri 7-22" is not a window like "Mon-Fri 07:00-22:00" or "daily 06:00-23:00"'],
      ['Mon-Fry 07:00-22:00', '"Mon-Fry 07:00-22:00": "Fry" is not a day (Mon, Tue, Wed, Thu, Fri, Sat, Sun or daily)'],
      ['Mon 07:00-25:00', '"Mon 07:00-25:00": 25:00 is not a time of day (00:00 to 24:00)'],
      ['Sat 08:00-08:00', '"Sat 08:00-08:00": the window is empty (start and end are the same)'],
    ]) {
      const res = await h.put('/api/v1/settings', { queue_hours: value });
      expectError(res, 422, 'VALIDATION_ERROR');
      expect(res.body.error.details.fields).toEqual([{ field: 'queue_hours', message, code: 'invalid_value' }]);
    }
    expect((await h.put('/api/v1/settings', { queue_hours: 'Mon-Fri 07:00-22:00, Sat 08:00-14:00', queue_printer_choice: 'least_used', queue_max_concurrent_heatups: 2 })).status).toBe(200);
    expect((await h.get('/api/v1/settings')).body).toMatchObject({ queue_hours: 'Mon-Fri 07:00-22:00, Sat 08:00-14:00', queue_printer_choice: 'least_used', queue_max_concurrent_heatups: 2, queue_start_stagger_s: 0 });
    expectError(await h.put('/api/v1/settings', { queue_printer_choice: 'random' }), 422, 'VALIDATION_ERROR');
    await h.put('/api/v1/settings', { queue_hours: '', queue_printer_choice: 'first_free', queue_max_concurrent_heatups: 0 });
  });
});
