import {
  CANCELLED_PRINT_ERROR,
  compareVersions,
  hmsCode,
  ingestReport,
  isStatusReport,
  machineState,
  mergeReport,
  modelFromSerial,
  parseVersionInfo,
  printerError,
  supportsRemoteControl,
  toPrinterState,
  type BambuTracked,
  type Json,
} from '../../service/printers/bambu/state';
import { parseListDate } from '../../service/printers/bambu/ftp';
import { BambuReports } from '../../service/printers/bambu/reports';

const SERIAL = '01P00A123456789';

function fullReport(overrides: Json = {}): Json {
  return {
    command: 'push_status',
    msg: 0,
    gcode_state: 'RUNNING',
    mc_percent: 42,
    mc_remaining_time: 17,
    layer_num: 12,
    total_layer_num: 40,
    nozzle_temper: 219.5,
    nozzle_target_temper: 220,
    bed_temper: 54.9,
    bed_target_temper: 55,
    chamber_temper: 31,
    subtask_name: 'Benchy',
    gcode_file: 'Benchy.gcode.3mf',
    gcode_start_time: '1681479206',
    print_error: 0,
    hms: [],
    ams: {
      ams: [
        {
          id: '0',
          humidity: '4',
          tray: [
            { id: '0', tray_type: 'PLA', tray_color: '00AE42FF', remain: 80 },
            { id: '1', tray_type: 'PETG', tray_color: '000000FF', remain: 40 },
          ],
        },
      ],
      tray_now: '0',
    },
    ...overrides,
  };
}

function track(...reports: Json[]): BambuTracked {
  let t: BambuTracked | null = null;
  for (const r of reports) t = ingestReport(t, r);
  return t!;
}

