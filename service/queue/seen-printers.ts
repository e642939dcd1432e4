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

  /**
   * Takes what a report showed; true when it differs from the printer's last report in what decides a start.
   * A printer's entry is written in place: no object per report.
   */
  changed(printerId: string, availability: Availability, heating: boolean, state: PrinterState): boolean {
    const nozzle = state.nozzle_diameter ?? null;
    const model = state.model ?? null;
    const materials = state.materials;
    const last = this.seen.get(printerId);
    if (!last) {
      this.seen.set(printerId, { availability, heating, nozzle, model, materials });
      return true;
    }
    const same = last.availability === availability && last.heating === heating && last.nozzle === nozzle && last.model === model && sameLoadedMaterials(last.materials, materials);
    last.availability = availability;
    last.heating = heating;
    last.nozzle = nozzle;
    last.model = model;
    last.materials = materials;
    return !same;
  }

  /**
   * The printer was found offline (no state, or not connected): its next report is news whatever it shows. A new
   * link shows nothing until its first full report (Bambu), and the report that ends that gap often shows what
   * the last one before it did: compared with it, it would start no pass, and a copy waited for the safety pass.
   */
  forget(printerId: string): void {
    this.seen.delete(printerId);
  }
}
