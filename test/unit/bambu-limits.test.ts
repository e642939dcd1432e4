/**
 * Bounds on what a Bambu printer may send: depth and size measured without
 * recursion, only the keys the service reads kept, MQTT packets refused by
 * their declared length.
 */
import { checkReport, MAX_OBJECT_KEYS, MqttPacketGuard, pickUsedKeys } from '../../service/printers/bambu/limits';
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

  it('refuses an MQTT packet by its declared length, across chunk boundaries', () => {
    const guard = new MqttPacketGuard(1000);
    // PUBLISH of 200 body bytes (0x30, length 0xC8 0x01), split into pieces, then one declaring 2 MB.
    const small = Buffer.concat([Buffer.from([0x30, 0xc8, 0x01]), Buffer.alloc(200)]);
    for (let i = 0; i < small.length; i += 7) expect(guard.feed(small.subarray(i, i + 7))).toBeNull();
    expect(guard.feed(Buffer.from([0x30]))).toBeNull();
    expect(guard.feed(Buffer.from([0x80, 0x80, 0x80]))).toBeNull();
    expect(guard.feed(Buffer.from([0x01]))).toBe(5 + 2 ** 21);
  });
});
