/**
 * Moonraker's job history as the Klipper driver reads it: each status as an outcome with a reason, a job still
 * in progress or with an unknown status as nothing, what the peer sends bounded; and the job tracker's rule for
 * whose end a record is (the same file, the same run).
 */
import { endedPrintOf, finishedInNotification } from '../../service/printers/klipper/history';
import { printOutcome, recordedEnd } from '../../service/monitoring/print-outcome';
import type { EndedPrint, PrinterState } from '../../service/printers/driver';

const job = (over: Record<string, unknown> = {}) => ({ job_id: '00000A', filename: 'cube.gcode', status: 'klippy_shutdown', start_time: 1_780_000_000, end_time: 1_780_000_600, ...over });

describe("Moonraker's job history", () => {
  test('each status is an outcome; the failed ones say why', () => {
    const outcomes = ['completed', 'cancelled', 'error', 'klippy_shutdown', 'klippy_disconnect', 'interrupted', 'server_exit'].map((status) => endedPrintOf(job({ status }))?.outcome);
    expect(outcomes).toEqual(['completed', 'cancelled', 'failed', 'failed', 'failed', 'failed', 'failed']);
    expect(endedPrintOf(job({ status: 'interrupted' }))).toEqual({
      file: 'cube.gcode',
      outcome: 'failed',
      reason: expect.stringMatching(/lost power/),
      started_at: new Date(1_780_000_000_000).toISOString(),
      ended_at: new Date(1_780_000_600_000).toISOString(),
    });
    expect(endedPrintOf(job({ status: 'cancelled' }))?.reason).toBeNull();
  });

  test('a job in progress, an unknown status and malformed entries are nothing; texts and times are bounded', () => {
    expect(endedPrintOf(job({ status: 'in_progress' }))).toBeNull();
    for (const status of ['toString', 'constructor', '__proto__', 'hasOwnProperty']) expect(endedPrintOf(job({ status }))).toBeNull();
    expect(endedPrintOf(job({ status: 'x'.repeat(100_000) }))).toBeNull();
    for (const bad of [null, 'job', [], {}, job({ filename: 42 }), job({ filename: '' }), job({ status: null })]) expect(endedPrintOf(bad)).toBeNull();
    const huge = endedPrintOf(job({ filename: 'f'.repeat(2_000_000), start_time: 1e300, end_time: 'soon' }))!;
    expect(huge.file).toHaveLength(1000);
    expect(huge).toMatchObject({ started_at: null, ended_at: null });
  });

  test('only a "finished" notification carries an end', () => {
    expect(finishedInNotification([{ action: 'finished', job: job() }])?.outcome).toBe('failed');
    expect(finishedInNotification([{ action: 'added', job: job({ status: 'in_progress' }) }])).toBeNull();
    for (const bad of [null, 'x', [], [null], [{ action: 'finished' }], { action: 'finished', job: job() }]) expect(finishedInNotification(bad)).toBeNull();
  });
});

describe("whose end a printer's record is", () => {
  const ended: EndedPrint = { file: 'Cube.gcode', outcome: 'failed', reason: 'Klipper shut down', started_at: '2026-11-28T10:00:30.000Z', ended_at: '2026-11-28T10:20:00.000Z' };
  const state = { state: 'idle', ended_print: ended } as PrinterState;

  test('the same file in any spelling and the same run: its outcome, over the old rule of how far the print got', () => {
    expect(recordedEnd(state, { name: 'cube', startTime: '2026-11-28T10:00:00.000Z' })).toBe(ended);
    expect(printOutcome('idle', 99.5, ended)).toBe('failed');
    expect(printOutcome('idle', 40, null)).toBe('cancelled');
    // The printer's own end state still wins.
    expect(printOutcome('finished', 40, ended)).toBe('completed');
    expect(printOutcome('stopped', 40, ended)).toBe('cancelled');
  });

  test('another file, or an earlier print of the same file, is not this run', () => {
    expect(recordedEnd(state, { name: 'other.gcode', startTime: '2026-11-28T10:00:00.000Z' })).toBeNull();
    expect(recordedEnd(state, { name: 'cube.gcode', startTime: '2026-11-28T11:00:00.000Z' })).toBeNull();
    expect(recordedEnd({ ...state, ended_print: { ...ended, started_at: null } }, { name: 'cube.gcode', startTime: '2026-11-28T11:00:00.000Z' })).toBeNull();
    expect(recordedEnd({ ...state, ended_print: null }, { name: 'cube.gcode', startTime: null })).toBeNull();
  });
});
