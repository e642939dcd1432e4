/**
 * Follows what the printers report loaded, off the hot report path: a
 * report is looked at only when the filament part of it (trays, their RFID
 * identities, the tray feeding the nozzle) differs from the last one of that
 * printer, and the work runs after the report, one printer at a time. Printers take turns too, a few at a
 * time (util/work-queue.ts): a farm that connects at once (a start, a network back) sent every printer's first
 * report in a burst, and every printer's sync put its statements before the database's other users at once.
 *
 * Bambu spools with an RFID tag (`tray_uuid` not all zeros) are found by that
 * identity or created, with the type, colour and remaining percentage the
 * AMS reports, and put in the slot the AMS has them in; an RFID spool no
 * longer reported in its slot leaves it. Spools without a tag are assigned by
 * hand (PUT /printers/{id}/slots/{slot}). The AMS figure is taken when a
 * spool is (re)loaded; while it stays in its slot, the prints' grams count.
 */
import type { Logger } from 'pino';
import type { Store } from '../db';
import type { PrinterMaterial, PrinterState } from '../printers/driver';
import { RetryLater, type RetryLaterOptions } from '../util/retry-later';
import { nowIso } from '../util/time';
import { WorkQueue } from '../util/work-queue';
import type { SpoolService } from './spools';
import type { FilamentUsageService } from './usage';

/** A spool whose tray does not report its weight: Bambu sells 1 kg spools. */
const DEFAULT_SPOOL_G = 1000;
/** Printers synced at once: two keep PostgreSQL's round trips overlapping and leave the database to requests. */
const CONCURRENCY = 2;
/** Printers waiting at most (one entry each); beyond, a printer's report is looked at afresh with its next one. */
const MAX_WAITING = 100_000;

function filamentKey(state: PrinterState): string {
  const trays = (state.materials ?? []).map((m) => `${m.slot}:${m.type}:${m.color}:${m.tray_uuid ?? ''}`).join(',');
  return `${trays}|${state.active_slot ?? ''}`;
}

export class AmsSync {
  private readonly keys = new Map<string, string>();
  /** The materials list and tray of the last report looked at: the same list again is skipped without a key. */
  private readonly last = new Map<string, { materials: PrinterState['materials']; active: number | null | undefined }>();
  private readonly pending = new Map<string, PrinterState>();
  /** Printers whose sync is queued or running: a report meanwhile only replaces their pending one. */
  private readonly busy = new Set<string>();
  private readonly work: WorkQueue;
  /** Printers whose last sync failed: their next report of any kind retries it (awaitsRetry), or a timer. */
  private readonly retries: RetryLater;
  private closed = false;

  constructor(
    private readonly store: Store,
    private readonly spools: SpoolService,
    private readonly usage: FilamentUsageService,
    private readonly log: Logger,
    retry: RetryLaterOptions = {},
  ) {
    this.retries = new RetryLater(retry);
    this.work = new WorkQueue({ name: 'spool sync', concurrency: CONCURRENCY, maxBacklog: MAX_WAITING, log, whenFull: "a printer's report is looked at afresh with its next one" });
  }

  /** Called with every report: a string compare unless the filament part changed. */
  onReport(printerId: string, state: PrinterState): void {
    if (this.closed || state.materials === undefined) return;
    const last = this.last.get(printerId);
    if (last && last.materials === state.materials && last.active === state.active_slot) return;
    this.last.set(printerId, { materials: state.materials, active: state.active_slot });
    const key = filamentKey(state);
    if (this.keys.get(printerId) === key) return;
    this.keys.set(printerId, key);
    this.usage.sawSlot(printerId, state.active_slot);
    this.pending.set(printerId, state);
    if (this.busy.has(printerId)) return;
    this.busy.add(printerId);
    if (this.work.push(() => this.drain(printerId).finally(() => this.busy.delete(printerId)), { key: printerId })) return;
    this.busy.delete(printerId);
    this.pending.delete(printerId);
    this.lookAfresh(printerId);
  }

