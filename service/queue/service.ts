/**
 * The print queue as the API sees it: add, list, change, cancel, hold and
 * release items. Every change is stored first, then announced (queue_update)
 * and handed to the dispatcher, which decides what starts where.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { DomainError } from '../errors';
import type { Store } from '../db';
import type { FileRecord } from '../db/repositories/files';
import type { DispatchRecord, QueueItemRecord, QueueItemStatus, QueueVariant } from '../db/repositories/queue';
import type { EventBus } from '../events';
import type { CreateQueueItemInput, MoveQueueItemInput, QueueItemView, QueueListFilter, UpdateQueueItemInput } from '../schemas/queue';
import type { SettingsService } from '../settings';
import { nowIso } from '../util/time';
import type { FactsCache } from './facts-cache';
import { copyCounts, derivedStatus, itemView } from './views';
import { paginationOf } from '../util/pagination';

/** What the service needs of the dispatcher: a nudge after every change. */
export interface DispatchTrigger {
  wake(reason: string): void;
  /** Derives the item's status again from its dispatches as they are now (one item at a time, item-settle.ts). */
  settle(itemId: string, failure: null): Promise<void>;
}

const TERMINAL: readonly QueueItemStatus[] = ['completed', 'failed', 'cancelled'];

export class QueueService {
  constructor(
    private readonly store: Store,
    private readonly bus: EventBus,
    private readonly settings: SettingsService,
    private readonly facts: FactsCache,
    private readonly trigger: DispatchTrigger,
  ) {}

  async create(input: CreateQueueItemInput): Promise<QueueItemView> {
    const list = 'files' in input ? input.files : null;
    const variants: QueueVariant[] = list ?? [{ file_id: (input as { file_id: string }).file_id, plate: (input as { plate: number }).plate }];
    const seen = new Set<string>();
    const files: FileRecord[] = [];
    for (const [i, v] of variants.entries()) {
      if (seen.has(`${v.file_id}/${v.plate}`)) throw invalid(`files.${i}.file_id`, 'the same file and plate is given twice');
      seen.add(`${v.file_id}/${v.plate}`);
      files.push(await this.checkVariant(v, list ? `files.${i}` : null));
    }
    const file = files[0];
    const now = nowIso();
    const item: QueueItemRecord = {
      id: randomUUID().replace(/-/g, '').slice(0, 16),
      file_id: variants[0].file_id,
      name: input.name ?? file.filename.replace(/(\.gcode)?\.(3mf|gcode|bgcode|gco|g)$/i, ''),
      plate: variants[0].plate,
      files: list,
      // Decided by the store when it inserts the item: last among the open items of its priority.
      position: 0,
      copies: input.copies,
      priority: input.priority,
      status: 'queued',
      waiting_reason: null,
      failures_in_row: 0,
      target: input.target ?? null,
      requirements: input.requirements ?? null,
      options: input.options ?? null,
      start_after: input.start_after ? new Date(input.start_after).toISOString() : null,
      finish_by: input.finish_by ? new Date(input.finish_by).toISOString() : null,
      created_at: now,
      updated_at: now,
    };
    await this.store.queue.insertItem(item);
    const view = await this.publish(item.id);
    this.trigger.wake('item added');
    return view;
  }

  async list(q: QueueListFilter) {
    const { items, total } = await this.store.queue.listItems({ statuses: q.status ? [q.status] : undefined, page: q.page, limit: q.limit });
    const dispatches = await this.store.queue.dispatchesOf(items.map((i) => i.id));
    return {
      items: items.map((i) => itemView(i, dispatches.get(i.id) ?? [])),
      pagination: paginationOf(q, total),
    };
  }

  async detail(id: string): Promise<QueueItemView> {
    const item = await this.require(id);
    return itemView(item, (await this.store.queue.dispatchesOf([id])).get(id) ?? []);
  }

