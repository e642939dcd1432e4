/**
 * Bounds on what a Bambu printer may send: depth and size measured without
 * recursion, only the keys the service reads kept (MQTT packets refused by
 * their declared length: mqtt-packets.test.ts).
 */
import { checkReport, MAX_LIST_ENTRIES, MAX_OBJECT_KEYS, pickUsedKeys, takeUsedKeys } from '../../service/printers/bambu/limits';
import { BambuReports } from '../../service/printers/bambu/reports';
import { ingestReport, type BambuTracked } from '../../service/printers/bambu/state';

const nested = (depth: number): unknown => {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++) value = { a: value };
  return value;
};

describe('Bambu report limits', () => {
  it('measures a report nested 100 000 deep without overflowing the stack', () => {
    expect(checkReport({ print: nested(100_000) })).toBe('report nested deeper than 32 levels');
    expect(checkReport({ print: { ams: { ams: [{ tray: [{ cols: ['FFFFFFFF'] }] }] } } })).toBeNull();
    expect(checkReport({ print: { list: new Array(30_000).fill(0) } })).toBe('report holds more than 20000 values');
    // Lists are walked by index, nested lists measured like objects; a refused walk leaves the next one clean.
    let list: unknown = [1];
    for (let i = 0; i < 100_000; i++) list = [list];
    expect(checkReport({ print: { junk: list } })).toBe('report nested deeper than 32 levels');
    expect(checkReport({ print: { junk: [[1, [2, { a: [3] }]], 'x'] } })).toBeNull();
  });

  it('keeps only the keys the service reads, so invented keys never grow the merged state', () => {
    let tracked: BambuTracked | null = null;
    for (let r = 0; r < 50; r++) {
      const junk = Object.fromEntries(Array.from({ length: 2000 }, (_, i) => [`k${r}_${i}`, i]));
      tracked = ingestReport(tracked, { gcode_state: 'RUNNING', mc_percent: r, ...junk, ams: { ams: [{ id: '0', ...junk }] } });
    }
    expect(Object.keys(tracked!.print).sort()).toEqual(['ams', 'gcode_state', 'mc_percent']);
    const unit = ((tracked!.print.ams as Record<string, unknown>).ams as Record<string, unknown>[])[0];
    expect(Object.keys(unit).length).toBeLessThanOrEqual(MAX_OBJECT_KEYS);
    expect(pickUsedKeys({ subtask_name: 'x'.repeat(5000) }).subtask_name).toHaveLength(1024);
  });

  it('measures a status report in one walk: the kept keys as they are taken, the rest by checkReport; a refused report merges nothing', () => {
    const reports = new BambuReports();
    const send = (print: object) => reports.take(Buffer.from(JSON.stringify({ print: { command: 'push_status', msg: 1, ...print } })), null);
    expect(send({ gcode_state: 'IDLE', nozzle_temper: 20 })).toMatchObject({ kind: 'taken' });
    // Too deep inside a kept key (ams) and inside an ignored one: both refused, with the same reason.
    expect(send({ nozzle_temper: 99, ams: nested(40) })).toEqual({ kind: 'refused', reason: 'report nested deeper than 32 levels' });
    expect(send({ nozzle_temper: 99, junk: nested(40) })).toEqual({ kind: 'refused', reason: 'report nested deeper than 32 levels' });
    // The values bound holds for the whole message: 12 000 ignored values and 12 000 in a kept list.
    const many = new Array(12_000).fill(0);
    expect(send({ nozzle_temper: 99, junk: many })).toMatchObject({ kind: 'taken' });
    expect(send({ nozzle_temper: 99, junk: many, hms: many })).toEqual({ kind: 'refused', reason: 'report holds more than 20000 values' });
    expect(reports.dropped).toBe(3);
    expect(reports.current?.temperatures.nozzle).toBe(99);
  });

  it('keeps the held value where a full report repeats it, cutting and copying only what changed', () => {
    const trays = (remain: number) => Array.from({ length: 4 }, (_, i) => ({ id: String(i), tray_type: 'PLA', remain: i === 3 ? remain : 50 }));
    const full = (remain: number, extra: object = {}) => ({ ams: { ams: [{ id: '0', tray: trays(remain) }], tray_now: '0' }, hms: [], subtask_name: 'x'.repeat(2000), ...extra });
    const first = takeUsedKeys(full(10), null, { values: 1 });
    expect((first.subtask_name as string).length).toBe(1024);
    const same = takeUsedKeys(full(10), first, { values: 1 });
    expect(same.ams).toBe(first.ams);
    expect(same.hms).toBe(first.hms);
    expect(same.subtask_name).toBe(first.subtask_name);
    const changed = takeUsedKeys(full(9), first, { values: 1 }) as { ams: { ams: Array<{ tray: unknown[] }> } };
    const held = first as typeof changed;
    expect(changed.ams).not.toBe(first.ams);
    expect(changed.ams.ams[0].tray[3]).toEqual({ id: '3', tray_type: 'PLA', remain: 9 });
    expect(changed.ams.ams[0].tray.slice(0, 3)).toEqual(held.ams.ams[0].tray.slice(0, 3));
    for (let i = 0; i < 3; i++) expect(changed.ams.ams[0].tray[i]).toBe(held.ams.ams[0].tray[i]);
    // Lists and objects beyond their bounds are cut whether or not something is held.
    const long = takeUsedKeys({ hms: new Array(200).fill({ attr: 1, code: 2 }) }, first, { values: 1 });
    expect((long.hms as unknown[]).length).toBe(MAX_LIST_ENTRIES);
  });

  it('keeps of an AMS only the fields the service reads, so a change elsewhere in a tray changes nothing held', () => {
    // A tray as a real X1C reports it: six fields read, the rest (temperatures, calibration, RFID data) not.
    const tray = (id: string, extra: object = {}) => ({ id, tray_id_name: 'A00-W1', tray_temp: '55', k: 0.02, cols: ['FFFFFFFF'], tray_type: 'PLA', tray_color: 'FFFFFFFF', remain: 80, tray_uuid: '0'.repeat(32), tray_weight: '1000', xcam_info: '803E', ...extra });
    const full = (trays: object[]) => ({ ams: { ams: [{ id: '0', humidity: '4', temp: '22.7', tray: trays }], tray_now: '1', version: 4, tray_exist_bits: 'f' } });
    const first = takeUsedKeys(full([tray('0'), tray('1')]), null, { values: 1 }) as { ams: { ams: Array<{ tray: object[] }> } };
    expect(first.ams).toEqual({ ams: [{ id: '0', tray: [expect.any(Object), expect.any(Object)] }], tray_now: '1' });
    expect(first.ams.ams[0].tray[0]).toEqual({ id: '0', tray_type: 'PLA', tray_color: 'FFFFFFFF', remain: 80, tray_uuid: '0'.repeat(32), tray_weight: '1000' });
    // The same report again, or one that differs only in what is not read: the held AMS, not a copy.
    expect(takeUsedKeys(full([tray('0'), tray('1')]), first, { values: 1 }).ams).toBe(first.ams);
    expect(takeUsedKeys(full([tray('0', { tray_temp: '60', k: 0.03 }), tray('1')]), first, { values: 1 }).ams).toBe(first.ams);
    // What is read changes: only that tray is new.
    const changed = takeUsedKeys(full([tray('0'), tray('1', { remain: 79 })]), first, { values: 1 }) as typeof first;
    expect(changed.ams.ams[0].tray[0]).toBe(first.ams.ams[0].tray[0]);
    expect(changed.ams.ams[0].tray[1]).toMatchObject({ id: '1', remain: 79 });
    // The fields not read still count toward the message's bounds.
    const count = { values: 1 };
    takeUsedKeys(full([tray('0')]), null, count);
    expect(count.values).toBeGreaterThan(15);
  });

  it('a delta tray that carries only fields the service does not read leaves the slot loaded; its id alone empties it', () => {
    let tracked = ingestReport(null, { msg: 0, gcode_state: 'IDLE', ams: { ams: [{ id: '0', tray: [{ id: '1', tray_type: 'PETG', remain: 50 }] }] } });
    const trays = () => ((tracked.print.ams as { ams: Array<{ tray: object[] }> }).ams[0].tray);
    tracked = ingestReport(tracked, { msg: 1, ams: { ams: [{ id: '0', tray: [{ id: '1', tray_temp: '60' }] }] } });
    expect(trays()).toEqual([{ id: '1', tray_type: 'PETG', remain: 50 }]);
    tracked = ingestReport(tracked, { msg: 1, ams: { ams: [{ id: '0', tray: [{ id: '1' }] }] } });
    expect(trays()).toEqual([{ id: '1' }]);
  });
});
