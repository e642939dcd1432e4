/**
 * After a dispatch changed: the item's failure count and status, stored and
 * announced. One item at a time (a chain of promises per item), so that two
 * dispatches ending together cannot both read the old count.
 */
import type { Logger } from 'pino';
import type { Store } from '../db';
import type { DispatchRecord, QueueItemRecord } from '../db/repositories/queue';
import type { SettingsService } from '../settings';
import { nowIso } from '../util/time';
import { derivedStatus } from './views';

export interface SettleDeps {
  store: Store;
  settings: SettingsService;
  log: Logger;
  publish(itemId: string, known?: { item: QueueItemRecord; dispatches: DispatchRecord[] }): Promise<unknown>;
}

export class ItemSettler {
  private readonly locks = new Map<string, Promise<unknown>>();

  constructor(
    private readonly deps: SettleDeps,
    private readonly wake: (reason: string) => void,
  ) {}

  settle(itemId: string, failure: 'reset' | 'count' | null): Promise<void> {
    const previous = this.locks.get(itemId) ?? Promise.resolve();
    const next = previous.then(async () => {
      const { store, settings } = this.deps;
      let item: QueueItemRecord | undefined;
      let dispatches: DispatchRecord[];
      let patch: Partial<QueueItemRecord> & { status: QueueItemRecord['status'] };
      // Written only over the status it was derived from: a cancel, hold or release by the API meanwhile (which does
      // not wait for this lock) is not undone; the item is then read and decided again.
      do {
        item = await store.queue.getItem(itemId);
        if (!item) return;
        dispatches = (await store.queue.dispatchesOf([itemId])).get(itemId) ?? [];
        const failures = failure === 'reset' ? 0 : failure === 'count' ? item.failures_in_row + 1 : item.failures_in_row;
        const status = derivedStatus({ ...item, failures_in_row: failures }, dispatches, settings.get('queue_max_attempts'));
        patch = { failures_in_row: failures, status, updated_at: nowIso(), ...(status !== 'queued' && status !== 'held' ? { waiting_reason: null } : {}) };
      } while (!(await store.queue.transitionItem(itemId, [item.status], patch)));
      const { status } = patch;
      if (status === 'failed') {
        for (const d of dispatches) await store.queue.transitionDispatch(d.id, ['claimed', 'uploading'], { state: 'cancelled', error: 'the queue item failed', updated_at: nowIso() });
      }
      // Announced from what was just read (the dispatches of a large item are many): a change after the read settles again.
      await this.deps.publish(itemId, status === 'failed' ? undefined : { item: { ...item, ...patch }, dispatches });
      if (failure !== null || status !== item.status) this.wake('dispatch ended');
    });
    const settled = next.catch((err) => this.deps.log.error({ err, item_id: itemId }, 'could not update the queue item'));
    this.locks.set(itemId, settled);
    void settled.finally(() => this.locks.get(itemId) === settled && this.locks.delete(itemId));
    return settled;
  }
}
