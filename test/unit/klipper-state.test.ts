/**
 * Moonraker's objects -> PrinterState as pure functions: deltas merge into
 * one status, print_stats.state maps onto the farm's states, Klippy's own
 * state wins, a missing object leaves its fields empty, hostile deltas stay
 * bounded.
 */
import { mapPrintStatsState, mergeStatus, toState, type KlipperContext, type KlipperStatus } from '../../service/printers/klipper/state';
import { webcamUrl } from '../../service/printers/klipper/session';

const ctx = (over: Partial<KlipperContext> = {}): KlipperContext => ({
  klippyState: 'ready',
  klippyMessage: null,
  firmwareVersion: 'v0.12.0',
  nozzleDiameter: 0.4,
  hasCamera: false,
  cameraUrl: null,
  materials: null,
  metadata: null,
  now: Date.parse('2026-11-26T10:00:00Z'),
  ...over,
});

describe('Klipper state', () => {
  test('print_stats.state maps onto the farm states', () => {
    expect(['standby', 'printing', 'paused', 'complete', 'cancelled', 'error', 'something_new'].map(mapPrintStatsState)).toEqual(['idle', 'printing', 'paused', 'finished', 'stopped', 'error', 'busy']);
  });

  test('deltas merge field by field into one status; the state follows', () => {
    const status: KlipperStatus = {};
    mergeStatus(status, { print_stats: { state: 'printing', filename: 'a/Part.gcode', total_duration: 130, print_duration: 100, info: { total_layer: 40, current_layer: 3 } }, extruder: { temperature: 239.5, target: 240 }, heater_bed: { temperature: 99, target: 100 }, virtual_sdcard: { progress: 0.1 } });
    mergeStatus(status, { display_status: { progress: 0.2 } });
    mergeStatus(status, { extruder: { temperature: 240.1 } });
    const s = toState(null, status, ctx({ metadata: { filename: 'a/Part.gcode', estimated_time: 1000 } }));
    expect(s).toMatchObject({ state: 'printing', raw_state: 'PRINTING', error: null, model: null, nozzle_diameter: 0.4, temperatures: { nozzle: 240.1, nozzle_target: 240, bed: 99, bed_target: 100 } });
    expect(s.job).toEqual({ name: 'Part.gcode', file: 'a/Part.gcode', display_name: null, progress: 20, layer_current: 3, layer_total: 40, remaining_seconds: 900, started_at: '2026-11-26T09:57:50.000Z', printer_job_id: null, time_printing: 100 });
    mergeStatus(status, { print_stats: { state: 'complete', print_duration: 990 } });
    expect(toState(s, status, ctx()).job).toMatchObject({ progress: 100, remaining_seconds: 0, started_at: '2026-11-26T09:57:50.000Z' });
  });

  test('without display_status or layer info the fields are empty, never an error', () => {
    const status: KlipperStatus = {};
    mergeStatus(status, { print_stats: { state: 'printing', filename: 'x.gcode', print_duration: 50, total_duration: 50, info: { total_layer: null, current_layer: null } }, virtual_sdcard: { progress: 0.25 } });
    const s = toState(null, status, ctx());
    expect(s.job).toMatchObject({ progress: 25, layer_current: null, layer_total: null, remaining_seconds: 150 });
    expect(toState(null, {}, ctx())).toMatchObject({ state: 'idle', job: null, temperatures: { nozzle: 0, bed: 0 } });
  });

  test("Klippy's shutdown is an error with Klipper's message; a print error carries print_stats.message", () => {
    const status: KlipperStatus = {};
    mergeStatus(status, { webhooks: { state: 'shutdown', state_message: "MCU 'mcu' shutdown: Timer too close\nOnce the underlying issue is corrected, use FIRMWARE_RESTART" }, print_stats: { state: 'printing', filename: 'x.gcode' } });
    expect(toState(null, status, ctx())).toMatchObject({ state: 'error', raw_state: 'SHUTDOWN', error: { code: 'KLIPPY_SHUTDOWN', message: "Klipper shutdown: MCU 'mcu' shutdown: Timer too close" } });
    const failed: KlipperStatus = {};
    mergeStatus(failed, { webhooks: { state: 'ready' }, print_stats: { state: 'error', filename: 'x.gcode', message: 'Move out of range' } });
    expect(toState(null, failed, ctx())).toMatchObject({ state: 'error', raw_state: 'ERROR', error: { code: 'PRINT_ERROR', message: 'Print error: Move out of range' }, job: { file: 'x.gcode' } });
  });

  test('a shutdown, a startup error and a print error are attention entries, the same list while Klipper says the same', () => {
    const status: KlipperStatus = {};
    mergeStatus(status, { webhooks: { state: 'ready' }, print_stats: { state: 'printing', filename: 'x.gcode' } });
    const ready = toState(null, status, ctx());
    expect(ready.attention).toEqual([]);
    mergeStatus(status, { webhooks: { state: 'shutdown', state_message: "MCU 'mcu' shutdown: Timer too close\nThis often indicates the host computer is overloaded.\nOnce the underlying issue is corrected, use the\n\"FIRMWARE_RESTART\" command.\nPrinter is shutdown\n" } });
    const down = toState(ready, status, ctx());
    expect(down.attention).toEqual([
      {
        code: 'KLIPPY_SHUTDOWN',
        severity: 'fatal',
        source: 'klipper',
        text: { en: { message: "Klipper shut down: MCU 'mcu' shutdown: Timer too close", action: 'This often indicates the host computer is overloaded. Once the underlying issue is corrected, use the "FIRMWARE_RESTART" command.' } },
      },
    ]);
    mergeStatus(status, { extruder: { temperature: 30 } });
    expect(toState(down, status, ctx()).attention).toBe(down.attention);
    // Without a message: Klipper's words are missing, the service's own action (with German) stands in.
    const bare = toState(null, { webhooks: { state: 'error', state_message: '' } }, ctx());
    expect(bare.attention).toEqual([expect.objectContaining({ code: 'KLIPPY_ERROR', severity: 'fatal', text: { en: { message: 'Klipper failed to start', action: expect.stringContaining('printer.cfg') }, de: expect.objectContaining({ action: expect.stringContaining('printer.cfg') }) } })]);
    const failed = toState(null, { webhooks: { state: 'ready' }, print_stats: { state: 'error', filename: 'x.gcode', message: 'Move out of range' } }, ctx());
    expect(failed.attention).toEqual([expect.objectContaining({ code: 'PRINT_ERROR', severity: 'serious', text: expect.objectContaining({ en: expect.objectContaining({ message: 'Print error: Move out of range' }) }) })]);
    expect(toState(failed, { webhooks: { state: 'ready' }, print_stats: { state: 'standby', filename: '' } }, ctx()).attention).toEqual([]);
  });

  test('a runout sensor without filament during a print is an entry; idle, disabled or a flood of sensors are not', () => {
    const status: KlipperStatus = {};
    mergeStatus(status, { webhooks: { state: 'ready' }, print_stats: { state: 'paused', filename: 'x.gcode' }, 'filament_switch_sensor runout': { filament_detected: false, enabled: true } });
    const paused = toState(null, status, ctx());
    expect(paused.attention).toEqual([expect.objectContaining({ code: 'FILAMENT_RUNOUT', severity: 'serious', source: 'klipper', text: expect.objectContaining({ en: { message: 'Filament ran out (sensor runout): the print is paused', action: expect.stringContaining('RESUME') } }) })]);
    mergeStatus(status, { 'filament_motion_sensor encoder': { filament_detected: false, enabled: true } });
    expect(toState(paused, status, ctx()).attention![0].text.en.message).toBe('Filament ran out or jammed (sensors runout, encoder): the print is paused');
    mergeStatus(status, { 'filament_switch_sensor runout': { enabled: false }, 'filament_motion_sensor encoder': { filament_detected: true } });
    expect(toState(paused, status, ctx()).attention).toEqual([]);
    mergeStatus(status, { 'filament_switch_sensor runout': { enabled: true }, print_stats: { state: 'cancelled' } });
    expect(toState(paused, status, ctx()).attention).toEqual([]);
    mergeStatus(status, Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`filament_switch_sensor s${i}`, { filament_detected: false }])));
    expect(Object.keys(status).filter((n) => n.startsWith('filament_'))).toHaveLength(8);
  });

  test('hostile deltas: unknown objects, non-objects and field floods are bounded', () => {
    const status: KlipperStatus = {};
    expect(mergeStatus(status, null)).toBe(false);
    expect(mergeStatus(status, [1, 2])).toBe(false);
    expect(mergeStatus(status, { evil_object: { a: 1 }, print_stats: 'x' })).toBe(false);
    mergeStatus(status, { extruder: Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`f${i}`, i])) });
    expect(Object.keys(status.extruder!)).toHaveLength(64);
    expect(Object.keys(status)).toEqual(['extruder']);
    mergeStatus(status, { print_stats: { state: 'printing', filename: 'x'.repeat(100_000) } });
    expect(toState(null, status, ctx()).job!.file!.length).toBeLessThanOrEqual(500);
  });
});

