/**
 * Spools over the API on both databases: CRUD with the fields, the
 * list's filters and paging, slots (a spool in one slot at most, 409 on
 * deleting an assigned spool, archiving unassigns), spool_update / spool_low
 * on /ws, and the usage guard: a print's usage written twice subtracts once.
 */
import { describeDialects } from '../helpers/dialects';
import { bambu, expectError, startService, type Harness } from '../helpers/service';
import { until } from '../helpers/farm';
import { connectWs } from '../helpers/ws';

describeDialects('spools API', (db) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startService({ ...(await db.options()), env: { SPOOL_LOW_THRESHOLD_G: '100' } });
    expect((await h.post('/api/v1/printers', bambu('x1c-01'))).status).toBe(201);
    expect((await h.post('/api/v1/printers', bambu('x1c-02', { serial_number: '01S00A000000002' }))).status).toBe(201);
  });
  afterAll(() => h.close());

  test('create, read, change, list with filters and paging, delete', async () => {
    const created = await h.post('/api/v1/spools', { material: 'pla', color: '#ff0000', brand: 'Prusament', name: 'Galaxy Black', initial_weight_g: 1000, cost_per_kg: 30 });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.any(Number),
      source: 'local',
      material: 'PLA',
      color: '#FF0000',
      brand: 'Prusament',
      name: 'Galaxy Black',
      diameter_mm: 1.75,
      density_g_cm3: null,
      initial_weight_g: 1000,
      remaining_weight_g: 1000,
      cost_per_kg: 30,
      location: null,
      printer_id: null,
      slot: null,
      rfid_uuid: null,
      archived: false,
      low: false,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    const id = created.body.id;
    expect((await h.get(`/api/v1/spools/${id}`)).body).toEqual(created.body);
    const petg = (await h.post('/api/v1/spools', { material: 'PETG', remaining_weight_g: 50, location: 'shelf 2' })).body;
    expect(petg).toMatchObject({ material: 'PETG', remaining_weight_g: 50, initial_weight_g: 1000, low: true });
    const patched = await h.request('PATCH', `/api/v1/spools/${id}`, { remaining_weight_g: 640.5, location: 'dry box' });
    expect(patched.body).toMatchObject({ remaining_weight_g: 640.5, location: 'dry box' });

    expect((await h.get('/api/v1/spools?material=petg')).body.spools.map((s: { id: number }) => s.id)).toEqual([petg.id]);
    expect((await h.get('/api/v1/spools?low=true')).body.spools.map((s: { id: number }) => s.id)).toEqual([petg.id]);
    expect((await h.get('/api/v1/spools?low=false')).body.spools.map((s: { id: number }) => s.id)).toEqual([id]);
    const page = await h.get('/api/v1/spools?limit=1&page=2&order_by=remaining_weight_g&order_dir=asc');
    expect(page.body.pagination).toEqual({ page: 2, limit: 1, total_items: 2, total_pages: 2, has_next: false, has_previous: true });
    expect(page.body.spools.map((s: { id: number }) => s.id)).toEqual([id]);

    expectError(await h.get('/api/v1/spools/999999'), 404, 'SPOOL_NOT_FOUND');
    expectError(await h.post('/api/v1/spools', { material: 'PLA', color: 'red' }), 422, 'VALIDATION_ERROR');
    expectError(await h.post('/api/v1/spools', { material: 'PLA', remaining_weight_g: -1 }), 422, 'VALIDATION_ERROR');
    expect((await h.del(`/api/v1/spools/${petg.id}`)).status).toBe(200);
    expectError(await h.get(`/api/v1/spools/${petg.id}`), 404, 'SPOOL_NOT_FOUND');
  });

  test('slots: one spool per slot, a spool in one slot; deleting an assigned spool is 409; archiving unassigns', async () => {
    const a = (await h.post('/api/v1/spools', { material: 'PLA', color: '#00AE42' })).body;
    const b = (await h.post('/api/v1/spools', { material: 'PETG', color: '#000000' })).body;
    const put = await h.put('/api/v1/printers/x1c-01/slots/2', { spool_id: a.id });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ printer_id: 'x1c-01', slot: 2, spool_id: a.id, spool: { id: a.id, printer_id: 'x1c-01', slot: 2 } });
    // Moving it: it leaves slot 2.
    await h.put('/api/v1/printers/x1c-02/slots/0', { spool_id: a.id });
    expect((await h.get(`/api/v1/spools/${a.id}`)).body).toMatchObject({ printer_id: 'x1c-02', slot: 0 });
    expect((await h.get('/api/v1/spools?printer_id=x1c-01')).body.spools).toEqual([]);
    // Another spool into that slot: the first leaves it.
    await h.put('/api/v1/printers/x1c-02/slots/0', { spool_id: b.id });
    expect((await h.get(`/api/v1/spools/${a.id}`)).body).toMatchObject({ printer_id: null, slot: null });
    expect((await h.get('/api/v1/spools?printer_id=x1c-02')).body.spools.map((s: { id: number }) => s.id)).toEqual([b.id]);

    expectError(await h.del(`/api/v1/spools/${b.id}`), 409, 'SPOOL_ASSIGNED');
    expect((await h.request('PATCH', `/api/v1/spools/${b.id}`, { archived: true })).body).toMatchObject({ archived: true, printer_id: null, slot: null });
    expectError(await h.put('/api/v1/printers/x1c-02/slots/0', { spool_id: b.id }), 409, 'SPOOL_ARCHIVED');
    expect((await h.del(`/api/v1/spools/${b.id}`)).status).toBe(200);

    await h.put('/api/v1/printers/x1c-01/slots/254', { spool_id: a.id });
    const out = await h.del('/api/v1/printers/x1c-01/slots/254');
    expect(out.body).toMatchObject({ spool_id: a.id, spool: null });
    expectError(await h.del('/api/v1/printers/x1c-01/slots/254'), 404, 'SLOT_EMPTY');
    expectError(await h.put('/api/v1/printers/nope/slots/0', { spool_id: a.id }), 404, 'PRINTER_NOT_FOUND');
    expectError(await h.put('/api/v1/printers/x1c-01/slots/0', { spool_id: 999999 }), 404, 'SPOOL_NOT_FOUND');
    expectError(await h.put('/api/v1/printers/x1c-01/slots/256', { spool_id: a.id }), 400, 'VALIDATION_ERROR');

    // A removed printer's spools stay in the inventory, out of any slot.
    expect((await h.post('/api/v1/printers', bambu('x1c-09', { serial_number: '01S00A000000009' }))).status).toBe(201);
    await h.put('/api/v1/printers/x1c-09/slots/1', { spool_id: a.id });
    expect((await h.del('/api/v1/printers/x1c-09')).status).toBe(200);
    await until(async () => ((await h.get(`/api/v1/spools/${a.id}`)).body.printer_id === null ? true : null), 'the spool out of the removed printer');
  });

  test('usage is subtracted once however often it is written; spool_update on every change, spool_low once', async () => {
    const ws = await connectWs(h.base);
    try {
      const s = (await h.post('/api/v1/spools', { material: 'ABS', initial_weight_g: 1000, remaining_weight_g: 150, cost_per_kg: 20 })).body;
      await h.put('/api/v1/printers/x1c-01/slots/3', { spool_id: s.id });
      await ws.next((f) => f.type === 'spool_update' && f.data.id === s.id && f.data.change === 'assigned');
      const { store } = h.service.context;
      const job = await store.jobs.insert({ printer_id: 'x1c-01', job_name: 'box', status: 'completed', progress: 100, created_at: new Date().toISOString(), updated_at: new Date().toISOString() });
      await store.filamentUsage.savePlan({ job_id: job, printer_id: 'x1c-01', entries: [{ filament: 1, slot: 3, grams: 60, material: 'ABS', color: null }], slots_seen: [] }, new Date().toISOString());
      const row = { job_id: job, printer_id: 'x1c-01', slot: 3, source: 'local' as const, spool_id: s.id, material: 'ABS', color: null, grams: 60, cost: 1.2 };
      expect((await store.filamentUsage.settle(job, [row], new Date().toISOString())).written).toHaveLength(1);
      expect((await store.filamentUsage.settle(job, [row], new Date().toISOString())).written).toHaveLength(0);
      await h.service.context.filament.spools.used([s.id], false);
      expect((await h.get(`/api/v1/spools/${s.id}`)).body).toMatchObject({ remaining_weight_g: 90, low: true });
      const low = await ws.next((f) => f.type === 'spool_low' && f.data.id === s.id);
      expect(low.data).toMatchObject({ remaining_weight_g: 90, threshold_g: 100, printer_id: 'x1c-01', slot: 3, material: 'ABS' });
      // Still low after another change: no second spool_low.
      await h.request('PATCH', `/api/v1/spools/${s.id}`, { remaining_weight_g: 80 });
      await ws.next((f) => f.type === 'spool_update' && f.data.id === s.id && f.data.remaining_weight_g === 80);
      expect(ws.frames.filter((f) => f.type === 'spool_low' && f.data.id === s.id)).toHaveLength(1);
      const detail = (await h.get(`/api/v1/jobs/${job}`)).body;
      expect(detail.filament_usage).toEqual([{ spool_id: s.id, slot: 3, material: 'ABS', color: null, grams: 60, cost: 1.2 }]);
      // The printer's slot shows the spool and its grams.
      const printer = (await h.get('/api/v1/printers/x1c-01')).body;
      expect(printer.materials).toEqual([]); // the silent test driver reports nothing loaded
    } finally {
      await ws.close();
    }
  });
});
