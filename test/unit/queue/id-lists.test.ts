/**
 * The queue's reads by a list of ids (every queued item's dispatches in a dispatcher pass, the items of the
 * copies on their way in the schedule) take any number of ids: one `in (...)` of them all passed SQLite's
 * 32766 and PostgreSQL's 65535 parameters for a queue that long, and the pass failed.
 */
import { newDispatch } from '../../../service/queue/queued-start';
import { dialectStore } from '../../helpers/dialect-store';
import { describeDialects } from '../../helpers/dialects';
import { queueItemRecord } from '../../helpers/queue-records';

describeDialects('queue reads by id lists', (db) => {
  const store = dialectStore(db, { per: 'block' });

  test('dispatchesOf and getItems answer for 70,000 ids', async () => {
    const a = queueItemRecord({ id: 'item-a', file_id: 'file-1', name: 'A', copies: 2 });
    const b = queueItemRecord({ id: 'item-b', file_id: 'file-1', name: 'B' });
    await store.queue.insertItem(a);
    await store.queue.insertItem(b);
    const sent = newDispatch(a, { id: 'x1c-a', type: 'bambu_lab' }, 'A.gcode.3mf', { file_id: 'file-1', plate: 1 }, 1);
    expect(await store.queue.claim(sent)).toBe(true);
    const ids = [...Array.from({ length: 70_000 }, (_, i) => `missing-${i}`), 'item-b', 'item-a'];

    const dispatches = await store.queue.dispatchesOf(ids);
    expect(dispatches.size).toBe(70_002);
    expect(dispatches.get('item-a')!.map((d) => d.id)).toEqual([sent.id]);
    expect(dispatches.get('item-b')).toEqual([]);
    expect(dispatches.get('missing-69999')).toEqual([]);

    const items = await store.queue.getItems(ids);
    expect([...items.keys()].sort()).toEqual(['item-a', 'item-b']);
    expect(items.get('item-b')).toMatchObject({ name: 'B', status: 'queued' });
  });
});