  async update(id: string, input: UpdateQueueItemInput): Promise<QueueItemView> {
    const item = await this.require(id);
    if (TERMINAL.includes(item.status)) throw conflict(item, `Queue item "${id}" is ${item.status} and can no longer change`);
    const dispatches = (await this.store.queue.dispatchesOf([id])).get(id) ?? [];
    let started: number | undefined;
    if (input.copies !== undefined) {
      const c = copyCounts(item.copies, dispatches);
      started = c.completed + c.underWay;
      if (input.copies < started) throw invalid('copies', `${started} copies are completed or under way; copies cannot go below that`);
    }
    const patch: Partial<QueueItemRecord> = { updated_at: nowIso() };
    if (input.name !== undefined) patch.name = input.name;
    // A new priority puts the item last among the open items of that priority (the store decides the place).
    const newPriority = input.priority !== undefined && input.priority !== item.priority ? input.priority : undefined;
    if (newPriority !== undefined) patch.priority = newPriority;
    if (input.copies !== undefined) patch.copies = input.copies;
    if (input.target !== undefined) patch.target = input.target;
    if (input.requirements !== undefined) patch.requirements = input.requirements;
    if (input.start_after !== undefined) patch.start_after = input.start_after === null ? null : new Date(input.start_after).toISOString();
    if (input.finish_by !== undefined) patch.finish_by = input.finish_by === null ? null : new Date(input.finish_by).toISOString();
    const next = { ...item, ...patch };
    // More or fewer copies can complete the item or send it back to the queue.
    patch.status = derivedStatus(next, dispatches, this.settings.get('queue_max_attempts'));
    // New copies are written only over the count they were checked against (a copy claimed meanwhile conflicts).
    const written =
      newPriority === undefined
        ? await this.store.queue.transitionItem(id, [item.status], patch, started)
        : await this.store.queue.transitionItemToPriority(id, [item.status], { ...patch, priority: newPriority }, started);
    if (!written) throw conflict(item, `Queue item "${id}" changed meanwhile; try again`);
    // The status above came from the dispatches as read: a copy that ended since then is settled again now.
    await this.trigger.settle(id, null);
    const view = await this.publish(id);
    this.trigger.wake('item changed');
    return view;
  }

  /** Cancels the copies not yet started (a claimed or uploading copy is stopped before it starts); printing copies go on. */
  async cancel(id: string): Promise<QueueItemView> {
    const item = await this.require(id);
    if (TERMINAL.includes(item.status)) throw conflict(item, `Queue item "${id}" is already ${item.status}`);
    const now = nowIso();
    if (!(await this.store.queue.transitionItem(id, [item.status], { status: 'cancelled', waiting_reason: null, updated_at: now }))) {
      throw conflict(item, `Queue item "${id}" changed meanwhile; try again`);
    }
    for (const d of (await this.store.queue.dispatchesOf([id])).get(id) ?? []) {
      await this.store.queue.transitionDispatch(d.id, ['claimed', 'uploading'], { state: 'cancelled', error: 'the queue item was cancelled before this copy started', updated_at: now });
    }
    return this.publish(id);
  }

  async hold(id: string): Promise<QueueItemView> {
    const item = await this.require(id);
    if (item.status === 'held') return this.detail(id);
    if (TERMINAL.includes(item.status)) throw conflict(item, `Queue item "${id}" is ${item.status} and cannot be held`);
    if (!(await this.store.queue.transitionItem(id, [item.status], { status: 'held', waiting_reason: 'held', updated_at: nowIso() }))) {
      throw conflict(item, `Queue item "${id}" changed meanwhile; try again`);
    }
    return this.publish(id);
  }

  async release(id: string): Promise<QueueItemView> {
    const item = await this.require(id);
    if (item.status !== 'held') throw conflict(item, `Queue item "${id}" is ${item.status}, not held`);
    const dispatches = (await this.store.queue.dispatchesOf([id])).get(id) ?? [];
    const status = derivedStatus({ ...item, status: 'queued' }, dispatches, this.settings.get('queue_max_attempts'));
    if (!(await this.store.queue.transitionItem(id, ['held'], { status, waiting_reason: null, updated_at: nowIso() }))) {
      throw conflict(item, `Queue item "${id}" changed meanwhile; try again`);
    }
    // A copy that ended after the read above was settled while the item was held (it stayed held): settled again
    // now, or the item would stay printing (or queued) with every copy done.
    await this.trigger.settle(id, null);
    const view = await this.publish(id);
    this.trigger.wake('item released');
    return view;
  }

