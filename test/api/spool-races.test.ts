/**
 * Spool requests that race each other. Each one checks the spool, awaits, then writes: a check that no longer
 * holds by the write must not leave two spools claiming one RFID tag (500 instead of 409), an archived spool in a
 * slot, or a spool deleted while it was being loaded. The window is held open by pausing the store at the write.
 */
import { describeDialects } from '../helpers/dialects';
import { until } from '../helpers/farm';
import { bambu, expectError, startService, type Harness } from '../helpers/service';

type Gate = { entered: Promise<void>; open(): void };

/** Pauses the next calls of a store method until `open()`; `entered` resolves once `count` of them wait. */
function pause<T extends object, K extends keyof T>(target: T, method: K, count = 1): Gate {
  const original = (target[method] as (...a: unknown[]) => Promise<unknown>).bind(target);
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  let entered!: () => void;
  const reached = new Promise<void>((resolve) => (entered = resolve));
  let waiting = 0;
  (target as Record<K, unknown>)[method] = async (...args: unknown[]) => {
    const result = await original(...args);
    if (++waiting === count) {
      // Calls after these go straight through (the request that races them uses the same store).
      (target as Record<K, unknown>)[method] = original;
      entered();
    }
    await gate;
    return result;
  };
  return { entered: reached, open };
}

describeDialects('spools: requests racing each other', (db) => {
  let h: Harness;
  beforeEach(async () => {
    h = await startService(await db.options());
    expect((await h.post('/api/v1/printers', bambu('x1c-s1'))).status).toBe(201);
  });
  afterEach(() => h.close());

  test('two spools created at once with one RFID tag: one is created, the other is 409 SPOOL_EXISTS', async () => {
    const store = h.service.context.store.spools;
    // Both requests look the tag up (and find none) before either writes.
    const lookups = pause(store, 'byRfid', 2);
    const body = { material: 'PLA', rfid_uuid: 'A1B2C3D4E5F60718293A4B5C6D7E8F90' };
    const both = Promise.all([h.post('/api/v1/spools', body), h.post('/api/v1/spools', body)]);
    await lookups.entered;
    lookups.open();
    const answers = await both;
    expect(answers.map((a) => a.status).sort()).toEqual([201, 409]);
    expectError(answers.find((a) => a.status === 409)!, 409, 'SPOOL_EXISTS');
    expect((await h.get('/api/v1/spools')).body.spools).toHaveLength(1);
  });

  test('a spool archived while it is being put in a slot stays archived and out of the slot', async () => {
    const spool = (await h.post('/api/v1/spools', { material: 'PETG' })).body;
    // The assignment has read the spool (not archived) and waits before it writes.
    const read = pause(h.service.context.store.spools, 'get');
    const assigning = h.put('/api/v1/printers/x1c-s1/slots/0', { spool_id: spool.id });
    await read.entered;
    expect((await h.request('PATCH', `/api/v1/spools/${spool.id}`, { archived: true })).body).toMatchObject({ archived: true, printer_id: null });
    read.open();
    expectError(await assigning, 409, 'SPOOL_ARCHIVED');
    expect((await h.get(`/api/v1/spools/${spool.id}`)).body).toMatchObject({ archived: true, printer_id: null, slot: null });
  });

  test('a spool deleted while it is being put in a slot: 404, and the spool already in the slot stays there', async () => {
    const loaded = (await h.post('/api/v1/spools', { material: 'PLA' })).body;
    expect((await h.put('/api/v1/printers/x1c-s1/slots/1', { spool_id: loaded.id })).status).toBe(200);
    const doomed = (await h.post('/api/v1/spools', { material: 'ASA' })).body;
    const read = pause(h.service.context.store.spools, 'get');
    const assigning = h.put('/api/v1/printers/x1c-s1/slots/1', { spool_id: doomed.id });
    await read.entered;
    expect((await h.del(`/api/v1/spools/${doomed.id}`)).status).toBe(200);
    read.open();
    expectError(await assigning, 404, 'SPOOL_NOT_FOUND');
    expect((await h.get(`/api/v1/spools/${loaded.id}`)).body).toMatchObject({ printer_id: 'x1c-s1', slot: 1 });
  });

  test('a spool put in a slot while it is being deleted is not deleted: 409 SPOOL_ASSIGNED', async () => {
    const spool = (await h.post('/api/v1/spools', { material: 'PLA' })).body;
    // The deletion has read the spool (in no slot) and waits before it deletes.
    const read = pause(h.service.context.store.spools, 'get');
    const deleting = h.del(`/api/v1/spools/${spool.id}`);
    await read.entered;
    expect((await h.put('/api/v1/printers/x1c-s1/slots/2', { spool_id: spool.id })).status).toBe(200);
    read.open();
    expectError(await deleting, 409, 'SPOOL_ASSIGNED');
    expect((await h.get(`/api/v1/spools/${spool.id}`)).body).toMatchObject({ printer_id: 'x1c-s1', slot: 2 });
  });

  test('a spool put in a slot of a printer being deleted: 404, and the spool is in no slot', async () => {
    const spool = (await h.post('/api/v1/spools', { material: 'PLA' })).body;
    // A spool already loaded there: its leaving the slot shows the removal's clean-up has run.
    const loaded = (await h.post('/api/v1/spools', { material: 'PETG' })).body;
    expect((await h.put('/api/v1/printers/x1c-s1/slots/0', { spool_id: loaded.id })).status).toBe(200);
    // The assignment has read the printer (there) and waits before it reads the spool and writes.
    const read = pause(h.service.context.store.printers, 'get');
    const assigning = h.put('/api/v1/printers/x1c-s1/slots/3', { spool_id: spool.id });
    await read.entered;
    expect((await h.del('/api/v1/printers/x1c-s1')).status).toBe(200);
    await until(async () => (await h.get(`/api/v1/spools/${loaded.id}`)).body.printer_id === null, 'the removed printer\'s spools taken out');
    read.open();
    expectError(await assigning, 404, 'PRINTER_NOT_FOUND');
    expect((await h.get(`/api/v1/spools/${spool.id}`)).body).toMatchObject({ printer_id: null, slot: null });
  });
});
