/**
 * The printer node's view of the spools: spool_update frames move a spool's
 * id and grams into (and out of) the slots of the printers' snapshots, and the
 * node's "changes" filter lets a spool change through.
 */
import { applySpoolFrame } from '../../../service/client/spool-frames';
import type { PrinterSnapshot } from '../../../service/client';
import { PrinterUpdateFilter } from '../../../nodes/printer-updates';

const slot = (n: number, spool: number | null = null, grams: number | null = null) => ({ slot: n, type: 'PLA', color: '#FFFFFF', remaining_percent: null, spool_id: spool, remaining_weight_g: grams });

describe('spool frames in printer snapshots', () => {
  test('a spool enters its slot with its grams, leaves the slot it was in, and unchanged frames change nothing', () => {
    const a = [slot(0), slot(1, 7, 500)];
    expect(applySpoolFrame('x1c', a, { id: 7, printer_id: 'x1c', slot: 0, remaining_weight_g: 480 })).toEqual([slot(0, 7, 480), slot(1)]);
    expect(applySpoolFrame('x1c', a, { id: 7, printer_id: 'x1c', slot: 1, remaining_weight_g: 500 })).toBeNull();
    expect(applySpoolFrame('x1c', a, { id: 7, printer_id: 'x1c', slot: 1, remaining_weight_g: 420.5, change: 'used' })).toEqual([slot(0), slot(1, 7, 420.5)]);
    // Taken out, moved to another printer, or deleted: gone from this printer's slots.
    expect(applySpoolFrame('x1c', a, { id: 7, printer_id: null, slot: null, remaining_weight_g: 500, change: 'unassigned' })).toEqual([slot(0), slot(1)]);
    expect(applySpoolFrame('x1c', a, { id: 7, printer_id: 'p1s', slot: 0, remaining_weight_g: 500 })).toEqual([slot(0), slot(1)]);
    expect(applySpoolFrame('x1c', a, { id: 9, printer_id: 'p1s', slot: 0, remaining_weight_g: 500 })).toBeNull();
  });

  test('the printer node passes a spool change in "changes" mode, not a repeat', () => {
    const filter = new PrinterUpdateFilter('changes', 10_000, () => 0);
    const p = { id: 'x1c', status: 'online', connection_status: 'connected', is_active: true, progress: 0, current_job: null, error: null, materials: [slot(0, 7, 500)] } as unknown as PrinterSnapshot;
    expect(filter.pass(p)).toBe(true);
    expect(filter.pass({ ...p })).toBe(false);
    expect(filter.pass({ ...p, materials: [slot(0, 7, 480)] })).toBe(true);
    expect(filter.pass({ ...p, materials: [{ ...slot(0, 7, 480), remaining_percent: 47 }] })).toBe(false);
  });
});