describe('merging Bambu reports', () => {
  it('keeps every field a delta does not carry (field = new ?? previous)', () => {
    const merged = mergeReport(fullReport(), { command: 'push_status', msg: 1, mc_percent: 43, nozzle_temper: null });
    expect(merged.mc_percent).toBe(43);
    expect(merged.nozzle_temper).toBe(219.5);
    expect(merged.subtask_name).toBe('Benchy');
    expect(merged.gcode_state).toBe('RUNNING');
  });

  it('keeps the previous objects where a report repeats them, and copies only the changed path', () => {
    const first = track(fullReport());
    // A full report (msg 0) that repeats the AMS keeps the object already held.
    const again = track(fullReport(), fullReport({ nozzle_temper: 221 }));
    expect(again.print.nozzle_temper).toBe(221);
    const afterFull = ingestReport(first, fullReport({ nozzle_temper: 221 }));
    expect(afterFull.print.ams).toBe(first.print.ams);
    expect(afterFull.print.hms).toBe(first.print.hms);
    // A delta that changes nothing kept hands back the same merged report.
    expect(ingestReport(first, { command: 'push_status', msg: 1, mc_percent: 42, hms: [] }).print).toBe(first.print);
    // A delta that changes one tray: a new AMS, unit and tray; the other tray stays the same object.
    const ams = (t: BambuTracked) => (t.print.ams as { ams: Array<{ tray: Json[] }> }).ams[0];
    const next = ingestReport(first, { command: 'push_status', msg: 1, ams: { ams: [{ id: '0', tray: [{ id: '1', remain: 39 }] }] } });
    expect(next.print.ams).not.toBe(first.print.ams);
    expect(ams(next).tray[1]).toEqual({ id: '1', tray_type: 'PETG', tray_color: '000000FF', remain: 39 });
    expect(ams(next).tray[0]).toBe(ams(first).tray[0]);
    expect(ams(first).tray[1].remain).toBe(40);
  });

  it('a report that moves only temperatures changes only the temperatures: the same state otherwise, equal to a full mapping', () => {
    const reports = new BambuReports();
    const take = (print: Json) => reports.take(Buffer.from(JSON.stringify({ print: { command: 'push_status', ...print } })), SERIAL);
    take(fullReport());
    const first = reports.current!;
    // A P1-style delta: the core keys again, only the nozzle moved.
    const core = { msg: 1, gcode_state: 'RUNNING', mc_percent: 42, mc_remaining_time: 17, layer_num: 12, bed_temper: 54.9, print_error: 0 };
    const out = take({ ...core, nozzle_temper: 221 });
    expect(out).toMatchObject({ kind: 'taken', state: expect.objectContaining({ temperatures: expect.objectContaining({ nozzle: 221, bed: 54.9 }) }) });
    const second = reports.current!;
    expect(second.job).toBe(first.job);
    expect(second.materials).toBe(first.materials);
    expect(second.attention).toBe(first.attention);
    // The same as mapping the merged report from scratch.
    const fresh = new BambuReports();
    fresh.take(Buffer.from(JSON.stringify({ print: { command: 'push_status', ...fullReport({ nozzle_temper: 221 }) } })), SERIAL);
    expect(second).toEqual(fresh.current);
    // Every field, in the same order (one object shape for all the states a driver hands out).
    expect(Object.keys(second)).toEqual(Object.keys(fresh.current!));
    // The same temperatures again: no new state. Progress moves: a new job object.
    expect(take({ ...core, nozzle_temper: 221 })).toMatchObject({ kind: 'taken', state: null });
    take({ ...core, nozzle_temper: 221, mc_percent: 43 });
    expect(reports.current!.job).not.toBe(first.job);
    expect(reports.current!.job?.progress).toBe(43);
  });

  it('writes a report that moves only temperatures into the merged report in place; any other change copies it', () => {
    const first = ingestReport(null, { ...fullReport(), msg: 0 });
    const core = { msg: 1, gcode_state: 'RUNNING', mc_percent: 42, layer_num: 12, hms: [], print_error: 0 };
    const moved = ingestReport(first, { ...core, nozzle_temper: 221, bed_temper: 55.5 });
    expect(moved.print).toBe(first.print);
    expect(moved.temperaturesMoved).toBe(true);
    expect(moved.print).toMatchObject({ nozzle_temper: 221, bed_temper: 55.5, mc_percent: 42 });
    // A full report (an X1's) that repeats everything else: the same.
    const full = ingestReport(moved, { ...fullReport(), msg: 0, nozzle_temper: 222, bed_temper: 55.5 });
    expect(full.print).toBe(first.print);
    expect(full).toMatchObject({ temperaturesMoved: true, print: { nozzle_temper: 222 } });
    // Nothing new: the same object, nothing moved.
    expect(ingestReport(full, { ...core, nozzle_temper: 222 })).toMatchObject({ print: first.print, temperaturesMoved: false });
    // Progress moves too: a new merged report, the old one left as it was.
    const progressed = ingestReport(full, { ...core, mc_percent: 43, nozzle_temper: 223 });
    expect(progressed.print).not.toBe(first.print);
    expect(progressed).toMatchObject({ temperaturesMoved: false, print: { mc_percent: 43, nozzle_temper: 223 } });
    expect(first.print).toMatchObject({ mc_percent: 42, nozzle_temper: 222 });
  });

  it('merges AMS units and trays by id instead of replacing the list', () => {
    const merged = mergeReport(fullReport(), { ams: { ams: [{ id: '0', tray: [{ id: '1', remain: 39 }] }] } }) as { ams: { ams: Json[]; tray_now: string } };
    const trays = merged.ams.ams[0].tray as Json[];
    expect(trays).toEqual([
      { id: '0', tray_type: 'PLA', tray_color: '00AE42FF', remain: 80 },
      { id: '1', tray_type: 'PETG', tray_color: '000000FF', remain: 39 },
    ]);
    expect(merged.ams.ams[0].humidity).toBe('4');
    expect(merged.ams.tray_now).toBe('0');
  });

  it('adds a new AMS unit and treats an id-only tray as an emptied slot', () => {
    const merged = mergeReport(fullReport(), { ams: { ams: [{ id: '0', tray: [{ id: '0' }] }, { id: '1', tray: [{ id: '0', tray_type: 'ABS' }] }] } }) as { ams: { ams: Json[] } };
    expect(merged.ams.ams).toHaveLength(2);
    expect((merged.ams.ams[0].tray as Json[])[0]).toEqual({ id: '0' });
    expect((merged.ams.ams[1].tray as Json[])[0]).toEqual({ id: '0', tray_type: 'ABS' });
  });

  it('clears HMS on an empty hms array and keeps it when hms is absent', () => {
    const withHms = mergeReport(fullReport(), { hms: [{ attr: 0x07002000, code: 0x00020001 }] });
    expect(mergeReport(withHms, { mc_percent: 50 }).hms).toHaveLength(1);
    expect(mergeReport(withHms, { hms: [] }).hms).toEqual([]);
  });

  it('takes a full snapshot (msg 0) key by key whole: a unit it no longer lists is gone, a null keeps the old value', () => {
    const twoUnits = track(fullReport({ ams: { ams: [{ id: '0', tray: [{ id: '0', tray_type: 'PLA' }] }, { id: '1', tray: [{ id: '0', tray_type: 'ABS' }] }] } }));
    const next = ingestReport(twoUnits, fullReport({ nozzle_temper: null, ams: { ams: [{ id: '0', tray: [{ id: '0', tray_type: 'PETG' }] }] } }));
    expect((next.print.ams as { ams: Json[] }).ams).toEqual([{ id: '0', tray: [{ id: '0', tray_type: 'PETG' }] }]);
    expect(next.print.nozzle_temper).toBe(219.5);
    // A delta after it still merges by id.
    const delta = ingestReport(next, { command: 'push_status', msg: 1, ams: { ams: [{ id: '0', tray: [{ id: '0', remain: 12 }] }] } });
    expect((delta.print.ams as { ams: Json[] }).ams).toEqual([{ id: '0', tray: [{ id: '0', tray_type: 'PETG', remain: 12 }] }]);
  });

  it('takes only push_status as state (command answers share the print key)', () => {
    expect(isStatusReport({ print: { command: 'push_status', msg: 1 } })).toBe(true);
    expect(isStatusReport({ print: { command: 'pause', result: 'success' } })).toBe(false);
    expect(isStatusReport({ info: { command: 'get_version' } })).toBe(false);
  });
});

