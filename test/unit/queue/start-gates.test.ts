/**
 * Working hours, the heat-up limit, the stagger and deadlines as pure
 * functions: windows in a time zone (across midnight and a DST change), the
 * instant the queue opens again, and the reasons in words.
 */
import { farmGate, isHeating, timeGate } from '../../../service/queue/start-gates';
import { hoursAt, hoursError, parseHours } from '../../../service/queue/working-hours';
import { orderPrinters, pinnedPrinter } from '../../../service/queue/printer-choice';
import type { PrinterRecord } from '../../../service/db/repositories/printers';
import type { DispatchRecord } from '../../../service/db/repositories/queue';

const at = (iso: string) => Date.parse(iso);

describe('working hours', () => {
  test('windows: day ranges, daily, past midnight; errors name the window', () => {
    expect(parseHours('')).toBeNull();
    expect(parseHours('Mon-Fri 07:00-22:00, Sat 08:00-14:00')!.windows).toEqual([
      { days: [1, 2, 3, 4, 5], start: 420, end: 1320 },
      { days: [6], start: 480, end: 840 },
    ]);
    expect(parseHours('Fri-Mon 22:00-06:00')!.windows).toEqual([{ days: [5, 6, 0, 1], start: 1320, end: 1800 }]);
    expect(parseHours('daily 00:00-24:00; sunday 01:00-02:00')!.windows[1].days).toEqual([0]);
    expect(hoursError('Mon-Fri')).toBe('"Mon-Fri" is not a window like "Mon-Fri 07:00-22:00" or "daily 06:00-23:00"');
    expect(hoursError('Mon 07:60-08:00')).toBe('"Mon 07:60-08:00": 07:60 is not a time of day (00:00 to 24:00)');
    expect(hoursError(Array(51).fill('Mon 07:00-08:00').join(','))).toBe('at most 50 windows');
  });

  test('open, closing time and next opening in the service time zone', () => {
    const h = parseHours('Mon-Fri 07:00-22:00')!;
    // Thursday 2026-11-26 in Berlin (UTC+1).
    expect(hoursAt(h, at('2026-11-26T10:00:00Z'), 'Europe/Berlin')).toEqual({ open: true, closes_at: at('2026-11-26T21:00:00Z'), opens_at: null });
    expect(hoursAt(h, at('2026-11-26T22:30:00Z'), 'Europe/Berlin')).toEqual({ open: false, closes_at: null, opens_at: at('2026-11-27T06:00:00Z') });
    // Friday night: Monday morning.
    expect(hoursAt(h, at('2026-11-27T21:30:00Z'), 'Europe/Berlin').opens_at).toBe(at('2026-11-30T06:00:00Z'));
    // Across the spring DST change (29 March 2026): 07:00 is UTC+2 from then on.
    expect(hoursAt(h, at('2026-03-28T12:00:00Z'), 'Europe/Berlin').opens_at).toBe(at('2026-03-30T05:00:00Z'));
    // A night window that joins the next day's: one open span.
    const night = parseHours('daily 20:00-24:00, daily 00:00-06:00')!;
    expect(hoursAt(night, at('2026-11-26T21:00:00Z'), 'UTC').closes_at).toBe(at('2026-11-27T06:00:00Z'));
  });
});

describe('start gates', () => {
  const base = { queue_hours: '', queue_max_concurrent_heatups: 0, queue_start_stagger_s: 0, timezone: 'UTC' };
  const now = at('2026-11-26T10:00:00Z');

  test('heat-ups: a budget of what is left, and the names in the reason', () => {
    expect(farmGate(base, now, ['A', 'B'], 0).budget).toBe(Infinity);
    expect(farmGate({ ...base, queue_max_concurrent_heatups: 3 }, now, ['A'], 0).budget).toBe(2);
    expect(farmGate({ ...base, queue_max_concurrent_heatups: 2 }, now, ['A', 'B'], 0)).toMatchObject({
      budget: 0,
      budgetReason: 'waiting for heat-up: 2 printers heating (A, B); queue_max_concurrent_heatups is 2',
    });
  });

  test('stagger: one start per pass, none until the pause has passed', () => {
    expect(farmGate({ ...base, queue_start_stagger_s: 30 }, now, [], now - 60_000).budget).toBe(1);
    expect(farmGate({ ...base, queue_start_stagger_s: 30 }, now, [], now - 10_000)).toMatchObject({ budget: 0, budgetReason: 'next start in 20 s (queue_start_stagger_s)', wakeAt: now + 20_000 });
  });

  test('closed hours stop everything; finish_by and closing time stop long prints', () => {
    const closed = farmGate({ ...base, queue_hours: 'Mon-Wed 07:00-22:00' }, now, [], 0);
    expect(closed.closed).toBe('outside working hours (Mon-Wed 07:00-22:00); starts Mon 07:00 (2026-11-30T07:00:00.000Z)');
    const hours = hoursAt(parseHours('Thu 07:00-12:00'), now, 'UTC');
    expect(timeGate(null, 3 * 3600, now, hours, 'UTC')).toBe('its estimated 3 h print would end after working hours close (Thu 12:00)');
    expect(timeGate(null, 3600, now, hours, 'UTC')).toBeNull();
    expect(timeGate('2026-11-26T10:30:00Z', 3600, now, hours, 'UTC')).toBe('cannot finish by 2026-11-26T10:30:00.000Z: its estimated 1 h print would end at 2026-11-26T11:00:00.000Z');
    expect(timeGate('2026-11-26T10:30:00Z', null, now, hours, 'UTC')).toBeNull();
  });

  test('heating: preparing, or printing below the targets', () => {
    const s = (state: string, bed: number, nozzle = 220) => ({ state, temperatures: { bed, bed_target: 60, nozzle, nozzle_target: 220 } }) as never;
    expect(isHeating(s('preparing', 60))).toBe(true);
    expect(isHeating(s('printing', 40))).toBe(true);
    expect(isHeating(s('printing', 59, 215))).toBe(false);
    expect(isHeating(s('idle', 20))).toBe(false);
  });
});

describe('printer choice', () => {
  const p = (id: string) => ({ id, name: id }) as PrinterRecord;
  test('least_used by hours, first_free by the last start; same_as_last pins an item to its last printer', () => {
    const printers = [p('a'), p('b'), p('c')];
    expect(orderPrinters('least_used', printers, new Map(), new Map([['a', 10], ['b', 5]])).map((x) => x.id)).toEqual(['c', 'b', 'a']);
    expect(orderPrinters('first_free', printers, new Map([['a', 3], ['b', 1]]), new Map()).map((x) => x.id)).toEqual(['c', 'b', 'a']);
    const d = (printer_id: string, state: string) => ({ printer_id, state }) as DispatchRecord;
    const known = new Map(printers.map((x) => [x.id, x]));
    expect(pinnedPrinter('same_as_last', [d('a', 'completed'), d('b', 'start_failed')], known)?.id).toBe('a');
    expect(pinnedPrinter('same_as_last', [d('z', 'completed')], known)).toBeNull();
    expect(pinnedPrinter('first_free', [d('a', 'completed')], known)).toBeNull();
  });
});
