/**
 * Printer changes that race each other. Bringing a driver in line with the stored printer reads the record, then
 * awaits (the old driver's close) before it starts the new driver: a removal that lands in that wait must not
 * leave a driver running for a printer that no longer exists (connected to the printer for ever, its reports in
 * the live status and on /ws). The wait is held open by pausing that read; the printers are real simulators.
 * A printer removed and added again under its id starts afresh: nothing the service kept of the old one in memory
 * (its fouled plate) outlives its record.
 */
import { bambu3mf } from '../../service/simulators/seed-files';
import { control, until } from '../helpers/farm';
import { startService, type Harness } from '../helpers/service';
import { addPrinters, bambuSim, itemUntil, queueServiceOptions, simState, upload, type SimPrinter } from './queue-helpers';

/** The next read of a printer record after a printer was written answers what it read only once `open()` is called. */
function pauseReadAfterWrite(h: Harness) {
  const printers = h.service.context.store.printers;
  const update = printers.update.bind(printers);
  const get = printers.get.bind(printers);
  let armed = false;
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  let entered!: () => void;
  const reached = new Promise<void>((resolve) => (entered = resolve));
  printers.update = async (...args) => {
    const done = await update(...args);
    if (args[1].ip_address !== undefined) armed = true;
    return done;
  };
  printers.get = async (id) => {
    const record = await get(id);
    if (armed) {
      armed = false;
      entered();
      await gate;
    }
    return record;
  };
  return { entered: reached, open };
}

describe('fleet: printer changes racing each other', () => {
  let printers: SimPrinter[] = [];
  let h: Harness;
  afterEach(async () => {
    await h?.close();
    await Promise.all(printers.map((p) => p.close()));
    printers = [];
  });

  test('a printer deleted while its new address is being applied keeps no driver', async () => {
    printers = [await bambuSim('x1c-f1', 'X1C #F1')];
    h = await startService(queueServiceOptions);
    await addPrinters(h, printers);
    const paused = pauseReadAfterWrite(h);
    // The same address written again as a new string form: a link change (the driver restarts) to the same printer.
    const edit = h.put('/api/v1/printers/x1c-f1', { ip_address: 'localhost' });
    await paused.entered;
    const removal = h.del('/api/v1/printers/x1c-f1');
    await until(async () => (await h.get('/api/v1/printers/x1c-f1')).status === 404, 'the printer removed');
    paused.open();
    const [edited, removed] = await Promise.all([edit, removal]);
    expect(edited.status).toBe(200);
    expect(removed.status).toBe(200);
    expect(h.service.context.fleet.statusEventOf('x1c-f1')).toBeNull();
    expect((await h.get('/api/v1/printers')).body.printers.map((p: { id: string }) => p.id)).toEqual([]);
  });

  test('a printer edit in flight while the service stops starts no driver after the stop', async () => {
    printers = [await bambuSim('x1c-f2', 'X1C #F2')];
    h = await startService(queueServiceOptions);
    await addPrinters(h, printers);
    const fleet = h.service.context.fleet;
    const paused = pauseReadAfterWrite(h);
    const edit = h.put('/api/v1/printers/x1c-f2', { ip_address: 'localhost' });
    await paused.entered;
    const stopping = h.stop();
    await until(() => fleet.statusEventOf('x1c-f2') === null, 'the fleet retired its drivers');
    paused.open();
    await stopping;
    expect((await edit).status).toBe(200);
    expect(fleet.statusEventOf('x1c-f2')).toBeNull();
    expect(fleet.connectedPrinters()).toEqual([]);
  });

  test('a printer removed with a fouled plate and added again starts as the new record says: clear, and takes queued prints', async () => {
    printers = [await bambuSim('x1c-f3', 'X1C #F3')];
    h = await startService(queueServiceOptions);
    await addPrinters(h, printers);
    const [p] = printers;
    await control(p.control, 'print', { file: (await simState(p)).files.find((f: string) => /\.3mf$/.test(f)) });
    await until(async () => (await h.get('/api/v1/printers/x1c-f3')).body.status === 'printing', 'the hand-started print');
    await control(p.control, 'finish');
    await until(async () => (await h.get('/api/v1/printers/x1c-f3')).body.plate_state === 'needs_clearing', 'the fouled plate');
    expect((await h.del('/api/v1/printers/x1c-f3')).status).toBe(200);
    await addPrinters(h, printers);
    expect((await h.get('/api/v1/printers/x1c-f3')).body.plate_state).toBe('clear');
    const file = await upload(h, 'Again.gcode.3mf', bambu3mf({ model: 'X1C' }));
    const { body } = await h.post('/api/v1/queue', { file_id: file });
    const started = await itemUntil(h, body.id, (i) => i.dispatches[0]?.state === 'printing' || i.waiting_reason !== null, 'a start or a reason');
    expect(started).toMatchObject({ waiting_reason: null, dispatches: [{ printer_id: 'x1c-f3', state: 'printing' }] });
  });

  test('a printer deactivated while its driver reports it connected ends offline, not online', async () => {
    printers = [await bambuSim('x1c-f4', 'X1C #F4')];
    h = await startService(queueServiceOptions);
    const store = h.service.context.store.printers;
    const update = store.update.bind(store);
    let connected!: () => void;
    const reached = new Promise<void>((resolve) => (connected = resolve));
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    // The driver's "connected" is being stored (held here) when the deactivation comes.
    store.update = async (id, patch) => {
      if (patch.connection_status === 'connected') {
        store.update = update;
        connected();
        await gate;
      }
      return update(id, patch);
    };
    expect((await h.post('/api/v1/printers', printers[0].body)).status).toBe(201);
    await reached;
    const deactivating = h.put('/api/v1/printers/x1c-f4', { is_active: false });
    await until(async () => (await h.get('/api/v1/printers/x1c-f4')).body.is_active === false, 'the deactivation stored');
    open();
    expect((await deactivating).status).toBe(200);
    expect((await h.get('/api/v1/printers/x1c-f4')).body).toMatchObject({ is_active: false, status: 'offline', connection_status: 'disconnected' });
  });
});
