/**
 * Requests that race the dispatcher's pass. A pass reads the queued items and then awaits (file facts, the
 * filament check) before it claims a printer: an item cancelled, held or cut to fewer copies in that window must
 * not get the printer. The window is held open by pausing the pass at its claim (the store's claim waits for the
 * test); the printers are real simulators.
 */
import { bambu3mf } from '../../service/simulators/seed-files';
import { control } from '../helpers/farm';
import { expectError, startService, type Harness } from '../helpers/service';
import { addPrinters, bambuSim, item, itemUntil, queueServiceOptions, queueUntilUploading, simState, upload, type SimPrinter } from './queue-helpers';

/** Makes the dispatcher's next claims wait until `open()`; `entered` resolves when the first one is waiting. */
function pauseClaims(h: Harness) {
  const queue = h.service.context.store.queue;
  const claim = queue.claim.bind(queue);
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  let entered!: () => void;
  const reached = new Promise<void>((resolve) => (entered = resolve));
  queue.claim = async (d) => {
    entered();
    await gate;
    return claim(d);
  };
  return { entered: reached, open };
}

/** Makes the next write of an item's copies (PATCH) wait until `open()`, after it checked them; `entered` as above. */
function pauseCopiesWrite(h: Harness) {
  const queue = h.service.context.store.queue;
  const transition = queue.transitionItem.bind(queue);
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  let entered!: () => void;
  const reached = new Promise<void>((resolve) => (entered = resolve));
  queue.transitionItem = async (...args) => {
    if (args[2].copies !== undefined) {
      entered();
      await gate;
    }
    return transition(...args);
  };
  return { entered: reached, open };
}

/** Makes the next read of dispatches by `caller` (a function name in the stack) wait until `open()`, after it read. */
function pauseDispatchesReadBy(h: Harness, caller: string) {
  const queue = h.service.context.store.queue;
  const dispatchesOf = queue.dispatchesOf.bind(queue);
  let entered!: () => void;
  const reached = new Promise<void>((resolve) => (entered = resolve));
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  queue.dispatchesOf = async (ids) => {
    const fromCaller = new Error().stack?.includes(caller);
    const read = await dispatchesOf(ids);
    if (fromCaller) {
      queue.dispatchesOf = dispatchesOf;
      entered();
      await gate;
    }
    return read;
  };
  return { entered: reached, open };
}

/** Lets the paused pass finish and every run it launched end. */
async function settle(h: Harness): Promise<void> {
  await h.service.context.dispatcher.idle();
  await h.service.context.dispatcher.runner.idle();
}

