/**
 * Spoolman mode: Spoolman's spools, kept fresh by a poll (and after every
 * usage report), the slot -> Spoolman spool map Printfarm keeps itself, and
 * the outbox of usage not yet reported.
 *
 * The outbox is the `filament_usage` rows with spoolman_state "pending",
 * sent in order, one at a time; the first failure stops the round (Spoolman
 * is down: the rest waits, nothing is lost). Before each PUT the spool's
 * `used_weight` is stored; a row whose earlier attempt's answer was lost (a
 * timeout, a kill) is first checked against it, so a use that did arrive is
 * never sent twice.
 */
import type { Logger } from 'pino';
import type { Store } from '../../db';
import type { SlotRef } from '../../db/repositories/spools';
import type { SettingsService } from '../../settings';
import { nowIso } from '../../util/time';
import { MAX_SPOOLS, SpoolmanClient, SpoolmanError, type SpoolmanSpool } from './client';
import { SpoolmanFeed } from './feed';

export interface SpoolmanHealth {
  status: 'ok' | 'degraded';
  pending_usage: number;
  last_error: string | null;
  last_ok_at: string | null;
}

export interface SpoolmanOptions {
  /** Between polls of the spool list (default 30 s). */
  pollMs?: number;
  /** After a failure (default 5 s). */
  retryMs?: number;
  timeoutMs?: number;
}

const OUTBOX_BATCH = 100;
const key = (printerId: string, slot: number) => `${printerId}\u0000${slot}`;

export class SpoolmanInventory {
  private client: SpoolmanClient | null = null;
  private feed: SpoolmanFeed | null = null;
  private clientUrl = '';
  private readonly spools = new Map<number, SpoolmanSpool>();
  private readonly slots = new Map<string, number>();
  private readonly slotOfSpool = new Map<number, SlotRef>();
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private again = false;
  private closed = false;
  private lastError: string | null = null;
  private lastOkAt: string | null = null;
  private pending = 0;

  constructor(
    private readonly store: Store,
    private readonly settings: SettingsService,
    private readonly log: Logger,
    /** Told the ids of spools whose figures changed (for spool_update / spool_low). */
    private readonly onChange: (ids: number[]) => void,
    private readonly options: SpoolmanOptions = {},
  ) {}

  get enabled(): boolean {
    return this.settings.get('spoolman_url') !== '';
  }

  async start(): Promise<void> {
    await this.loadSlots();
    this.pending = await this.store.filamentUsage.countPendingSpoolman();
    this.sync();
  }

  close(): Promise<void> {
    this.closed = true;
    this.feed?.close();
    this.feed = null;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    return this.running ?? Promise.resolve();
  }

