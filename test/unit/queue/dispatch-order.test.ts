/**
 * The dispatches of a queue item come back in claim order. Two copies claimed
 * in one dispatcher pass can share a millisecond (created_at) and dispatch ids
 * are random, so the attempt number settles the order (the least_used choice
 * reads "fewest hours first" from it).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openStore, type Store } from '../../../service/db';
import { newDispatch } from '../../../service/queue/queued-start';
import { queueItemRecord } from '../../helpers/queue-records';

const NOW = '2026-11-26T10:00:00.000Z';
let dir: string;
let store: Store;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-dispatch-order-'));
  store = await openStore(dir);
});

afterAll(async () => {
  await store.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

test('copies claimed in the same millisecond list in claim order, whatever their ids', async () => {
  const item = queueItemRecord({ id: 'item-order-1', file_id: 'file-1', name: 'Wear', copies: 3, created_at: NOW, updated_at: NOW });
  await store.queue.insertItem(item);
  const variant = { file_id: 'file-1', plate: 1 };
  // Claimed b, c, a, all at NOW; their ids sort the other way round (z..., y..., x...).
  const claims = [
    { printer: 'x1c-b', id: 'zzzz000000000001' },
    { printer: 'x1c-c', id: 'yyyy000000000002' },
    { printer: 'x1c-a', id: 'xxxx000000000003' },
  ];
  for (const [i, c] of claims.entries()) {
    const dispatch = { ...newDispatch(item, { id: c.printer, type: 'bambu_lab' }, 'Wear.gcode.3mf', variant, i + 1), id: c.id, created_at: NOW, updated_at: NOW };
    expect(await store.queue.claim(dispatch)).toBe(true);
  }
  const listed = (await store.queue.dispatchesOf([item.id])).get(item.id) ?? [];
  expect(listed.map((d) => d.printer_id)).toEqual(['x1c-b', 'x1c-c', 'x1c-a']);
  expect(listed.map((d) => d.attempt)).toEqual([1, 2, 3]);
});
