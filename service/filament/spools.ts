/**
 * The spools of the farm and where each one is: the embedded inventory (the
 * service's own database), or Spoolman's when `spoolman_url` is set. Keeps an
 * in-memory map of the slots (a farm has dozens of spools loaded), read
 * synchronously by the printer views and the queue's filament gate, and
 * announces every change (`spool_update`) and a spool going low (`spool_low`,
 * once per crossing).
 */
import type { Logger } from 'pino';
import type { Store } from '../db';
import { isUniqueViolation } from '../db/connection';
import type { SlotRef, SpoolRecord } from '../db/repositories/spools';
import { conflict, DomainError, notFound } from '../errors';
import type { EventBus } from '../events';
import type { CreateSpoolInput, SpoolListFilter, SpoolView, UpdateSpoolInput } from '../schemas/spools';
import type { SettingsService } from '../settings';
import { paginationOf } from '../util/pagination';
import { nowIso } from '../util/time';
import { SpoolmanInventory, type SpoolmanOptions } from './spoolman/inventory';
import { localSpoolView, spoolmanSpoolView } from './views';

/** What the printer views and the queue need to know of the spool in a slot. */
export interface SlotSpool {
  id: number;
  source: 'local' | 'spoolman';
  material: string | null;
  color: string | null;
  remaining_weight_g: number | null;
  cost_per_kg: number | null;
}

const key = (printerId: string, slot: number) => `${printerId}\u0000${slot}`;

export class SpoolService {
  readonly spoolman: SpoolmanInventory;
  private readonly local = new Map<string, SpoolRecord>();
  /** The slot key of each local spool in `local`: one spool's change then touches its own entry (refreshSpools). */
  private readonly keyOf = new Map<number, string>();
  /** Spoolman spools already announced as low (Spoolman mode keeps no flag of ours). */
  private readonly lowAnnounced = new Set<number>();

  constructor(
    private readonly store: Store,
    private readonly settings: SettingsService,
    private readonly bus: EventBus,
    private readonly log: Logger,
    spoolmanOptions: SpoolmanOptions = {},
  ) {
    this.spoolman = new SpoolmanInventory(store, settings, log, (ids) => this.spoolmanChanged(ids), spoolmanOptions);
    settings.onChange((changed) => {
      if (changed.includes('spoolman_url')) this.spoolman.sync();
    });
  }

  get mode(): 'local' | 'spoolman' {
    return this.spoolman.enabled ? 'spoolman' : 'local';
  }

  private get threshold(): number {
    return this.settings.get('spool_low_threshold_g');
  }

  async start(): Promise<void> {
    await this.reloadSlots();
    await this.spoolman.start();
  }

  close(): Promise<void> {
    return this.spoolman.close();
  }

  /** The spool in a slot, for views and the queue (synchronous: from memory). */
  spoolAt(printerId: string, slot: number): SlotSpool | null {
    if (this.mode === 'spoolman') {
      const id = this.spoolman.spoolIdIn(printerId, slot);
      if (id === null) return null;
      const s = this.spoolman.get(id);
      const v = s ? spoolmanSpoolView(s, { printer_id: printerId, slot }, this.threshold) : null;
      return { id, source: 'spoolman', material: v?.material ?? null, color: v?.color ?? null, remaining_weight_g: v?.remaining_weight_g ?? null, cost_per_kg: v?.cost_per_kg ?? null };
    }
    const s = this.local.get(key(printerId, slot));
    return s ? { id: s.id, source: 'local', material: s.material, color: s.color, remaining_weight_g: s.remaining_weight_g, cost_per_kg: s.cost_per_kg } : null;
  }

  async list(q: SpoolListFilter) {
    if (this.mode === 'spoolman') return this.listSpoolman(q);
    const { spools, total } = await this.store.spools.list({
      ...q,
      below_g: q.low === true ? this.threshold : undefined,
      at_least_g: q.low === false ? this.threshold : undefined,
    });
    return { spools: spools.map((s) => localSpoolView(s, this.threshold)), pagination: paginationOf(q, total), source: 'local' as const };
  }

  private listSpoolman(q: SpoolListFilter) {
    let all = this.spoolman.list().map((s) => spoolmanSpoolView(s, this.spoolman.slotOf(s.id), this.threshold));
    if (q.material) all = all.filter((s) => s.material.toUpperCase() === q.material!.toUpperCase());
    if (q.printer_id) all = all.filter((s) => s.printer_id === q.printer_id);
    if (q.archived !== undefined) all = all.filter((s) => s.archived === q.archived);
    if (q.low !== undefined) all = all.filter((s) => s.low === q.low);
    const dir = q.order_dir === 'asc' ? 1 : -1;
    const value = (s: SpoolView) => (q.order_by === 'remaining_weight_g' ? (s.remaining_weight_g ?? 0) : q.order_by === 'updated_at' ? Date.parse(s.updated_at) : s.id);
    all.sort((a, b) => (value(a) - value(b)) * dir || a.id - b.id);
    return { spools: all.slice((q.page - 1) * q.limit, q.page * q.limit), pagination: paginationOf(q, all.length), source: 'spoolman' as const };
  }

