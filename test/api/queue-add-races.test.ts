/**
 * Items added to the queue in the same moment, next to a move and a cancel, on both databases: every open item of
 * a priority ends with a place of its own, and the order is that of the places alone (not of creation times or
 * random ids that break ties). PostgreSQL runs the requests' transactions side by side, which is where two adds
 * used to read the same last place and share it. No printer answers here: nothing starts, the items only wait.
 */
import { bambu3mf } from '../../service/simulators/seed-files';
import { describeDialects } from '../helpers/dialects';
import { startService, type Harness } from '../helpers/service';
import { upload } from '../e2e/queue-helpers';

interface Listed {
  id: string;
  name: string;
  priority: number;
  position: number;
}

describeDialects('queue: adds racing each other and a move', (db) => {
  let h: Harness;
  let file: string;
  beforeAll(async () => {
    h = await startService(await db.options());
    file = await upload(h, 'Order.gcode.3mf', bambu3mf({ model: 'X1C' }));
  });
  afterAll(() => h.close());

  const open = async (priority: number): Promise<Listed[]> =>
    ((await h.get('/api/v1/queue?limit=100')).body.items as (Listed & { status: string })[]).filter((i) => i.priority === priority && ['queued', 'held', 'printing'].includes(i.status));
  const add = async (name: string, priority: number): Promise<string> => {
    const res = await h.post('/api/v1/queue', { file_id: file, name, priority });
    expect(res.status).toBe(201);
    return res.body.id;
  };
  /** The open items of `priority` have places of their own, and the list is in the order of the places. */
  const expectDistinctPlaces = (items: Listed[]) => {
    const places = items.map((i) => i.position);
    expect(new Set(places).size).toBe(places.length);
    expect(places).toEqual([...places].sort((a, b) => a - b));
  };

  test('twenty adds at once next to a move, a cancel and a change of priority: distinct places, the move and the old order kept', async () => {
    const old: string[] = [];
    for (const name of ['a', 'b', 'c', 'd']) old.push(await add(name, 4));
    const [a, b, c, d] = old;
    const other = await add('other', 2);
    expect((await h.post(`/api/v1/queue/${d}/move`, { position: 1 })).status).toBe(200);
    const [added, moved, cancelled, changed] = await Promise.all([
      Promise.all(Array.from({ length: 20 }, (_, i) => add(`new-${i}`, 4))),
      h.post(`/api/v1/queue/${c}/move`, { position: 1 }),
      h.del(`/api/v1/queue/${b}`),
      // An item changed to the priority goes last there, like an added one.
      h.request('PATCH', `/api/v1/queue/${other}`, { priority: 4 }),
    ]);
    expect(moved.status).toBe(200);
    expect(cancelled.status).toBeLessThan(300);
    expect(changed.status).toBe(200);
    added.push(other);
    const items = await open(4);
    expectDistinctPlaces(items);
    const order = items.map((i) => i.id);
    // The moved item first, the old ones in their order, every new one after them.
    expect(order.slice(0, 3)).toEqual([c, d, a]);
    expect(order.slice(3).sort()).toEqual([...added].sort());

    // The order stays as it is when asked again, and a further move changes nothing else in it.
    expect((await open(4)).map((i) => i.id)).toEqual(order);
    expect((await h.post(`/api/v1/queue/${order[order.length - 1]}/move`, { position: 1 })).status).toBe(200);
    const after = await open(4);
    expectDistinctPlaces(after);
    expect(after.map((i) => i.id)).toEqual([order[order.length - 1], ...order.slice(0, -1)]);
  });

  test('adds at once with the first move of a priority: none of them jumps ahead of the moved items', async () => {
    const old: string[] = [];
    for (const name of ['a', 'b', 'c']) old.push(await add(name, 6));
    const [a, b, c] = old;
    const [added, moved] = await Promise.all([Promise.all(Array.from({ length: 10 }, (_, i) => add(`new-${i}`, 6))), h.post(`/api/v1/queue/${c}/move`, { position: 1 })]);
    expect(moved.status).toBe(200);
    const items = await open(6);
    expectDistinctPlaces(items);
    const order = items.map((i) => i.id);
    expect(order.slice(0, 3)).toEqual([c, a, b]);
    expect(order.slice(3).sort()).toEqual([...added].sort());
  });

  test('items added one after the other each go last, with places 1, 2, 3, ...', async () => {
    const ids: string[] = [];
    for (const name of ['x', 'y', 'z']) ids.push(await add(name, 9));
    const items = await open(9);
    expect(items.map((i) => [i.id, i.position])).toEqual(ids.map((id, i) => [id, i + 1]));
  });
});
