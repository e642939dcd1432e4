/** Queue items as the API and /ws show them, and the item status that follows from its dispatches. */
import { OPEN_DISPATCH_STATES, UNSUCCESSFUL_DISPATCH_STATES, type DispatchRecord, type QueueItemRecord, type QueueItemStatus } from '../db/repositories/queue';
import type { QueueItemView } from '../schemas/queue';
import { startOptions } from './queued-start';
import { variantOf, variantsOf } from './variants';

export interface CopyCounts {
  completed: number;
  /** Claimed, uploading, starting or printing. */
  underWay: number;
  failed: number;
  /** Copies not started yet. */
  remaining: number;
}

export function copyCounts(copies: number, dispatches: readonly DispatchRecord[]): CopyCounts {
  let completed = 0;
  let underWay = 0;
  let failed = 0;
  for (const d of dispatches) {
    if (d.state === 'completed') completed++;
    else if (OPEN_DISPATCH_STATES.includes(d.state)) underWay++;
    else if (UNSUCCESSFUL_DISPATCH_STATES.includes(d.state)) failed++;
  }
  return { completed, underWay, failed, remaining: Math.max(0, copies - completed - underWay) };
}

/**
 * The status that follows from the copies: cancelled, failed and completed stay; held stays until released;
 * otherwise completed when every copy completed, failed after `maxAttempts` failures in a row, queued while a
 * copy is left to start, printing while copies are under way and none is left.
 */
export function derivedStatus(item: QueueItemRecord, dispatches: readonly DispatchRecord[], maxAttempts: number): QueueItemStatus {
  if (item.status === 'cancelled' || item.status === 'failed' || item.status === 'completed' || item.status === 'held') return item.status;
  const c = copyCounts(item.copies, dispatches);
  if (c.completed >= item.copies) return 'completed';
  if (item.failures_in_row >= maxAttempts) return 'failed';
  return c.remaining > 0 ? 'queued' : 'printing';
}

/** Each variant with the copies it printed: together they add up to the item's counts. */
function variantViews(item: QueueItemRecord, dispatches: readonly DispatchRecord[]): QueueItemView['files'] {
  const key = (v: { file_id: string; plate: number }) => `${v.file_id}\u0000${v.plate}`;
  const views = new Map(variantsOf(item).map((v) => [key(v), { file_id: v.file_id, plate: v.plate, printing: 0, completed: 0, failed: 0 }]));
  for (const d of dispatches) {
    const v = views.get(key(variantOf(item, d)));
    if (!v) continue;
    if (d.state === 'completed') v.completed++;
    else if (OPEN_DISPATCH_STATES.includes(d.state)) v.printing++;
    else if (UNSUCCESSFUL_DISPATCH_STATES.includes(d.state)) v.failed++;
  }
  return [...views.values()];
}

export function itemView(item: QueueItemRecord, dispatches: readonly DispatchRecord[]): QueueItemView {
  const c = copyCounts(item.copies, dispatches);
  return {
    id: item.id,
    file_id: item.file_id,
    name: item.name,
    plate: item.plate,
    copies: item.copies,
    remaining: ['cancelled', 'failed', 'completed'].includes(item.status) ? 0 : c.remaining,
    printing: c.underWay,
    completed: c.completed,
    failed: c.failed,
    priority: item.priority,
    status: item.status,
    waiting_reason: item.status === 'queued' || item.status === 'held' ? item.waiting_reason : null,
    target: item.target,
    requirements: item.requirements,
    options: startOptions(item),
    start_after: item.start_after,
    finish_by: item.finish_by,
    position: item.position,
    files: variantViews(item, dispatches),
    created_at: item.created_at,
    updated_at: item.updated_at,
    dispatches: dispatches.map((d) => ({
      id: d.id,
      printer_id: d.printer_id,
      ...variantOf(item, d),
      job_id: d.job_id,
      state: d.state,
      attempt: d.attempt,
      error: d.error,
      created_at: d.created_at,
      updated_at: d.updated_at,
    })),
  };
}