describe('mapping Bambu reports to the printer state', () => {
  it('maps gcode_state to the machine state', () => {
    expect(machineState('IDLE')).toBe('idle');
    expect(machineState('PREPARE')).toBe('preparing');
    expect(machineState('SLICING')).toBe('preparing');
    expect(machineState('RUNNING')).toBe('printing');
    expect(machineState('RUNNING', { printType: 'system' })).toBe('busy');
    expect(machineState('PAUSE')).toBe('paused');
    expect(machineState('FINISH')).toBe('finished');
    expect(machineState('FAILED')).toBe('failed');
    expect(machineState('FAILED', { printError: CANCELLED_PRINT_ERROR })).toBe('stopped');
    expect(machineState('INIT')).toBe('busy');
  });

  it('reads a running print: progress, layers, remaining minutes as seconds, temperatures, start time', () => {
    const state = toPrinterState(track(fullReport()), { version: null, serial: SERIAL });
    expect(state.state).toBe('printing');
    expect(state.raw_state).toBe('RUNNING');
    expect(state.temperatures).toEqual({ nozzle: 219.5, nozzle_target: 220, bed: 54.9, bed_target: 55, chamber: 31 });
    expect(state.job).toEqual({
      name: 'Benchy',
      file: 'Benchy.gcode.3mf',
      progress: 42,
      layer_current: 12,
      layer_total: 40,
      remaining_seconds: 17 * 60,
      started_at: '2023-04-14T13:33:26.000Z',
      printer_job_id: null,
      time_printing: null,
    });
    expect(state.error).toBeNull();
    expect(state.model).toBe('P1S'); // from the serial prefix until get_version answers
  });

  it('coerces numbers sent as strings and falls back to gcode_file for the job name', () => {
    const state = toPrinterState(track(fullReport({ subtask_name: '', gcode_file: '/data/Metadata/plate_1.gcode', mc_percent: '7', nozzle_temper: '200.5' })), { version: null, serial: SERIAL });
    expect(state.job?.name).toBe('plate_1.gcode');
    expect(state.job?.progress).toBe(7);
    expect(state.temperatures.nozzle).toBe(200.5);
  });

  it('shows no job when idle and progress 0 while a new job prepares (mc_percent may still be the old 100)', () => {
    expect(toPrinterState(track(fullReport({ gcode_state: 'IDLE' })), { version: null, serial: SERIAL }).job).toBeNull();
    const preparing = toPrinterState(track(fullReport({ gcode_state: 'PREPARE', mc_percent: 100 })), { version: null, serial: SERIAL });
    expect(preparing.state).toBe('preparing');
    expect(preparing.job?.progress).toBe(0);
  });

  it('keeps a user stop as "stopped" after print_error 50348044 clears, until the next job', () => {
    let t = track(fullReport(), { gcode_state: 'FAILED', print_error: CANCELLED_PRINT_ERROR });
    expect(toPrinterState(t, { version: null, serial: SERIAL }).state).toBe('stopped');
    expect(toPrinterState(t, { version: null, serial: SERIAL }).error).toBeNull();
    t = ingestReport(t, { print_error: 0 });
    expect(toPrinterState(t, { version: null, serial: SERIAL }).state).toBe('stopped');
    t = ingestReport(t, { gcode_state: 'PREPARE' });
    t = ingestReport(t, { gcode_state: 'FAILED', print_error: 0x07008011 });
    const failed = toPrinterState(t, { version: null, serial: SERIAL });
    expect(failed.state).toBe('failed');
    expect(failed.error).toEqual({ code: '0700_8011', message: 'AMS filament ran out.' });
  });

  it('keeps a stop only for the same FAILED run: another run, or a real print_error, is a failure (a new link after a drop)', () => {
    const cancelled = track(fullReport({ gcode_state: 'FAILED', print_error: CANCELLED_PRINT_ERROR, gcode_start_time: '1700000000', task_id: '7' }), { print_error: 0 });
    const stateOf = (t: BambuTracked) => toPrinterState(t, { version: null, serial: SERIAL }).state;
    expect(stateOf(cancelled)).toBe('stopped');
    // The new link's full report shows the same run: still the user's stop.
    expect(stateOf(ingestReport(cancelled, fullReport({ gcode_state: 'FAILED', print_error: 0, gcode_start_time: '1700000000', task_id: '7' })))).toBe('stopped');
    // A print started and failed while the link was down (its print_error cleared too): a failure.
    expect(stateOf(ingestReport(cancelled, fullReport({ gcode_state: 'FAILED', print_error: 0, gcode_start_time: '1700000900', task_id: '8' })))).toBe('failed');
    // The printer names a real failure: that is what it shows.
    expect(stateOf(ingestReport(cancelled, { command: 'push_status', msg: 1, print_error: 0x07008011 }))).toBe('failed');
  });

  it('reports the most severe HMS entry with its code and a readable message', () => {
    expect(hmsCode(0x07002000, 0x00020001)).toBe('0700_2000_0002_0001');
    const error = printerError({ hms: [{ attr: 0x0c000300, code: 0x00040001 }, { attr: 0x07002000, code: 0x00020001 }], print_error: 0 });
    expect(error).toEqual({ code: 'HMS_0700_2000_0002_0001', message: 'AMS A Slot 1 filament has run out.' });
    // A code Bambu Lab does not publish keeps the module and severity.
    const generic = printerError({ hms: [{ attr: 0x08ff1000, code: 0x0003ff02 }] });
    expect(generic?.message).toBe('toolhead reports HMS 08FF_1000_0003_FF02 (common)');
    const idleWithFatal = toPrinterState(track(fullReport({ gcode_state: 'IDLE', hms: [{ attr: 0x03000100, code: 0x00010007 }] })), { version: null, serial: SERIAL });
    expect(idleWithFatal.state).toBe('error');
  });

  it('reads firmware and model from get_version', () => {
    const info = {
      command: 'get_version',
      module: [
        { name: 'mc', sw_ver: '00.00.29.27', hw_ver: 'MC07' },
        { name: 'ota', sw_ver: '01.08.02.00', hw_ver: 'OTA', product_name: 'Bambu Lab P1S' },
      ],
    };
    expect(parseVersionInfo(info)).toEqual({ firmware: '01.08.02.00', model: 'P1S' });
    expect(parseVersionInfo({ module: [{ name: 'ota', sw_ver: '01.04.00.00', project_name: 'N2S' }] })).toEqual({ firmware: '01.04.00.00', model: 'A1' });
    expect(modelFromSerial('00M09A350100001')).toBe('X1C');
    expect(modelFromSerial('030xxx')).toBe('A1 mini');
    expect(modelFromSerial('ZZZ')).toBeNull();
  });

  it('derives capabilities: AMS from reported units, remote control from fun or the authorization firmware', () => {
    const withAms = toPrinterState(track(fullReport()), { version: { firmware: '01.07.00.00', model: 'P1S' }, serial: SERIAL });
    expect(withAms.capabilities).toEqual({ has_camera: true, has_ams: true, supports_remote_control: true });
    expect(withAms.firmware_version).toBe('01.07.00.00');
    const noAms = toPrinterState(track(fullReport({ ams: { ams: [], ams_exist_bits: '0' } })), { version: null, serial: SERIAL });
    expect(noAms.capabilities?.has_ams).toBe(false);

    expect(compareVersions('01.08.02.00', '01.08.02.00')).toBe(0);
    expect(compareVersions('01.08.10.00', '01.08.02.00')).toBeGreaterThan(0);
    expect(supportsRemoteControl('P1S', '01.08.01.00', undefined)).toBe(true);
    expect(supportsRemoteControl('P1S', '01.08.02.00', undefined)).toBe(false);
    expect(supportsRemoteControl('A1', '01.05.00.00', undefined)).toBe(false);
    expect(supportsRemoteControl('X1C', '01.08.50.31', undefined)).toBe(true);
    // The printer's own flag wins: Developer Mode clears bit 0x20000000.
    expect(supportsRemoteControl('P1S', '01.09.00.00', '3EC18FFF9CFF')).toBe(true);
    expect(supportsRemoteControl('P1S', '01.00.00.00', '3EC1AFFF9CFF')).toBe(false);
  });
});