  /** Refreshes the spools and sends the outbox now (after usage was written, or the URL changed). */
  sync(): void {
    if (this.closed) return;
    if (this.running) {
      this.again = true;
      return;
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.running = this.round()
      .catch((err) => this.log.error({ err }, 'Spoolman sync failed'))
      .finally(() => {
        this.running = null;
        if (this.closed) return;
        if (this.again) {
          this.again = false;
          return this.sync();
        }
        this.timer = setTimeout(() => this.sync(), this.lastError ? (this.options.retryMs ?? 5000) : (this.options.pollMs ?? 30_000));
        this.timer.unref();
      });
  }

  /** Waits for the round under way (tests). */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  health(): SpoolmanHealth {
    return { status: this.lastError || this.pending > 0 ? 'degraded' : 'ok', pending_usage: this.pending, last_error: this.lastError, last_ok_at: this.lastOkAt };
  }

  list(): SpoolmanSpool[] {
    return [...this.spools.values()].sort((a, b) => a.id - b.id);
  }

  get(id: number): SpoolmanSpool | undefined {
    return this.spools.get(id);
  }

  slotOf(id: number): SlotRef | null {
    return this.slotOfSpool.get(id) ?? null;
  }

  spoolIn(printerId: string, slot: number): SpoolmanSpool | null {
    const id = this.slots.get(key(printerId, slot));
    return id === undefined ? null : (this.spools.get(id) ?? null);
  }

  spoolIdIn(printerId: string, slot: number): number | null {
    return this.slots.get(key(printerId, slot)) ?? null;
  }

  /** Reads one spool from Spoolman now (an assignment checks the spool exists). */
  async fetch(id: number): Promise<SpoolmanSpool> {
    const spool = await this.clientNow().spool(id);
    this.spools.set(spool.id, spool);
    return spool;
  }

  /** Stores the slot of a Spoolman spool, and makes its Spoolman location say where it is (best effort). */
  async assign(spoolmanId: number, at: SlotRef, printerName: string): Promise<void> {
    await this.store.spools.assignSpoolman(spoolmanId, at, nowIso());
    await this.loadSlots();
    const location = `${printerName} ${at.slot === 254 ? 'external spool' : `slot ${at.slot}`}`;
    await this.clientNow()
      .locate(spoolmanId, location)
      .then(() => {
        const s = this.spools.get(spoolmanId);
        if (s) this.spools.set(spoolmanId, { ...s, location });
      })
      .catch((err) => this.log.warn({ spool_id: spoolmanId, err: (err as Error).message }, 'could not set the spool\'s location in Spoolman'));
  }

  async unassign(at: SlotRef): Promise<number | null> {
    const id = this.spoolIdIn(at.printer_id, at.slot);
    await this.store.spools.unassignSpoolman(at);
    await this.loadSlots();
    return id;
  }

  private async loadSlots(): Promise<void> {
    const rows = await this.store.spools.spoolmanSlots();
    this.slots.clear();
    this.slotOfSpool.clear();
    for (const r of rows) {
      this.slots.set(key(r.printer_id, r.slot), r.spoolman_id);
      this.slotOfSpool.set(r.spoolman_id, { printer_id: r.printer_id, slot: r.slot });
    }
  }

  private clientNow(): SpoolmanClient {
    const url = this.settings.get('spoolman_url');
    if (!this.client || this.clientUrl !== url) {
      this.client = new SpoolmanClient(url, this.options.timeoutMs ?? 5000);
      this.clientUrl = url;
      this.spools.clear();
    }
    return this.client;
  }

  /** Follows Spoolman's change feed for the configured address (none without one). */
  private follow(): void {
    const url = this.enabled ? this.settings.get('spoolman_url') : '';
    if (this.feed?.url === url || this.closed) return;
    this.feed?.close();
    this.feed = url
      ? new SpoolmanFeed(url, {
          changed: (spool) => {
            const before = this.spools.get(spool.id);
            // The feed may add what no poll listed, but not past a poll's own cap: a Spoolman that streams new ids
            // while its polls fail (nothing rebuilds the map then) would otherwise grow it without end.
            if (!before && this.spools.size >= MAX_SPOOLS) return;
            this.spools.set(spool.id, spool);
            if (before?.remaining_weight !== spool.remaining_weight || before?.archived !== spool.archived || before?.location !== spool.location) this.onChange([spool.id]);
          },
          deleted: (id) => this.spools.delete(id),
        })
      : null;
  }

  private async round(): Promise<void> {
    this.follow();
    if (!this.enabled) {
      this.lastError = null;
      return;
    }
    try {
      await this.flush();
      const before = new Map(this.spools);
      const fresh = await this.clientNow().spools();
      this.spools.clear();
      for (const s of fresh) this.spools.set(s.id, s);
      const changed = fresh.filter((s) => before.get(s.id)?.remaining_weight !== s.remaining_weight || before.get(s.id)?.archived !== s.archived).map((s) => s.id);
      if (this.lastError) this.log.info('Spoolman is reachable again');
      this.lastError = null;
      this.lastOkAt = nowIso();
      if (changed.length) this.onChange(changed);
    } catch (err) {
      const message = (err as Error).message;
      if (this.lastError === null) this.log.warn({ err: message }, 'Spoolman unreachable: usage waits in the outbox');
      this.lastError = message;
    }
  }

  /** Sends the pending usage in order; throws at the first failure that is not the spool's own (Spoolman down). */
  private async flush(): Promise<void> {
    const client = this.clientNow();
    const rows = await this.store.filamentUsage.pendingSpoolman(OUTBOX_BATCH);
    for (const row of rows) {
      if (this.closed) return;
      const spoolId = row.spool_id!;
      try {
        const now = await client.spool(spoolId);
        // An earlier attempt whose answer was lost may have arrived: then it is done, not sent again.
        if (row.spoolman_used_before !== null && now.used_weight >= row.spoolman_used_before + row.grams - 0.01) {
          await this.store.filamentUsage.spoolmanSent(row.id, nowIso());
        } else {
          await this.store.filamentUsage.spoolmanAttempt(row.id, { spoolman_used_before: now.used_weight, spoolman_error: null });
          const after = await client.use(spoolId, row.grams);
          await this.store.filamentUsage.spoolmanSent(row.id, nowIso());
          if (after) this.spools.set(after.id, after);
          this.onChange([spoolId]);
        }
      } catch (err) {
        if (err instanceof SpoolmanError && (err.status === 404 || err.status === 400 || err.status === 422)) {
          // The spool is gone from Spoolman (or refuses this use): nothing to retry; kept on the job's usage.
          this.log.warn({ spool_id: spoolId, usage_id: row.id, err: err.message }, 'Spoolman refused a usage report; dropped');
          await this.store.filamentUsage.spoolmanSent(row.id, nowIso(), 'dropped', err.message.slice(0, 500));
          continue;
        }
        await this.store.filamentUsage.spoolmanAttempt(row.id, { spoolman_error: (err as Error).message.slice(0, 500) });
        throw err;
      } finally {
        this.pending = await this.store.filamentUsage.countPendingSpoolman();
      }
    }
    if (rows.length === OUTBOX_BATCH) this.again = true;
  }
}
