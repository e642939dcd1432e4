/**
 * The store's claim of a printer for a copy checks the item in the same transaction: only a queued item with a
 * copy left to start gets a printer, also when two claims for its last copy are made at once. A change of copies
 * is written only over the count of started copies it was checked against. On both databases.
 */
import type { QueueItemRecord } from '../../../service/db/repositories/queue';
import { newDispatch } from '../../../service/queue/queued-start';
import { dialectStore } from '../../helpers/dialect-store';
import { describeDialects } from '../../helpers/dialects';
import { queueItemRecord } from '../../helpers/queue-records';

const variant = { file_id: 'file-1', plate: 1 };

describeDialects('queue claims', (db) => {
  const store = dialectStore(db);

  const claimOn = (item: QueueItemRecord, printer: string, attempt = 1) => store.queue.claim(newDispatch(item, { id: printer, type: 'bambu_lab' }, 'Part.gcode.3mf', variant, attempt));

  test.each(['held', 'cancelled', 'completed'] as const)('a %s item gets no printer', async (status) => {
    const item = queueItemRecord({ id: `item-${status}`, file_id: 'file-1', name: 'Part', status });
    await store.queue.insertItem(item);
    expect(await claimOn(item, 'x1c-a')).toBe(false);
    expect((await store.queue.dispatchesOf([item.id])).get(item.id)).toEqual([]);
  });

  test('an item whose copies are all started gets no further printer', async () => {
    const item = queueItemRecord({ id: 'item-full', file_id: 'file-1', name: 'Part', copies: 2 });
    await store.queue.insertItem(item);
    expect(await claimOn(item, 'x1c-a', 1)).toBe(true);
    expect(await claimOn(item, 'x1c-b', 2)).toBe(true);
    expect(await claimOn(item, 'x1c-c', 3)).toBe(false);
  });

  test('two claims at once for the last copy, on two printers: one printer gets it', async () => {
    const item = queueItemRecord({ id: 'item-race', file_id: 'file-1', name: 'Part', copies: 1 });
    await store.queue.insertItem(item);
    const won = await Promise.all([claimOn(item, 'x1c-a'), claimOn(item, 'x1c-b')]);
    expect(won.filter(Boolean)).toHaveLength(1);
    expect((await store.queue.dispatchesOf([item.id])).get(item.id)).toHaveLength(1);
  });

  test('copies are written only over the started count they were checked against', async () => {
    const item = queueItemRecord({ id: 'item-copies', file_id: 'file-1', name: 'Part', copies: 3 });
    await store.queue.insertItem(item);
    expect(await claimOn(item, 'x1c-a')).toBe(true);
    expect(await store.queue.transitionItem(item.id, ['queued'], { copies: 1 }, 0)).toBe(false);
    expect(await store.queue.transitionItem(item.id, ['queued'], { copies: 1 }, 1)).toBe(true);
    expect((await store.queue.getItem(item.id))?.copies).toBe(1);
  });
});