describe('mapping again after a report', () => {
  it('keeps the materials and capabilities a delta did not touch (same objects), and rebuilds them when the AMS changes', () => {
    const first = track(fullReport());
    const state = toPrinterState(first, { version: null, serial: SERIAL });
    const temperature = ingestReport(first, { command: 'push_status', msg: 1, nozzle_temper: 221 });
    const again = toPrinterState(temperature, { version: null, serial: SERIAL }, { print: first.print, state });
    expect(again.temperatures.nozzle).toBe(221);
    expect(again.materials).toBe(state.materials);
    expect(again.capabilities).toBe(state.capabilities);
    const loaded = ingestReport(temperature, { command: 'push_status', msg: 1, ams: { ams: [{ id: '0', tray: [{ id: '1', tray_type: 'ABS' }] }] } });
    const changed = toPrinterState(loaded, { version: null, serial: SERIAL }, { print: temperature.print, state: again });
    expect(changed.materials).not.toBe(state.materials);
    expect(changed.materials?.map((m) => m.type)).toEqual(['PLA', 'ABS']);
    expect(changed).toEqual({ ...toPrinterState(loaded, { version: null, serial: SERIAL }) });
  });
});

describe('what is loaded before the trays are reported', () => {
  it('a delta that comes ahead of the pushall answer leaves the materials unknown, not empty; the full report then gives them', () => {
    const reports = new BambuReports();
    const take = (print: Json) => reports.take(Buffer.from(JSON.stringify({ print: { command: 'push_status', ...print } })), SERIAL);
    take({ msg: 1, gcode_state: 'IDLE', nozzle_temper: 30, bed_temper: 25 });
    expect(reports.current).not.toBeNull();
    expect(reports.current!.materials).toBeUndefined();
    take(fullReport());
    expect(reports.current!.materials?.map((m) => m.type)).toEqual(['PLA', 'PETG']);
    // A printer whose trays are all empty says so: an empty list.
    const empty = new BambuReports();
    empty.take(Buffer.from(JSON.stringify({ print: { command: 'push_status', ...fullReport({ ams: { ams: [{ id: '0', tray: [{ id: '0' }] }] } }) } })), SERIAL);
    expect(empty.current!.materials).toEqual([]);
  });
});

describe('FTP listing dates', () => {
  it('reads vsftpd dates with and without a year', () => {
    const now = new Date('2026-03-10T12:00:00Z');
    expect(parseListDate('Jun 17 2025', now)).toBe('2025-06-17T00:00:00.000Z');
    expect(parseListDate('Mar 01 09:05', now)).toBe('2026-03-01T09:05:00.000Z');
    expect(parseListDate('Dec 24 18:00', now)).toBe('2025-12-24T18:00:00.000Z');
    expect(parseListDate('yesterday', now)).toBeNull();
  });
});