describe("the webcam Moonraker lists (a peer's word: the service fetches what it names)", () => {
  const cam = (stream_url: string, over: Record<string, unknown> = {}) => [{ enabled: true, service: 'mjpegstreamer', stream_url, ...over }];

  test('a path is on the printer; a full URL on the printer, any port, is kept', () => {
    expect(webcamUrl(cam('/webcam/?action=stream'), '192.168.1.40')).toBe('http://192.168.1.40/webcam/?action=stream');
    expect(webcamUrl(cam('http://192.168.1.40:8080/?action=stream'), '192.168.1.40')).toBe('http://192.168.1.40:8080/?action=stream');
    expect(webcamUrl(cam('/webcam/?action=stream'), 'fe80::1')).toBe('http://[fe80::1]/webcam/?action=stream');
  });

  test('a full URL on another host, or not http(s), is not used (a camera elsewhere is named by camera_url)', () => {
    expect(webcamUrl(cam('http://169.254.169.254/latest/meta-data/'), '192.168.1.40')).toBeNull();
    expect(webcamUrl(cam('http://127.0.0.1:8000/api/v1/printers'), '192.168.1.40')).toBeNull();
    expect(webcamUrl(cam('//10.0.0.5/cam'), '192.168.1.40')).toBeNull();
    expect(webcamUrl(cam('file:///etc/passwd'), '192.168.1.40')).toBeNull();
    expect(webcamUrl([{ enabled: false, stream_url: '/a' }, { service: 'webrtc-camerastreamer', stream_url: '/b', snapshot_url: '/snap' }], 'voron.local')).toBe('http://voron.local/snap');
  });
});
