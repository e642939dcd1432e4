/**
 * Moves in the queue that race each other: each move writes the whole order of its priority, so two moves made at
 * once must both count (as if one came after the other), not the second write the order it read before the first.
 * No printer answers here: nothing starts, the items only wait.
 */
import { bambu3mf } from '../../service/simulators/seed-files';
import { startService, type Harness } from '../helpers/service';
import { upload } from '../e2e/queue-helpers';

describe('queue: moves racing each other', () => {
  let h: Harness;
  afterEach(() => h.close());

  test('two items moved to the top at once both end at the top', async () => {
    h = await startService();
    const file = await upload(h, 'Order.gcode.3mf', bambu3mf({ model: 'X1C' }));
    const ids: string[] = [];
    for (const name of ['a', 'b', 'c', 'd']) ids.push((await h.post('/api/v1/queue', { file_id: file, name, priority: 5 })).body.id);
    const [a, b, c, d] = ids;
    // Two moves started in the same instant (what two requests arriving together come to).
    const queue = h.service.context.queue;
    await Promise.all([queue.move(d, { position: 1 }), queue.move(c, { position: 1 })]);
    const order = ((await h.get('/api/v1/queue?limit=100')).body.items as { id: string }[]).map((i) => i.id);
    expect(order.slice(2)).toEqual([a, b]);
    expect(order.slice(0, 2).sort()).toEqual([c, d].sort());
  });
});
