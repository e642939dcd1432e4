/**
 * What each printer's last report showed of what decides a queued start. The
 * dispatcher runs a pass only when this changes: it is compared field by
 * field on every report of every printer, so it builds no string and no list.
 */
import type { PrinterState } from '../printers/driver';
import { sameLoadedMaterials } from '../printers/state-equality';
import type { Availability } from './waiting-reasons';

export interface SeenPrinter {
  availability: Availability;
  /** Heating or preparing (counts only with a heat-up limit). */
  heating: boolean;
  nozzle: number | null;
  model: string | null;
  /** Filament counts by slot, type and colour; how much is left changes all through a print and decides nothing. */
  materials: PrinterState['materials'];
}

export class SeenPrinters {
  private readonly seen = new Map<string, SeenPrinter>();

  /** Takes what a report showed; true when it differs from the printer's last report in what decides a start. */
  changed(printerId: string, now: SeenPrinter): boolean {
    const last = this.seen.get(printerId);
    this.seen.set(printerId, now);
    return !(last && last.availability === now.availability && last.heating === now.heating && last.nozzle === now.nozzle && last.model === now.model && sameLoadedMaterials(last.materials, now.materials));
  }
}
