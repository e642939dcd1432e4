/**
 * The spools in a printer snapshot's slots, kept current from `spool_update`
 * frames between reads of GET /printers (which carries them per slot): a
 * spool put in a slot, taken out of one, or with fewer grams after a print.
 */
import type { PrinterView } from './types';

export type SlotMaterial = PrinterView['materials'][number];

export interface SpoolFrame {
  id: number;
  printer_id: string | null;
  slot: number | null;
  material?: string;
  color?: string | null;
  remaining_weight_g: number | null;
  change?: string;
}

export function isSpoolFrame(d: unknown): d is SpoolFrame {
  const f = d as Partial<SpoolFrame> | null;
  return !!f && typeof f.id === 'number' && (f.printer_id === null || typeof f.printer_id === 'string');
}

/**
 * The materials of printer `printerId` after the frame: the spool leaves any slot it was in, and sits in its
 * slot of this printer when the frame says so. Null when nothing changed.
 */
export function applySpoolFrame(printerId: string, materials: readonly SlotMaterial[], f: SpoolFrame): SlotMaterial[] | null {
  const here = f.printer_id === printerId && f.slot !== null && f.change !== 'deleted';
  let changed = false;
  const out = materials.map((m) => {
    if (here && m.slot === f.slot) {
      if (m.spool_id === f.id && m.remaining_weight_g === f.remaining_weight_g) return m;
      changed = true;
      return { ...m, spool_id: f.id, remaining_weight_g: f.remaining_weight_g };
    }
    if (m.spool_id === f.id) {
      changed = true;
      return { ...m, spool_id: null, remaining_weight_g: null };
    }
    return m;
  });
  return changed ? out : null;
}
