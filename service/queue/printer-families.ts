/**
 * What the queue knows per printer family, as data: the file formats a family
 * prints, the raw states in which a start may be sent, the vendor keyword its
 * slicer profiles carry, whether filaments map onto AMS trays, how a file's
 * model is matched, and its models with their build volumes. A new printer
 * type plugs in by adding one entry here (and a driver); compatibility.ts and
 * the dispatcher read nothing family-specific elsewhere.
 */
import type { PrinterRecord } from '../db/repositories/printers';
import type { PrintFormat } from './file-facts';

/** One printer model: the names files and printers use for it, and its build volume in millimetres. */
export interface ModelSpec {
  /** The model key (models.ts modelKey) this entry describes. */
  key: string;
  /** How people name it ("MK4S", "Core One"). */
  label: string;
  /** Extra spellings searched for in free-text profile names (printer_settings_id), longest tried first. */
  names: readonly string[];
  bed: { x: number; y: number };
  height: number;
}

export interface PrinterFamily {
  /** "Bambu Lab", "PrusaLink": used in reasons. */
  label: string;
  formats: readonly PrintFormat[];
  /** Raw printer states in which a start may be sent (QUEUE.md: never to a busy printer). */
  startable: readonly string[];
  /** The slicer's vendor keyword for this family (PrusaSlicer's `PRINTER_VENDOR_PRUSA3D`). */
  vendors: readonly string[];
  /** The start carries an AMS tray mapping (Bambu Lab). */
  trayMapping: boolean;
  /**
   * How the file's model is matched. 'reported': the model the file claims (model-claims.ts) against the model
   * the printer reports, by model key; a file naming none goes only where the item targets it by id or model.
   * 'configured': the file's claimed model and its printer profile (printer_settings_id) against the printer's
   * configured model, free text, loosely (models.ts looselySameModel); a file naming neither goes only where
   * the item targets it by id, type or model (Klipper: the operator's model names are their own).
   */
  modelMatch: 'reported' | 'configured';
  models: readonly ModelSpec[];
}

const spec = (key: string, label: string, names: string[], x: number, y: number, height: number): ModelSpec => ({ key, label, names, bed: { x, y }, height });

/** Build volumes as the makers publish them; a file's bounds are checked against them. */
export const PRINTER_FAMILIES: Record<PrinterRecord['type'], PrinterFamily> = {
  bambu_lab: {
    label: 'Bambu Lab',
    formats: ['3mf'],
    startable: ['IDLE', 'FINISH', 'FAILED'],
    vendors: ['BBL', 'BAMBULAB'],
    trayMapping: true,
    modelMatch: 'reported',
    models: [
      spec('x1c', 'X1C', ['X1 Carbon', 'X1C'], 256, 256, 256),
      spec('x1e', 'X1E', ['X1E'], 256, 256, 256),
      spec('x1', 'X1', ['X1'], 256, 256, 256),
      spec('p1s', 'P1S', ['P1S'], 256, 256, 256),
      spec('p1p', 'P1P', ['P1P'], 256, 256, 256),
      spec('a1mini', 'A1 mini', ['A1 mini'], 180, 180, 180),
      spec('a1', 'A1', ['A1'], 256, 256, 256),
      spec('h2d', 'H2D', ['H2D'], 325, 320, 325),
    ],
  },
  prusa_core: {
    label: 'PrusaLink',
    formats: ['gcode', 'bgcode'],
    startable: ['IDLE', 'FINISHED', 'READY'],
    vendors: ['PRUSA3D', 'PRUSA'],
    trayMapping: false,
    modelMatch: 'reported',
    models: [
      spec('mk4s', 'MK4S', ['MK4S'], 250, 210, 220),
      spec('mk4', 'MK4', ['MK4IS', 'MK4'], 250, 210, 220),
      spec('mk39', 'MK3.9', ['MK3.9'], 250, 210, 220),
      spec('mk35', 'MK3.5', ['MK3.5'], 250, 210, 220),
      spec('mk3s', 'MK3S', ['MK3S', 'MK3'], 250, 210, 210),
      spec('coreone', 'Core One', ['Core One', 'COREONE'], 250, 220, 270),
      spec('xl', 'XL', ['XL'], 360, 360, 360),
      spec('mini', 'MINI', ['MINI'], 180, 180, 180),
    ],
  },
  klipper: {
    label: 'Klipper',
    formats: ['gcode'],
    // print_stats.state: a finished or cancelled print leaves the printer free; a print error needs someone first.
    startable: ['STANDBY', 'COMPLETE', 'CANCELLED'],
    // Klipper machines are every make; no vendor keyword names them.
    vendors: [],
    trayMapping: false,
    modelMatch: 'configured',
    // Free-text models (Voron 2.4 350, Sovol SV08): no build volumes known, so no size check.
    models: [],
  },
};

export function familyOf(type: string): PrinterFamily | undefined {
  return (PRINTER_FAMILIES as Record<string, PrinterFamily>)[type];
}

/** The family whose vendor keyword this is (PRUSA3D -> prusa_core), if any. */
export function familyOfVendor(vendor: string): string | null {
  const v = vendor.toUpperCase();
  for (const [type, family] of Object.entries(PRINTER_FAMILIES)) if (family.vendors.includes(v)) return type;
  return null;
}
