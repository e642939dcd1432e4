/**
 * The simulated printer's Klipper objects as Moonraker reports them, and the
 * per-connection subscription that turns them into `notify_status_update`
 * deltas (only the fields that changed since the last push, like Moonraker).
 */
import { LAYERS, type KlipperMachine } from './machine';

export const ALL_OBJECTS = [
  'webhooks',
  'configfile',
  'gcode_move',
  'print_stats',
  'virtual_sdcard',
  'pause_resume',
  'display_status',
  'heater_bed',
  'extruder',
  'heaters',
  'toolhead',
  'idle_timeout',
  'fan',
];
/** The runout sensor a printer with `runoutSensor` has (named as its config section, `[filament_switch_sensor runout]`). */
export const RUNOUT_SENSOR = 'filament_switch_sensor runout';

const r1 = (n: number) => Math.round(n * 10) / 10;

/** Every field of `name` now, or undefined for an object the printer does not have. */
export function objectStatus(m: KlipperMachine, name: string, options: { nozzleDiameter: number }): Record<string, unknown> | undefined {
  switch (name) {
    case 'webhooks':
      return { state: m.klippy, state_message: m.klippyMessage };
    case 'print_stats':
      return {
        filename: m.filename,
        total_duration: r1(m.totalDuration),
        print_duration: r1(m.printDuration),
        filament_used: r1(m.printDuration * 12),
        state: m.state,
        message: m.message,
        info: m.filename && m.state !== 'standby' ? { total_layer: LAYERS, current_layer: m.currentLayer } : { total_layer: null, current_layer: null },
      };
    case 'virtual_sdcard':
      return { file_path: m.filename ? `/home/pi/printer_data/gcodes/${m.filename}` : null, progress: Math.round(m.fraction * 1000) / 1000, is_active: m.state === 'printing', file_position: 0, file_size: 0 };
    case 'display_status':
      return { progress: Math.round(m.fraction * 100) / 100, message: null };
    case 'heater_bed':
      return { temperature: r1(m.bed), target: m.targetBed, power: m.targetBed ? 0.5 : 0 };
    case 'extruder':
      return { temperature: r1(m.nozzle), target: m.targetNozzle, power: m.targetNozzle ? 0.4 : 0, pressure_advance: 0.04 };
    case 'toolhead':
      return { homed_axes: m.busy ? 'xyz' : '', extruder: 'extruder', max_velocity: 500 };
    case 'configfile':
      return { settings: { extruder: { nozzle_diameter: options.nozzleDiameter }, printer: { kinematics: 'corexy' } } };
    case RUNOUT_SENSOR:
      return { filament_detected: m.filamentDetected, enabled: true };
    case 'idle_timeout':
      return { state: m.busy ? 'Printing' : 'Idle' };
    default:
      return ALL_OBJECTS.includes(name) ? {} : undefined;
  }
}

/** What one connection subscribed to (object -> fields, null: all) and what it was last sent. */
export class Subscription {
  private sent = new Map<string, Record<string, string>>();

  constructor(private readonly wanted: Record<string, string[] | null>) {}

  /** The full status of the subscribed objects that exist (the subscribe answer), remembered as sent. */
  full(read: (name: string) => Record<string, unknown> | undefined): Record<string, Record<string, unknown>> {
    this.sent.clear();
    const out: Record<string, Record<string, unknown>> = {};
    for (const [name, fields] of Object.entries(this.wanted)) {
      const all = read(name);
      if (!all) continue; // a missing object is left out of the answer, no error (Moonraker)
      const picked = pick(all, fields);
      out[name] = picked;
      this.sent.set(name, fingerprint(picked));
    }
    return out;
  }

  /** The fields that changed since the last call, or null when nothing did. */
  delta(read: (name: string) => Record<string, unknown> | undefined): Record<string, Record<string, unknown>> | null {
    let out: Record<string, Record<string, unknown>> | null = null;
    for (const [name, fields] of Object.entries(this.wanted)) {
      const all = read(name);
      if (!all) continue;
      const picked = pick(all, fields);
      const before = this.sent.get(name) ?? {};
      const now = fingerprint(picked);
      for (const [key, value] of Object.entries(picked)) {
        if (before[key] === now[key]) continue;
        out ??= {};
        (out[name] ??= {})[key] = value;
      }
      this.sent.set(name, now);
    }
    return out;
  }
}

function pick(all: Record<string, unknown>, fields: string[] | null): Record<string, unknown> {
  if (!fields) return { ...all };
  return Object.fromEntries(fields.filter((f) => f in all).map((f) => [f, all[f]]));
}

function fingerprint(o: Record<string, unknown>): Record<string, string> {
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, JSON.stringify(v)]));
}
