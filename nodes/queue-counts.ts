/**
 * The queue node's light: how many items are queued, printing and held, kept
 * from one GET /queue at start (per open status, bounded) and then from every
 * queue_update frame. A frame that arrived while the list was being read wins
 * over the list (it is newer).
 */
import type { PrintfarmClient } from '../service/client';

export type OpenStatus = 'queued' | 'printing' | 'held';
const OPEN: readonly OpenStatus[] = ['queued', 'printing', 'held'];
/** Pages of 100 read per status at start: a farm with more open items shows a floor, not a hang. */
const MAX_PAGES = 20;

export interface QueueCountsView {
  queued: number;
  printing: number;
  held: number;
}

export class QueueCounts {
  private readonly open = new Map<string, OpenStatus>();
  /** Items a frame told about before the initial list was read (the list must not undo them). */
  private readonly seen = new Set<string>();
  private loaded = false;

  /**
   * Reads the open items (rejects when the service does not answer; the frames still count). Called
   * again after /ws was down: what changed meanwhile sent no frames, so the list replaces what was known.
   */
  async load(client: PrintfarmClient): Promise<void> {
    const known = new Map(this.open);
    this.loaded = false;
    this.seen.clear();
    this.open.clear();
    try {
      await this.read(client);
    } catch (err) {
      for (const [id, status] of known) if (!this.seen.has(id) && !this.open.has(id)) this.open.set(id, status);
      this.loaded = true;
      throw err;
    }
  }

  private async read(client: PrintfarmClient): Promise<void> {
    for (const status of OPEN) {
      for (let page = 1; page <= MAX_PAGES; page++) {
        const list = await client.queue.list({ status, page, limit: 100 });
        for (const item of list.items) if (!this.seen.has(item.id)) this.open.set(item.id, status);
        if (!list.pagination.has_next) break;
      }
    }
    this.loaded = true;
    this.seen.clear();
  }

  /** Applies a queue_update's item. */
  update(item: { id: string; status: string }): void {
    if (!this.loaded) this.seen.add(item.id);
    if ((OPEN as readonly string[]).includes(item.status)) this.open.set(item.id, item.status as OpenStatus);
    else this.open.delete(item.id);
  }

  get counts(): QueueCountsView {
    const c: QueueCountsView = { queued: 0, printing: 0, held: 0 };
    for (const status of this.open.values()) c[status]++;
    return c;
  }
}
