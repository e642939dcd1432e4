/**
 * Printers added at the same time. A printer added without an id gets one from its name (the first free of
 * name, name-2, ...): two added at once under one name must both be added, not one refused as if its caller had
 * asked for an id that exists. The window is held open by pausing the store's "is this id taken?" answer.
 */
import { bambu, startService, type Harness } from '../helpers/service';

describe('printers: adds racing each other', () => {
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
});