  async detail(id: number): Promise<SpoolView> {
    if (this.mode === 'spoolman') {
      const s = this.spoolman.get(id) ?? (await this.spoolman.fetch(id).catch(() => undefined));
      if (!s) throw notFound('SPOOL_NOT_FOUND', `Spool ${id} not found in Spoolman`, { spool_id: id });
      return spoolmanSpoolView(s, this.spoolman.slotOf(id), this.threshold);
    }
    return localSpoolView(await this.require(id), this.threshold);
  }

  async create(input: CreateSpoolInput): Promise<SpoolView> {
    this.localOnly();
    const now = nowIso();
    const exists = () => conflict('SPOOL_EXISTS', `A spool with RFID ${input.rfid_uuid} exists already`, { rfid_uuid: input.rfid_uuid });
    if (input.rfid_uuid && (await this.store.spools.byRfid(input.rfid_uuid.toUpperCase()))) throw exists();
    const spool = await this.store.spools
      .insert({
        material: input.material.toUpperCase(),
        color: input.color ?? null,
        brand: input.brand ?? null,
        name: input.name ?? null,
        diameter_mm: input.diameter_mm,
        density_g_cm3: input.density_g_cm3 ?? null,
        initial_weight_g: input.initial_weight_g,
        remaining_weight_g: Math.min(input.remaining_weight_g ?? input.initial_weight_g, 100_000),
        cost_per_kg: input.cost_per_kg ?? null,
        location: input.location ?? null,
        printer_id: null,
        slot: null,
        rfid_uuid: input.rfid_uuid?.toUpperCase() ?? null,
        archived: false,
        created_at: now,
        updated_at: now,
      })
      .catch((err: unknown) => {
        // Another request (or the AMS sync) stored the same tag since the check above.
        if (isUniqueViolation(err)) throw exists();
        throw err;
      });
    return this.announce(spool.id, 'created');
  }

  async update(id: number, input: UpdateSpoolInput): Promise<SpoolView> {
    this.localOnly();
    const current = await this.require(id);
    const patch = { ...input, ...(input.material ? { material: input.material.toUpperCase() } : {}), updated_at: nowIso() };
    // An archived spool is on the shelf (or empty): it leaves its slot.
    if (input.archived === true) Object.assign(patch, { printer_id: null, slot: null });
    await this.store.spools.update(id, patch);
    if (current.printer_id !== null) await this.reloadSlots();
    return this.announce(id, 'updated');
  }

  async remove(id: number): Promise<{ id: number; message: string; deleted_at: string }> {
    this.localOnly();
    const current = await this.require(id);
    if (current.printer_id !== null) {
      throw conflict('SPOOL_ASSIGNED', `Spool ${id} is in slot ${current.slot} of printer "${current.printer_id}": take it out of the slot (or archive it) first`, {
        spool_id: id,
        printer_id: current.printer_id,
        slot: current.slot,
      });
    }
    // Loaded into a slot since it was read: not deleted; answered as if it had been in the slot before.
    if (!(await this.store.spools.deleteUnassigned(id))) return this.remove(id);
    const now = nowIso();
    this.bus.emit('spool_update', { ...localSpoolView(current, this.threshold), change: 'deleted' });
    return { id, message: 'Spool deleted', deleted_at: now };
  }

  /** Puts a spool in a printer's slot; the spool leaves any other slot, the slot's previous spool leaves it. */
  async assign(at: SlotRef, spoolId: number): Promise<SpoolView> {
    const printer = await this.requirePrinter(at.printer_id);
    if (this.mode === 'spoolman') {
      const s = await this.spoolman.fetch(spoolId).catch((err) => {
        if ((err as { status?: number }).status === 404) throw notFound('SPOOL_NOT_FOUND', `Spool ${spoolId} not found in Spoolman`, { spool_id: spoolId });
        throw new DomainError(502, 'SPOOLMAN_UNAVAILABLE', `Spoolman cannot be reached: ${(err as Error).message}`, {});
      });
      await this.spoolman.assign(s.id, at, printer.name);
      const view = spoolmanSpoolView(this.spoolman.get(s.id) ?? s, at, this.threshold);
      this.bus.emit('spool_update', { ...view, change: 'assigned' });
      return view;
    }
    const archived = () => conflict('SPOOL_ARCHIVED', `Spool ${spoolId} is archived; unarchive it before loading it`, { spool_id: spoolId });
    if ((await this.require(spoolId)).archived) throw archived();
    const displaced = await this.store.spools.assign(spoolId, at, {}, nowIso());
    // The printer removed, or the spool archived or deleted, since they were read: the store loaded nothing; say
    // which, as if it had been so before.
    if (displaced === false) {
      await this.requirePrinter(at.printer_id);
      throw (await this.require(spoolId)).archived ? archived() : new Error(`spool ${spoolId} could not be loaded`);
    }
    await this.reloadSlots();
    if (displaced !== null) await this.announce(displaced, 'unassigned');
    return this.announce(spoolId, 'assigned');
  }