describe('queue: requests racing the dispatcher', () => {
  let printers: SimPrinter[] = [];
  let h: Harness;
  afterEach(async () => {
    await h?.close();
    await Promise.all(printers.map((p) => p.close()));
    printers = [];
  });

  test('an item cancelled while the dispatcher is about to claim a printer for it is not printed', async () => {
    printers = [await bambuSim('x1c-r1', 'X1C #R1')];
    h = await startService(queueServiceOptions);
    await addPrinters(h, printers);
    const paused = pauseClaims(h);
    const file = await upload(h, 'Race.gcode.3mf', bambu3mf({ model: 'X1C' }));
    const { body } = await h.post('/api/v1/queue', { file_id: file });
    await paused.entered;
    const cancelled = await h.del(`/api/v1/queue/${body.id}`);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.status).toBe('cancelled');
    paused.open();
    await settle(h);
    const after = await item(h, body.id);
    expect(after.status).toBe('cancelled');
    expect(after.dispatches.filter((d: { state: string }) => d.state !== 'cancelled')).toEqual([]);
    expect((await simState(printers[0])).prints_started).toBe(0);
  });

  test('an item held while the dispatcher is about to claim a printer for it does not start', async () => {
    printers = [await bambuSim('x1c-r2', 'X1C #R2')];
    h = await startService(queueServiceOptions);
    await addPrinters(h, printers);
    const paused = pauseClaims(h);
    const file = await upload(h, 'Held.gcode.3mf', bambu3mf({ model: 'X1C' }));
    const { body } = await h.post('/api/v1/queue', { file_id: file });
    await paused.entered;
    expect((await h.post(`/api/v1/queue/${body.id}/hold`)).body.status).toBe('held');
    paused.open();
    await settle(h);
    const after = await item(h, body.id);
    expect(after).toMatchObject({ status: 'held', dispatches: [] });
    expect((await simState(printers[0])).prints_started).toBe(0);
  });

  test('copies cut to one while the dispatcher is claiming printers for two: one printer prints', async () => {
    printers = [await bambuSim('x1c-r3', 'X1C #R3'), await bambuSim('x1c-r4', 'X1C #R4')];
    h = await startService(queueServiceOptions);
    await addPrinters(h, printers);
    const paused = pauseClaims(h);
    const file = await upload(h, 'Pair.gcode.3mf', bambu3mf({ model: 'X1C' }));
    const { body } = await h.post('/api/v1/queue', { file_id: file, copies: 2 });
    await paused.entered;
    const cut = await h.request('PATCH', `/api/v1/queue/${body.id}`, { copies: 1 });
    expect(cut.status).toBe(200);
    expect(cut.body.copies).toBe(1);
    paused.open();
    await settle(h);
    const after = await item(h, body.id);
    expect(after.copies).toBe(1);
    expect(after.dispatches.map((d: { state: string }) => d.state)).toEqual(['printing']);
    const started = (await Promise.all(printers.map(simState))).map((s) => s.prints_started);
    expect(started.reduce((a, b) => a + b, 0)).toBe(1);
  });

  test('copies cut below the copies a pass claimed between the check and the write: 409, both copies stay counted', async () => {
    printers = [await bambuSim('x1c-r5', 'X1C #R5'), await bambuSim('x1c-r6', 'X1C #R6')];
    h = await startService(queueServiceOptions);
    await addPrinters(h, printers);
    const claims = pauseClaims(h);
    const write = pauseCopiesWrite(h);
    const file = await upload(h, 'Late.gcode.3mf', bambu3mf({ model: 'X1C' }));
    // Three copies on two printers: after both claims the item is still queued (its status alone shows no change).
    const { body } = await h.post('/api/v1/queue', { file_id: file, copies: 3 });
    await claims.entered;
    // The PATCH finds no copy started and may cut to one; before it writes, the pass claims both printers.
    const cut = h.request('PATCH', `/api/v1/queue/${body.id}`, { copies: 1 });
    await write.entered;
    claims.open();
    await h.service.context.dispatcher.idle();
    write.open();
    expectError(await cut, 409, 'QUEUE_ITEM_STATE');
    await settle(h);
    const after = await item(h, body.id);
    expect(after.dispatches.map((d: { state: string }) => d.state)).toEqual(['printing', 'printing']);
    expect(after).toMatchObject({ copies: 3, remaining: 1 });
  });

  test('a printer removed while a copy uploads to it: the copy goes back to the queue, not counted as a failure', async () => {
    printers = [await bambuSim('x1c-r7', 'X1C #R7')];
    // One failure would fail the item: the removal must not count as one.
    h = await startService({ ...queueServiceOptions, env: { QUEUE_MAX_ATTEMPTS: '1' } });
    await addPrinters(h, printers);
    const { itemId } = await queueUntilUploading(h, printers[0], 'Removed.gcode.3mf');
    expect((await h.del('/api/v1/printers/x1c-r7')).status).toBe(200);
    const after = await itemUntil(h, itemId, (i) => i.dispatches.every((d: { state: string }) => !['claimed', 'uploading', 'starting'].includes(d.state)), 'the upload ended');
    await settle(h);
    expect(await item(h, itemId)).toMatchObject({ status: 'queued', remaining: 1, waiting_reason: expect.any(String) });
    expect(after.dispatches).toMatchObject([{ printer_id: 'x1c-r7', state: 'cancelled', error: 'the printer was removed' }]);
  });

  test('a printer deactivated while a copy uploads to it: the copy goes back to the queue, not counted as a failure', async () => {
    printers = [await bambuSim('x1c-r10', 'X1C #R10')];
    h = await startService({ ...queueServiceOptions, env: { QUEUE_MAX_ATTEMPTS: '1' } });
    await addPrinters(h, printers);
    const { itemId } = await queueUntilUploading(h, printers[0], 'Deactivated.gcode.3mf');
    expect((await h.put('/api/v1/printers/x1c-r10', { is_active: false })).status).toBe(200);
    const after = await itemUntil(h, itemId, (i) => i.dispatches.every((d: { state: string }) => !['claimed', 'uploading', 'starting'].includes(d.state)), 'the upload ended');
    await settle(h);
    expect(await item(h, itemId)).toMatchObject({ status: 'queued', remaining: 1 });
    expect(after.dispatches).toMatchObject([{ printer_id: 'x1c-r10', state: 'cancelled', error: 'the printer was deactivated' }]);
  });

  test('an item cancelled while a dispatch change is being settled stays cancelled and prints no further copy', async () => {
    printers = [await bambuSim('x1c-r8', 'X1C #R8')];
    h = await startService(queueServiceOptions);
    await addPrinters(h, printers);
    // The settle after the first claim has read the item (queued) and waits before it writes the item's status.
    const queue = h.service.context.store.queue;
    const getItem = queue.getItem.bind(queue);
    let entered!: () => void;
    const reached = new Promise<void>((resolve) => (entered = resolve));
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    queue.getItem = async (id) => {
      const fromSettle = new Error().stack?.includes('item-settle');
      const read = await getItem(id);
      if (fromSettle) {
        queue.getItem = getItem;
        entered();
        await gate;
      }
      return read;
    };
    const file = await upload(h, 'Settle.gcode.3mf', bambu3mf({ model: 'X1C' }));
    const { body } = await h.post('/api/v1/queue', { file_id: file, copies: 2 });
    await reached;
    expect((await h.del(`/api/v1/queue/${body.id}`)).body.status).toBe('cancelled');
    open();
    await settle(h);
    await h.service.context.dispatcher.idle();
    await settle(h);
    const after = await item(h, body.id);
    expect(after.status).toBe('cancelled');
    expect(after.dispatches.filter((d: { state: string }) => d.state !== 'cancelled')).toEqual([]);
    expect((await simState(printers[0])).prints_started).toBe(0);
  });

  test('dispatching paused while a pass is deciding: the pass claims no printer after the pause', async () => {
    printers = [await bambuSim('x1c-r9', 'X1C #R9')];
    h = await startService(queueServiceOptions);
    await addPrinters(h, printers);
    // The pass has seen dispatching enabled and waits (reading the dispatches) before it decides.
    const paused = pauseDispatchesReadBy(h, 'Dispatcher.pass');
    const file = await upload(h, 'Paused.gcode.3mf', bambu3mf({ model: 'X1C' }));
    const { body } = await h.post('/api/v1/queue', { file_id: file });
    await paused.entered;
    expect((await h.put('/api/v1/settings', { queue_dispatch_enabled: false })).status).toBe(200);
    paused.open();
    await settle(h);
    await h.service.context.dispatcher.idle();
    expect(await item(h, body.id)).toMatchObject({ status: 'queued', dispatches: [], waiting_reason: 'dispatching paused' });
    expect((await simState(printers[0])).prints_started).toBe(0);
  });

  test('a held item released while its last copy ends: the item ends completed, not printing for ever', async () => {
    printers = [await bambuSim('x1c-r11', 'X1C #R11')];
    h = await startService(queueServiceOptions);
    await addPrinters(h, printers);
    const file = await upload(h, 'Release.gcode.3mf', bambu3mf({ model: 'X1C' }));
    const { body } = await h.post('/api/v1/queue', { file_id: file });
    await itemUntil(h, body.id, (i) => i.dispatches[0]?.state === 'printing', 'printing');
    expect((await h.post(`/api/v1/queue/${body.id}/hold`)).body.status).toBe('held');
    // The release has read the dispatches (one printing) and waits before it writes the status it derived.
    const paused = pauseDispatchesReadBy(h, 'QueueService.release');
    const release = h.post(`/api/v1/queue/${body.id}/release`);
    await paused.entered;
    await control(printers[0].control, 'finish');
    await itemUntil(h, body.id, (i) => i.dispatches[0]?.state === 'completed', 'the copy completed');
    paused.open();
    expect((await release).status).toBe(200);
    await settle(h);
    await h.service.context.dispatcher.idle();
    expect(await item(h, body.id)).toMatchObject({ status: 'completed', completed: 1, remaining: 0 });
  });

  test('copies cut to the copies started while the last of them ends: the item ends completed, not printing for ever', async () => {
    printers = [await bambuSim('x1c-r12', 'X1C #R12')];
    h = await startService(queueServiceOptions);
    await addPrinters(h, printers);
    const file = await upload(h, 'Cut.gcode.3mf', bambu3mf({ model: 'X1C' }));
    const { body } = await h.post('/api/v1/queue', { file_id: file, copies: 2 });
    await itemUntil(h, body.id, (i) => i.dispatches[0]?.state === 'printing', 'printing');
    // The PATCH has read the dispatches (one printing) and waits before it writes the status it derived.
    const paused = pauseDispatchesReadBy(h, 'QueueService.update');
    const cut = h.request('PATCH', `/api/v1/queue/${body.id}`, { copies: 1 });
    await paused.entered;
    await control(printers[0].control, 'finish');
    await itemUntil(h, body.id, (i) => i.dispatches[0]?.state === 'completed', 'the copy completed');
    paused.open();
    expect((await cut).status).toBe(200);
    await settle(h);
    await h.service.context.dispatcher.idle();
    expect(await item(h, body.id)).toMatchObject({ status: 'completed', copies: 1, completed: 1, remaining: 0 });
  });
});
