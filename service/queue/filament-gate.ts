/**
 * The queue's filament check (issue 25): a printer whose spool in a slot the
 * print would use holds less than the file needs of that filament (plus
 * `queue_filament_margin_g`) does not take the item; the item waits with a
 * reason such as "not enough PLA on X1C #02: 120 g needed, 80 g left", and a
 * printer with enough takes it. A slot without an assigned spool, or a file
 * that states no grams, is not checked (nothing is known to compare).
 *
 * Plugged into the dispatcher as one optional dependency; reads memory and the
 * grams cache only, so a pass over many items stays cheap.
 */
import type { FileRecord } from '../db/repositories/files';
import type { EventBus } from '../events';
import type { FileGramsCache } from '../filament/file-grams';
import type { SlotSpool } from '../filament/spools';
import type { SettingsService } from '../settings';
import { EXTERNAL_SPOOL, type PrinterFacts } from './compatibility';

/** Null when the spools hold enough for a copy of `file` (3MF `plate`) on `printer` with that tray mapping; else the reason. */
export type FilamentGate = (plate: number, file: FileRecord & { local_path: string }, printer: PrinterFacts, amsMapping: number[]) => Promise<string | null>;

export interface FilamentGateDeps {
  grams: FileGramsCache;
  spoolAt(printerId: string, slot: number): SlotSpool | null;
  settings: SettingsService;
}

/** The slot a file's filament prints from on this printer (the mapping the dispatcher chose; PrusaLink: the extruder). */
function slotOf(printer: PrinterFacts, filament: number, mapping: number[]): number | null {
  if (printer.type !== 'bambu_lab') return filament - 1;
  const tray = mapping[filament - 1];
  if (tray !== undefined && tray >= 0) return tray;
  return printer.materials?.some((m) => m.slot === EXTERNAL_SPOOL) ? EXTERNAL_SPOOL : null;
}

export function filamentGate(deps: FilamentGateDeps): FilamentGate {
  return async (plate, file, printer, mapping) => {
    const filaments = await deps.grams.get(file, plate).catch(() => []);
    if (filaments.length === 0) return null;
    const need = new Map<number, { grams: number; material: string | null }>();
    for (const f of filaments) {
      const slot = slotOf(printer, f.filament, mapping);
      if (slot === null) continue;
      const sum = need.get(slot);
      need.set(slot, { grams: (sum?.grams ?? 0) + f.grams, material: sum?.material ?? f.type });
    }
    const margin = deps.settings.get('queue_filament_margin_g');
    for (const [slot, n] of need) {
      const spool = deps.spoolAt(printer.id, slot);
      if (!spool || spool.remaining_weight_g === null) continue;
      if (spool.remaining_weight_g < n.grams + margin) {
        const material = spool.material ?? n.material ?? 'filament';
        return `not enough ${material} on ${printer.name}: ${Math.ceil(n.grams)} g needed, ${Math.floor(spool.remaining_weight_g)} g left`;
      }
    }
    return null;
  };
}

/** A spool loaded, changed or refilled may let a waiting item start: the dispatcher looks again. */
export function wakeOnSpoolChanges(bus: EventBus, wake: (reason: string) => void): () => void {
  return bus.on('spool_update', () => wake('spool changed'));
}
