/**
 * Two small pieces of the node pack: the embedded service's pino lines as
 * readable log lines, and which printer states the printer node passes on.
 */
import { logDestination, readableLogLine, type ServiceLogLine } from '../../../nodes/service-log';
import { PrinterUpdateFilter, updateFilter } from '../../../nodes/printer-updates';
import type { PrinterSnapshot } from '../../../service/client';

describe('the service log in Node-RED', () => {
  test('a pino line becomes its message with the fields after it, at the matching level', () => {
    const line = JSON.stringify({ level: 40, time: 1, pid: 7, hostname: 'h', service: 'printfarm', printer_id: 'x1', attempt: 3, err: { type: 'Error', message: 'connect ECONNREFUSED', stack: 'Error: ...' }, msg: 'printer offline' });
    expect(readableLogLine(line)).toEqual({ method: 'warn', text: 'printer offline (printer_id=x1; attempt=3; error: connect ECONNREFUSED)' });
    expect(readableLogLine(JSON.stringify({ level: 30, msg: 'ready' }))).toEqual({ method: 'log', text: 'ready' });
    expect(readableLogLine(JSON.stringify({ level: 60, msg: 'fatal' }))!.method).toBe('error');
    expect(readableLogLine(JSON.stringify({ level: 20, msg: 'detail' }))!.method).toBe('debug');
    expect(readableLogLine('not json')).toEqual({ method: 'log', text: 'not json' });
    expect(readableLogLine('   ')).toBeNull();
  });

  test('long fields and lines are cut', () => {
    const text = readableLogLine(JSON.stringify({ level: 30, msg: 'big', body: 'x'.repeat(10_000) }))!.text;
    expect(text.length).toBeLessThan(300);
    expect(text).toMatch(/^big \(body=x+…\)$/);
  });

  test('the destination splits chunks into lines, also across writes', () => {
    const seen: ServiceLogLine[] = [];
    const dest = logDestination((l) => seen.push(l));
    const two = JSON.stringify({ level: 50, msg: 'two' });
    dest.write(`${JSON.stringify({ level: 30, msg: 'one' })}\n${two.slice(0, 10)}`);
    dest.write(`${two.slice(10)}\n`);
    expect(seen).toEqual([
      { method: 'log', text: 'one' },
      { method: 'error', text: 'two' },
    ]);
  });
});

describe('which printer states the printer node sends', () => {
  const printer = (over: Partial<PrinterSnapshot> = {}): PrinterSnapshot => ({
    id: 'p1', name: 'P1', type: 'bambu_lab', model: null, status: 'printing', connection_status: 'connected', progress: 10.2,
    temperatures: { nozzle: 220, bed: 60 }, current_job: { id: 1, name: 'cube', progress: 10, estimated_remaining: 100 }, error: null, is_active: true, last_seen: null, updated_at: '',
    ...over,
  });

  test('changes: status at once, progress at most every throttle, temperatures alone never', () => {
    let now = 0;
    const filter = new PrinterUpdateFilter('changes', 10_000, () => now);
    expect(filter.pass(printer())).toBe(true); // the first state
    expect(filter.pass(printer({ temperatures: { nozzle: 221, bed: 60 } }))).toBe(false);
    now = 2_000;
    expect(filter.pass(printer({ progress: 11 }))).toBe(false); // too soon
    expect(filter.pass(printer({ progress: 11, status: 'paused' }))).toBe(true); // a status change goes at once
    now = 13_000;
    expect(filter.pass(printer({ progress: 12, status: 'paused' }))).toBe(true); // the throttle is up
    expect(filter.pass(printer({ progress: 12.9, status: 'paused' }))).toBe(false); // same whole percent
    expect(filter.pass(printer({ id: 'p2' }))).toBe(true); // per printer
    filter.forget('p1');
    expect(filter.pass(printer({ progress: 12, status: 'paused' }))).toBe(true);
  });

  test('every: everything; flows saved before the option keep sending everything', () => {
    const filter = updateFilter(undefined, undefined);
    expect([filter.pass(printer()), filter.pass(printer()), filter.pass(printer())]).toEqual([true, true, true]);
    const changes = updateFilter('changes', '');
    expect([changes.pass(printer()), changes.pass(printer())]).toEqual([true, false]);
  });
});