  /**
   * Moves an open item within its priority: just before another item of that priority, or to a 1-based place
   * among them. The items of that priority get the positions 1, 2, ... in their new order (read and written by
   * the store in one step: adds and other moves wait for it).
   */
  async move(id: string, to: MoveQueueItemInput): Promise<QueueItemView> {
    const item = await this.require(id);
    if (TERMINAL.includes(item.status)) throw conflict(item, `Queue item "${id}" is ${item.status} and has no place in the queue`);
    if ('before' in to && to.before === id) throw invalid('before', 'an item cannot be moved before itself');
    const place = (others: QueueItemRecord[]) => ('before' in to ? others.findIndex((i) => i.id === to.before) : to.position - 1);
    const outcome = await this.store.queue.moveItem(id, item.priority, place, nowIso());
    if (outcome === 'gone') throw conflict(item, `Queue item "${id}" changed meanwhile; try again`);
    if (outcome === 'unplaced' && 'before' in to) {
      const other = await this.store.queue.getItem(to.before);
      if (!other) throw new DomainError(404, 'QUEUE_ITEM_NOT_FOUND', `Queue item "${to.before}" not found`, { item_id: to.before });
      throw invalid('before', TERMINAL.includes(other.status) ? `item "${to.before}" is ${other.status}` : `item "${to.before}" has priority ${other.priority}, not ${item.priority}; change the priority to move across priorities`);
    }
    const view = await this.publish(id);
    this.trigger.wake('item moved');
    return view;
  }

  /** Counts by status ("3 queued, 2 printing"). */
  counts(): Promise<Record<string, number>> {
    return this.store.queue.countByStatus();
  }

  /** Announces an item as it is stored now (queue_update) and returns its view. */
  async publish(id: string, known?: { item: QueueItemRecord; dispatches: DispatchRecord[] }): Promise<QueueItemView> {
    const view = known ? itemView(known.item, known.dispatches) : await this.detail(id);
    this.bus.emit('queue_update', view);
    return view;
  }

  private async require(id: string): Promise<QueueItemRecord> {
    const item = await this.store.queue.getItem(id);
    if (!item) throw new DomainError(404, 'QUEUE_ITEM_NOT_FOUND', `Queue item "${id}" not found`, { item_id: id });
    return item;
  }

  /** A variant that can be queued: a local print file with the plate sliced. Its file record. */
  private async checkVariant(v: QueueVariant, field: string | null): Promise<FileRecord & { local_path: string }> {
    const at = (name: string) => (field ? `${field}.${name}` : name);
    const file = await this.printableFile(v.file_id);
    const facts = await this.facts.get(file, v.plate).catch((err: Error) => {
      throw invalid(at('file_id'), `the file cannot be read as a print file: ${err.message}`);
    });
    if (facts.format === 'other') throw invalid(at('file_id'), 'only .3mf, .gcode and .bgcode files can be queued');
    if (facts.format === '3mf' && facts.sliced_plates.length && !facts.sliced_plates.includes(v.plate)) {
      throw invalid(at('plate'), `the file has sliced plates ${facts.sliced_plates.join(', ')}, not plate ${v.plate}`);
    }
    if (facts.format === '3mf' && facts.sliced_plates.length === 0) throw invalid(at('file_id'), 'the 3MF holds no sliced plate (slice it and export a .gcode.3mf)');
    return file;
  }

  private async printableFile(fileId: string): Promise<FileRecord & { local_path: string }> {
    const file = await this.store.files.get(fileId);
    if (!file) throw new DomainError(404, 'FILE_NOT_FOUND', `File "${fileId}" not found`, { file_id: fileId });
    if (!file.local_path || !fs.existsSync(file.local_path)) {
      throw new DomainError(409, 'NO_LOCAL_COPY', `File "${fileId}" has no local copy; upload it or download it first`, { file_id: fileId, status: file.status });
    }
    return file as FileRecord & { local_path: string };
  }
}

function invalid(field: string, message: string): DomainError {
  return new DomainError(422, 'VALIDATION_ERROR', `Invalid body: ${field}: ${message}`, { location: 'body', fields: [{ field, message, code: 'invalid_value' }] });
}

function conflict(item: QueueItemRecord, message: string): DomainError {
  return new DomainError(409, 'QUEUE_ITEM_STATE', message, { item_id: item.id, status: item.status });
}

