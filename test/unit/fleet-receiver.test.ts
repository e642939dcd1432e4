/**
 * bench/fleet's /ws readers read a printer_status frame's printer id and nozzle temperature off its bytes
 * (bench/fleet-receiver.ts readStatusFrame); whatever is shaped otherwise is parsed whole.
 */
import { readStatusFrame } from '../../bench/fleet-receiver';
import { statusEvent } from '../../service/printers/fleet-status';
import type { PrinterRecord } from '../../service/db/repositories/printers';
import type { LiveState } from '../../service/monitoring/status-cache';

const frame = (type: string, data: object) => Buffer.from(JSON.stringify({ type, timestamp: new Date().toISOString(), data }));

test("the service's printer_status frame gives its printer and nozzle temperature", () => {
  const record = { id: 'bench-0001', plate_state: 'clear' } as PrinterRecord;
  const event = statusEvent(record, 'printing', 'connected', { progress: 12, temperatures: { nozzle: 215.5, bed: 60 } } as LiveState, null);
  expect(readStatusFrame(frame('printer_status', event))).toEqual({ id: 'bench-0001', nozzle: 215.5 });
});

test("the relay's frame, and a frame of another shape, give the same as parsing it whole", () => {
  const relay = { printer_id: 'bench-0002', change: 'state', status: 'online', connection_status: 'connected', progress: 0, temperatures: { nozzle: 201, bed: 25 }, plate_state: 'clear' };
  expect(readStatusFrame(frame('printer_status', relay))).toEqual({ id: 'bench-0002', nozzle: 201 });
  // Keys in another order: parsed whole.
  const reordered = Buffer.from(JSON.stringify({ data: { temperatures: { bed: 1, nozzle: 7 }, printer_id: 'p' }, type: 'printer_status' }));
  expect(readStatusFrame(reordered)).toEqual({ id: 'p', nozzle: 7 });
  // An escaped id: parsed whole, not cut at the escaped quote.
  expect(readStatusFrame(frame('printer_status', { printer_id: 'a"b', temperatures: { nozzle: 3 } }))).toEqual({ id: 'a"b', nozzle: 3 });
});

test('other frames are "other"; a printer_status without a numeric nozzle temperature is unmatched', () => {
  expect(readStatusFrame(frame('job_update', { printer_id: 'x', temperatures: { nozzle: 1 } }))).toBe('other');
  expect(readStatusFrame(Buffer.from('not json'))).toBe('other');
  expect(readStatusFrame(frame('printer_status', { printer_id: 'x', temperatures: { nozzle: null } }))).toBeNull();
  expect(readStatusFrame(frame('printer_status', { temperatures: { nozzle: 200 } }))).toBeNull();
});