  /** Syncs the printer's newest report until no newer one waits. */
  private async drain(printerId: string): Promise<void> {
    for (let next = this.pending.get(printerId); next && !this.closed; next = this.pending.get(printerId)) {
      const report = next;
      this.pending.delete(printerId);
      try {
        await this.sync(printerId, report.materials ?? []);
        this.retries.done(printerId);
      } catch (err) {
        // Looked at afresh with the next report (or later); a failed sync must not stop monitoring.
        this.lookAfresh(printerId);
        this.retries.failed(printerId, () => !this.busy.has(printerId) && this.onReport(printerId, report));
        this.log.error({ err, printer_id: printerId }, 'spool sync from the AMS report failed');
      }
    }
  }

  /** Whether the printer's last sync failed and waits: its next report, even one of temperatures alone, retries it. */
  awaitsRetry(printerId: string): boolean {
    return this.retries.has(printerId) && !this.busy.has(printerId);
  }

  /** The printer was removed or went away: its next report is looked at afresh, and no retry waits. */
  forget(printerId: string): void {
    this.lookAfresh(printerId);
    this.retries.done(printerId);
  }

  private lookAfresh(printerId: string): void {
    this.keys.delete(printerId);
    this.last.delete(printerId);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.retries.close();
    // What waits starts and ends at once (closed): only the sync under way is waited for.
    await this.work.idle();
  }

  async idle(): Promise<void> {
    await this.work.idle();
  }

  private async sync(printerId: string, materials: PrinterMaterial[]): Promise<void> {
    // Spoolman keeps no tray identities of Bambu's: there, spools are assigned by hand.
    if (this.spools.mode !== 'local') return;
    if (!(await this.store.printers.exists(printerId))) return;
    const tagged = new Map(materials.filter((m) => m.tray_uuid).map((m) => [m.slot, m]));
    // RFID spools that left their slot (taken out, or another spool in it).
    for (const spool of await this.store.spools.list({ printer_id: printerId, page: 1, limit: 100, order_by: 'id', order_dir: 'asc' }).then((r) => r.spools)) {
      if (!spool.rfid_uuid || spool.slot === null) continue;
      if (tagged.get(spool.slot)?.tray_uuid !== spool.rfid_uuid) await this.spools.unassign({ printer_id: printerId, slot: spool.slot });
    }
    for (const m of tagged.values()) await this.place(printerId, m);
  }

  private async place(printerId: string, m: PrinterMaterial): Promise<void> {
    const uuid = m.tray_uuid!;
    const full = m.tray_weight_g ?? DEFAULT_SPOOL_G;
    const reported = m.remaining_percent === null ? null : Math.round(((full * m.remaining_percent) / 100) * 100) / 100;
    let spool = await this.store.spools.byRfid(uuid);
    const now = nowIso();
    if (!spool) {
      spool = await this.store.spools.insert({
        material: m.type.toUpperCase(),
        color: m.color,
        brand: 'Bambu Lab',
        name: `Bambu ${m.type}`,
        diameter_mm: 1.75,
        density_g_cm3: null,
        initial_weight_g: full,
        remaining_weight_g: reported ?? full,
        cost_per_kg: null,
        location: null,
        printer_id: null,
        slot: null,
        rfid_uuid: uuid,
        archived: false,
        created_at: now,
        updated_at: now,
      });
      this.log.info({ spool_id: spool.id, printer_id: printerId, slot: m.slot }, 'RFID spool created from the AMS report');
      await this.spools.announce(spool.id, 'created');
    } else if (spool.printer_id === printerId && spool.slot === m.slot) {
      return;
    }
    // (Re)loaded: the AMS's figure is the best there is; an archived spool in a tray is in use again.
    const displaced = await this.store.spools.assign(spool.id, { printer_id: printerId, slot: m.slot }, { archived: false, ...(reported !== null ? { remaining_weight_g: reported } : {}) }, now);
    // The spool deleted (or the printer removed) since they were read: the sync fails and is retried (a new spool
    // is then made from the tag; a removed printer's sync stops at its first check).
    if (displaced === false) throw new Error(`spool ${spool.id} or printer "${printerId}" went away while the spool was being loaded`);
    await this.spools.refreshSpools(displaced !== null ? [spool.id, displaced] : [spool.id]);
    if (displaced !== null) await this.spools.announce(displaced, 'unassigned');
    await this.spools.announce(spool.id, 'assigned');
  }
}
