/**
 * What the print queue needs to know of each printer family, as data: which
 * files it prints, in which raw states a queued start may go out, whether
 * filaments map onto trays, and how a file's model is matched. Adding a
 * family is a row here (and a driver), not a branch in the queue.
 */
import type { PrinterRecord } from '../db/repositories/printers';

export type PrinterTypeName = PrinterRecord['type'];

export interface PrinterFamily {
  /** The file formats (queue FileFacts.format) the printer prints. */
  formats: readonly string[];
  /** Why another format is refused, in words. */
  formatReason: string;
  /** Raw printer states (PrinterState.raw_state) in which a queued start may be sent. */
  startable: readonly string[];
  /** The start carries an AMS tray mapping. */
  trayMapping: boolean;
  /**
   * How the file's model is matched: 'reported' compares the model the file names with the model the printer
   * reports (a file naming none goes anywhere); 'configured' compares the file's slicer model and printer
   * profile (printer_model, printer_settings_id) with the printer's configured model, free text, and a file
   * naming neither goes only to printers the item targets.
   */
  modelMatch: 'reported' | 'configured';
}

export const PRINTER_FAMILIES: Record<PrinterTypeName, PrinterFamily> = {
  bambu_lab: { formats: ['3mf'], formatReason: 'Bambu Lab printers print sliced .3mf files', startable: ['IDLE', 'FINISH', 'FAILED'], trayMapping: true, modelMatch: 'reported' },
  prusa_core: { formats: ['gcode', 'bgcode'], formatReason: 'PrusaLink printers print .gcode and .bgcode files', startable: ['IDLE', 'FINISHED', 'READY'], trayMapping: false, modelMatch: 'reported' },
  // print_stats.state: a finished or cancelled print leaves the printer free; a print error needs someone first.
  klipper: { formats: ['gcode'], formatReason: 'Klipper printers print .gcode files', startable: ['STANDBY', 'COMPLETE', 'CANCELLED'], trayMapping: false, modelMatch: 'configured' },
};

/** The family of a printer type. */
export function familyOf(type: PrinterTypeName): PrinterFamily {
  return PRINTER_FAMILIES[type];
}
