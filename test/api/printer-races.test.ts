/**
 * Printers added at the same time. A printer added without an id gets one from its name (the first free of
 * name, name-2, ...): two added at once under one name must both be added, not one refused as if its caller had
 * asked for an id that exists. The window is held open by pausing the store's "is this id taken?" answer.
 */
import { bambu, expectError, startService, type Harness } from '../helpers/service';
import { connectWs } from '../helpers/ws';

/** The next read of a printer record answers what it read only once `open()` is called; later reads pass. */
function pauseNextRead(h: Harness) {
  const store = h.service.context.store.printers;
  const get = store.get.bind(store);
  let entered!: () => void;
  const reached = new Promise<void>((resolve) => (entered = resolve));
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  store.get = async (id) => {
    store.get = get;
    const record = await get(id);
    entered();
    await gate;
    return record;
  };
  return { entered: reached, open };
}

describe('printers: changes racing each other', () => {
  let h: Harness;
  beforeEach(async () => {
    h = await startService();
  });
  afterEach(() => h.close());

  test('two printers added at once under one name without ids both get added, under different ids', async () => {
    const store = h.service.context.store.printers;
    const exists = store.exists.bind(store);
    let asked = 0;
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    let entered!: () => void;
    const both = new Promise<void>((resolve) => (entered = resolve));
    // Both adds find the id free before either stores its printer.
    store.exists = async (id) => {
      const taken = await exists(id);
      if (++asked === 2) {
        store.exists = exists;
        entered();
      }
      await gate;
      return taken;
    };
    const body = (serial: string) => {
      const { id: _id, ...rest } = bambu('unused', { name: 'Farm X1C', serial_number: serial, is_active: false });
      return rest;
    };
    const adding = Promise.all([h.post('/api/v1/printers', body('01S00A000000011')), h.post('/api/v1/printers', body('01S00A000000012'))]);
    await both;
    open();
    const answers = await adding;
    expect(answers.map((a) => a.status)).toEqual([201, 201]);
    expect(answers.map((a) => a.body.id).sort()).toEqual(['farm-x1c', 'farm-x1c-2']);
    const listed = (await h.get('/api/v1/printers')).body.printers.map((p: { id: string; name: string }) => [p.id, p.name]);
    expect(listed.sort()).toEqual([['farm-x1c', 'Farm X1C'], ['farm-x1c-2', 'Farm X1C']]);
  });

  test('a printer changed while it is being deleted: the change answers 404 and announces no printer after its removal', async () => {
    expect((await h.post('/api/v1/printers', bambu('x1c-p1', { is_active: false }))).status).toBe(201);
    const ws = await connectWs(h.base);
    try {
      const read = pauseNextRead(h);
      const change = h.put('/api/v1/printers/x1c-p1', { name: 'Renamed' });
      await read.entered;
      expect((await h.del('/api/v1/printers/x1c-p1')).status).toBe(200);
      read.open();
      expectError(await change, 404, 'PRINTER_NOT_FOUND');
      expect((await h.get('/api/v1/printers')).body.printers).toEqual([]);
      // A later printer's frame marks the end: by then the removal must be the last word on x1c-p1.
      expect((await h.post('/api/v1/printers', bambu('x1c-p2', { is_active: false }))).status).toBe(201);
      await ws.next((f) => f.type === 'printer_status' && f.data.printer_id === 'x1c-p2');
      const changes = ws.frames.filter((f) => f.type === 'printer_status' && f.data.printer_id === 'x1c-p1').map((f) => f.data.change);
      expect(changes[changes.length - 1]).toBe('deleted');
    } finally {
      await ws.close();
    }
  });

  test('a printer deleted twice at once: one removal answers 200, the other 404', async () => {
    expect((await h.post('/api/v1/printers', bambu('x1c-p3', { is_active: false }))).status).toBe(201);
    const read = pauseNextRead(h);
    const first = h.del('/api/v1/printers/x1c-p3');
    await read.entered;
    expect((await h.del('/api/v1/printers/x1c-p3')).status).toBe(200);
    read.open();
    expectError(await first, 404, 'PRINTER_NOT_FOUND');
  });

  test('a printer deactivated while its address is being changed stays offline, not "configuring" for ever', async () => {
    expect((await h.post('/api/v1/printers', bambu('x1c-p4'))).status).toBe(201);
    // The address change has read the printer (active) and waits before it writes.
    const read = pauseNextRead(h);
    const readdress = h.put('/api/v1/printers/x1c-p4', { ip_address: '192.168.1.44' });
    await read.entered;
    expect((await h.put('/api/v1/printers/x1c-p4', { is_active: false })).status).toBe(200);
    read.open();
    expect((await readdress).status).toBe(200);
    expect((await h.get('/api/v1/printers/x1c-p4')).body).toMatchObject({ ip_address: '192.168.1.44', is_active: false, status: 'offline', connection_status: 'disconnected' });
  });
});
