/** A stored queue item as the queue service would write it (one file, queued, no rules), for tests that write the store directly. */
import type { QueueItemRecord } from '../../service/db/repositories/queue';

export function queueItemRecord(fields: Pick<QueueItemRecord, 'id' | 'file_id' | 'name'> & Partial<QueueItemRecord>): QueueItemRecord {
  const now = new Date().toISOString();
  return {
    plate: 1,
    copies: 1,
    priority: 0,
    status: 'queued',
    waiting_reason: null,
    failures_in_row: 0,
    target: null,
    requirements: null,
    options: null,
    start_after: null,
    files: null,
    position: 0,
    finish_by: null,
    created_at: now,
    updated_at: now,
    ...fields,
  };
}