  async unassign(at: SlotRef): Promise<number | null> {
    await this.requirePrinter(at.printer_id);
    if (this.mode === 'spoolman') {
      const id = await this.spoolman.unassign(at);
      const s = id === null ? undefined : this.spoolman.get(id);
      if (s) this.bus.emit('spool_update', { ...spoolmanSpoolView(s, null, this.threshold), change: 'unassigned' });
      return id;
    }
    const id = await this.store.spools.unassign(at, nowIso());
    await this.reloadSlots();
    if (id !== null) await this.announce(id, 'unassigned');
    return id;
  }

  /** A printer was removed: its spools leave its slots (they stay in the inventory). */
  async printerRemoved(printerId: string): Promise<void> {
    const local = (await this.store.spools.assigned()).filter((s) => s.printer_id === printerId);
    for (const s of local) {
      await this.store.spools.unassign({ printer_id: printerId, slot: s.slot! }, nowIso());
      await this.announce(s.id, 'unassigned');
    }
    for (const r of (await this.store.spools.spoolmanSlots()).filter((r) => r.printer_id === printerId)) await this.spoolman.unassign(r);
    await this.reloadSlots();
  }

  /** After usage was written: announce the local spools; send the Spoolman outbox. */
  async used(localIds: number[], spoolman: boolean): Promise<void> {
    if (localIds.length) await this.refreshSpools(localIds);
    for (const id of new Set(localIds)) await this.announce(id, 'used');
    if (spoolman) this.spoolman.sync();
  }

  /** Reloads the in-memory slot map (after a change from outside this service, e.g. the AMS sync). */
  async reloadSlots(): Promise<void> {
    const rows = await this.store.spools.assigned();
    this.local.clear();
    this.keyOf.clear();
    for (const s of rows) if (s.slot !== null && s.printer_id !== null) this.put(s);
  }

  /**
   * Reads these spools again into the slot map, after this service changed them (grams used, loaded by the AMS
   * sync): reloadSlots reads every loaded spool of the farm, and per job or tray of a burst that was the farm's
   * spools times the burst.
   */
  async refreshSpools(ids: Iterable<number>): Promise<void> {
    for (const id of new Set(ids)) {
      const spool = await this.store.spools.get(id);
      this.takeOut(id);
      if (spool && spool.slot !== null && spool.printer_id !== null) this.put(spool);
    }
  }

  private put(spool: SpoolRecord): void {
    const at = key(spool.printer_id!, spool.slot!);
    const before = this.local.get(at);
    if (before && before.id !== spool.id) this.keyOf.delete(before.id);
    this.local.set(at, spool);
    this.keyOf.set(spool.id, at);
  }

  private takeOut(id: number): void {
    const at = this.keyOf.get(id);
    if (at === undefined) return;
    this.keyOf.delete(id);
    if (this.local.get(at)?.id === id) this.local.delete(at);
  }

  /** spool_update for a local spool, and spool_low once when it is below the threshold. */
  async announce(id: number, change: string): Promise<SpoolView> {
    const spool = await this.require(id);
    const view = localSpoolView(spool, this.threshold);
    this.bus.emit('spool_update', { ...view, change });
    if (view.low && !spool.low_notified) {
      await this.store.spools.update(id, { low_notified: true });
      this.emitLow(view);
    } else if (!view.low && spool.low_notified && !spool.archived) {
      await this.store.spools.update(id, { low_notified: false });
    }
    return view;
  }

  private spoolmanChanged(ids: number[]): void {
    for (const id of ids) {
      const s = this.spoolman.get(id);
      if (!s) continue;
      const view = spoolmanSpoolView(s, this.spoolman.slotOf(id), this.threshold);
      this.bus.emit('spool_update', { ...view, change: 'updated' });
      if (view.low && !this.lowAnnounced.has(id)) {
        this.lowAnnounced.add(id);
        this.emitLow(view);
      } else if (!view.low) this.lowAnnounced.delete(id);
    }
  }

  private emitLow(view: SpoolView): void {
    this.log.info({ spool_id: view.id, remaining_weight_g: view.remaining_weight_g, printer_id: view.printer_id }, 'spool running low');
    this.bus.emit('spool_low', {
      id: view.id,
      source: view.source,
      material: view.material,
      color: view.color,
      name: view.name,
      remaining_weight_g: view.remaining_weight_g,
      threshold_g: this.threshold,
      ...(view.printer_id ? { printer_id: view.printer_id, slot: view.slot } : {}),
    });
  }

  private localOnly(): void {
    if (this.mode === 'spoolman') {
      throw conflict('SPOOLS_IN_SPOOLMAN', 'Spoolman is the spool inventory (spoolman_url is set): add, change and delete spools in Spoolman', {});
    }
  }

  private async require(id: number): Promise<SpoolRecord> {
    const spool = await this.store.spools.get(id);
    if (!spool) throw notFound('SPOOL_NOT_FOUND', `Spool ${id} not found`, { spool_id: id });
    return spool;
  }

  private async requirePrinter(id: string): Promise<{ id: string; name: string }> {
    const printer = await this.store.printers.get(id);
    if (!printer) throw notFound('PRINTER_NOT_FOUND', `Printer "${id}" not found`, { printer_id: id });
    return printer;
  }
}
