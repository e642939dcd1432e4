/**
 * A new Bambu driver (a service restart, a connection test) that finds its printer FAILED with print_error 0
 * shows that run stopped when the service's last job of the printer, that very run, ended cancelled: the printer
 * said "cancelled" (50348044) only for a few seconds, before the driver started. Any other first state, another
 * run or a real print_error is what the printer says.
 */
import { BambuReports } from '../../service/printers/bambu/reports';
import { CANCELLED_PRINT_ERROR, type Json } from '../../service/printers/bambu/state';
import { isSameRun, runOfJob } from '../../service/monitoring/print-identity';
import type { PrintProgress } from '../../service/printers/driver';

const SERIAL = '01P00A123456789';
const START = '1700000000';

/** The run the job tracker recorded for a print of Cube (task 7, started at START), as a driver gets it. */
const cancelledCube = (() => {
  const run = runOfJob({ filename: 'Cube.gcode.3mf', job_name: 'Cube', printer_job_id: '7', customer_info: { printer_start_time: new Date(Number(START) * 1000).toISOString() } });
  return jest.fn((print: PrintProgress | null) => print !== null && isSameRun(run, print));
})();

function report(overrides: Json = {}): Json {
  return {
    command: 'push_status',
    msg: 0,
    gcode_state: 'FAILED',
    print_error: 0,
    mc_percent: 40,
    subtask_name: 'Cube',
    gcode_file: 'Cube.gcode.3mf',
    gcode_start_time: START,
    task_id: '7',
    nozzle_temper: 30,
    bed_temper: 25,
    hms: [],
    ...overrides,
  };
}

function driverReports(isRun: ((print: PrintProgress | null) => boolean) | null = cancelledCube) {
  const reports = new BambuReports(isRun);
  const take = (print: Json) => {
    reports.take(Buffer.from(JSON.stringify({ print: print })), SERIAL);
    return reports.current?.state;
  };
  return { reports, take };
}

beforeEach(() => cancelledCube.mockClear());

describe('a new Bambu driver and the service\'s cancelled last job', () => {
  it('the cancelled run, FAILED with print_error 0, is stopped, and stays so while the printer shows it', () => {
    const { reports, take } = driverReports();
    expect(take(report())).toBe('stopped');
    expect(reports.current!.error).toBeNull();
    expect(reports.current!.job).toMatchObject({ name: 'Cube', printer_job_id: '7' });
    // Its deltas and a new link's full report of the same run: still the cancel.
    expect(take({ command: 'push_status', msg: 1, nozzle_temper: 29, mc_percent: 41 })).toBe('stopped');
    reports.awaitFullReport();
    expect(take(report({ bed_temper: 24 }))).toBe('stopped');
    // The next print, and its failure: what the printer says.
    expect(take({ command: 'push_status', msg: 1, gcode_state: 'PREPARE', gcode_start_time: '1700000900', task_id: '8' })).toBe('preparing');
    expect(take({ command: 'push_status', msg: 1, gcode_state: 'FAILED' })).toBe('failed');
    // Asked once, for the first state.
    expect(cancelledCube).toHaveBeenCalledTimes(1);
  });

  it('another run (a print started and failed while the service was down) is failed', () => {
    expect(driverReports().take(report({ gcode_start_time: '1700000900', task_id: '8' }))).toBe('failed');
    expect(driverReports().take(report({ subtask_name: 'Other', gcode_file: 'Other.gcode.3mf', task_id: '0', gcode_start_time: '0' }))).toBe('failed');
  });

  it('a real print_error is a failure, whatever the last job says', () => {
    const { reports, take } = driverReports();
    expect(take(report({ print_error: 0x07008011 }))).toBe('failed');
    expect(reports.current!.error).toMatchObject({ code: '0700_8011' });
  });

  it('without a cancelled last job, FAILED with print_error 0 is failed (the printer says no more)', () => {
    expect(driverReports(null).take(report())).toBe('failed');
    // The printer's own cancel word needs no record.
    expect(driverReports(null).take(report({ print_error: CANCELLED_PRINT_ERROR }))).toBe('stopped');
  });

  it('a first state of anything else ends it: a later FAILED of the same keys is no longer the cancel', () => {
    const { take } = driverReports();
    expect(take(report({ gcode_state: 'IDLE' }))).toBe('idle');
    expect(take({ command: 'push_status', msg: 1, gcode_state: 'FAILED' })).toBe('failed');
    expect(cancelledCube).not.toHaveBeenCalled();
  });

  it('a FAILED run that does not name itself yet (deltas before the full report) is asked again once it does', () => {
    const { reports, take } = driverReports();
    reports.awaitFullReport();
    take({ command: 'push_status', msg: 1, gcode_state: 'FAILED', print_error: 0, nozzle_temper: 30 });
    expect(reports.release(SERIAL)?.state).toBe('failed');
    expect(take(report())).toBe('stopped');
  });
});
