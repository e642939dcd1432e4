/**
 * The schedule as a pure function: the dispatcher's rules played forward
 * (order, compatibility per variant, printers freeing up, working hours,
 * heat-ups, stagger, same_as_last).
 */
import type { PrinterRecord } from '../../../service/db/repositories/printers';
import type { QueueItemRecord } from '../../../service/db/repositories/queue';
import type { FileFacts } from '../../../service/queue/file-facts';
import { planSchedule, type PlanItem, type PlanPrinter } from '../../../service/queue/schedule';
import type { LoadedVariant } from '../../../service/queue/variants';

const NOW = Date.parse('2026-11-26T10:00:00Z'); // a Thursday
const MIN = 60_000;

const printer = (id: string, model: string, freeInMin = 0): PlanPrinter => ({
  record: { id, name: id.toUpperCase(), type: 'bambu_lab', is_active: true } as PrinterRecord,
  facts: { id, name: id.toUpperCase(), type: 'bambu_lab', model, nozzle_diameter: 0.4, materials: null },
  free_at: NOW + freeInMin * MIN,
  last_start: 0,
  usage_s: 0,
});

const variant = (fileId: string, model: string, minutes: number): LoadedVariant => ({
  variant: { file_id: fileId, plate: 1 },
  file: {} as LoadedVariant['file'],
  facts: { format: '3mf', printer_model: model, model_source: 'printer_model', vendor_family: null, nozzle_diameter: 0.4, filament_count: 1, filaments: [], sliced_plates: [1], bounds: null, print_time_s: minutes * 60 } as FileFacts,
});

const item = (id: string, copies: number, variants: LoadedVariant[], over: Partial<QueueItemRecord> = {}): PlanItem => ({
  item: { id, name: id, copies, target: null, requirements: null, start_after: null, finish_by: null, ...over } as QueueItemRecord,
  remaining: copies,
  variants,
  pinned: null,
});

const rules = { queue_hours: '', queue_max_concurrent_heatups: 0, queue_start_stagger_s: 0, timezone: 'UTC', queue_printer_choice: 'first_free' };
const rows = (plan: ReturnType<typeof planSchedule>) => plan.entries.map((e) => [e.item_id, e.printer_id, (e.start - NOW) / MIN, (e.end - NOW) / MIN]);

describe('planSchedule', () => {
  test('items in order on the printers that fit a variant, each as soon as one frees', () => {
    const printers = [printer('x1c', 'X1C'), printer('a1', 'A1', 30)];
    const plan = planSchedule(NOW, printers, [item('benchy', 3, [variant('f1', 'X1C', 60), variant('f2', 'A1', 90)]), item('hook', 1, [variant('f3', 'X1C', 20)])], rules);
    expect(rows(plan)).toEqual([
      ['benchy', 'x1c', 0, 60],
      ['benchy', 'a1', 30, 120],
      ['benchy', 'x1c', 60, 120],
      ['hook', 'x1c', 120, 140],
    ]);
    expect(plan.unplaced).toEqual([]);
  });

  test('no compatible printer: unplaced', () => {
    const plan = planSchedule(NOW, [printer('x1c', 'X1C')], [item('a1-only', 2, [variant('f', 'A1', 10)])], rules);
    expect(plan).toEqual({ entries: [], unplaced: [{ item_id: 'a1-only', copies: 2 }] });
  });

  test('working hours: nothing starts outside them, nor a print that would end after they close', () => {
    const hours = { ...rules, queue_hours: 'Thu 11:00-12:00, Fri 08:00-18:00' };
    const plan = planSchedule(NOW, [printer('x1c', 'X1C')], [item('long', 1, [variant('f', 'X1C', 120)]), item('short', 1, [variant('g', 'X1C', 30)])], hours);
    // Thursday's window is too short for the 2-hour print; the short one goes then.
    expect(rows(plan)).toEqual([
      ['short', 'x1c', 60, 90],
      ['long', 'x1c', 22 * 60, 24 * 60],
    ]);
  });

  test('heat-ups and stagger space the starts', () => {
    const three = [printer('a', 'X1C'), printer('b', 'X1C'), printer('c', 'X1C')];
    const job = () => [item('tray', 3, [variant('f', 'X1C', 60)])];
    expect(rows(planSchedule(NOW, three, job(), { ...rules, queue_max_concurrent_heatups: 1 })).map((r) => r[2])).toEqual([0, 3, 6]);
    expect(rows(planSchedule(NOW, three.map((p) => ({ ...p, free_at: NOW })), job(), { ...rules, queue_start_stagger_s: 600 })).map((r) => r[2])).toEqual([0, 10, 20]);
  });

  test('same_as_last keeps the copies on one printer', () => {
    const plan = planSchedule(NOW, [printer('a', 'X1C'), printer('b', 'X1C')], [item('set', 3, [variant('f', 'X1C', 30)])], { ...rules, queue_printer_choice: 'same_as_last' });
    expect(rows(plan)).toEqual([
      ['set', 'a', 0, 30],
      ['set', 'a', 30, 60],
      ['set', 'a', 60, 90],
    ]);
  });
});
