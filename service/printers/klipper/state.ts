/**
 * Moonraker's printer objects -> PrinterState, as pure functions (no I/O; the
 * clock comes in as `now`). The driver keeps one merged copy of the
 * subscribed objects (`mergeStatus`, fed by the subscribe answer and every
 * `notify_status_update` delta) and derives the state from it (`toState`).
 * An object the printer does not have stays absent: its fields are null.
 */
import type { AttentionCause, AttentionText } from '../attention';
import type { EndedPrint, MachineState, PrinterError, PrinterMaterial, PrinterState, PrintProgress } from '../driver';
import { samePrinterState } from '../state-equality';

/** The objects the driver subscribes to (when `printer.objects.list` has them). */
export const SUBSCRIBED = ['webhooks', 'print_stats', 'virtual_sdcard', 'display_status', 'heater_bed', 'extruder', 'toolhead'] as const;
export type KlipperObjectName = (typeof SUBSCRIBED)[number];
/** The objects above, and the filament runout sensors the printer has (named by their config sections). */
export type KlipperStatus = Partial<Record<KlipperObjectName, Record<string, unknown>>> & { [sensor: string]: Record<string, unknown> | undefined };

/** A runout sensor's object: `[filament_switch_sensor name]` or `[filament_motion_sensor name]` in printer.cfg. */
export const RUNOUT_SENSOR = /^filament_(switch|motion)_sensor [A-Za-z0-9_-]{1,64}$/;
/** Most runout sensors followed (a toolchanger has one per tool). */
export const MAX_SENSORS = 8;

/** Most fields one object may carry (Klipper's objects have a few dozen). */
const MAX_FIELDS = 64;
const MAX_TEXT = 500;

/**
 * Merges a status answer or delta into `into` (mutated): known objects only, their fields shallow-merged
 * (Klipper sends a changed field whole, `print_stats.info` included). Returns whether anything was taken.
 */
export function mergeStatus(into: KlipperStatus, delta: unknown): boolean {
  if (!delta || typeof delta !== 'object' || Array.isArray(delta)) return false;
  let took = false;
  // Runout sensors too, up to MAX_SENSORS kept (a peer naming thousands keeps memory bounded).
  let room = MAX_SENSORS - Object.keys(into).filter((n) => RUNOUT_SENSOR.test(n)).length;
  const sensors = Object.keys(delta).filter((name) => RUNOUT_SENSOR.test(name) && (name in into || room-- > 0));
  for (const name of [...SUBSCRIBED, ...sensors]) {
    const fields = (delta as Record<string, unknown>)[name];
    if (!fields || typeof fields !== 'object' || Array.isArray(fields)) continue;
    const target = (into[name] ??= {});
    for (const [key, value] of Object.entries(fields as Record<string, unknown>)) {
      if (!(key in target) && Object.keys(target).length >= MAX_FIELDS) continue;
      target[key] = value;
      took = true;
    }
  }
  return took;
}

/** What the driver knows besides the objects: the server, Klipper's info, the current file's metadata. */
export interface KlipperContext {
  /** Klippy's state from server.info / the notify_klippy_* notifications ('ready', 'shutdown', 'disconnected'...). */
  klippyState: string;
  /** Klippy's state message (printer.info), e.g. the shutdown reason. */
  klippyMessage: string | null;
  firmwareVersion: string | null;
  nozzleDiameter: number | null;
  hasCamera: boolean;
  /** The webcam Moonraker lists (absolute http(s) URL), null when none. */
  cameraUrl: string | null;
  /** The active Spoolman spool (slot 0), [] for none; null when the printer has no Spoolman (not reported). */
  materials: PrinterMaterial[] | null;
  /** Metadata of the file print_stats names (server.files.metadata), when known. */
  metadata: { filename: string; estimated_time: number | null } | null;
  /** Moonraker's history: the newest ended print (history.ts); null when none, or no history component. */
  endedPrint?: EndedPrint | null;
  now: number;
}

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const text = (v: unknown): string | null => (typeof v === 'string' ? v.slice(0, MAX_TEXT) : null);

/** print_stats.state -> the normalised machine state. */
export function mapPrintStatsState(raw: string): MachineState {
  switch (raw) {
    case 'standby':
      return 'idle';
    case 'printing':
      return 'printing';
    case 'paused':
      return 'paused';
    case 'complete':
      return 'finished';
    case 'cancelled':
      return 'stopped';
    case 'error':
      return 'error';
    default:
      return 'busy';
  }
}

/** The state, raw word and error (with Klipper's full message): Klippy's own state wins over the print's (a shutdown Klipper prints nothing). */
function machineOf(status: KlipperStatus, ctx: KlipperContext): { state: MachineState; raw: string; error: PrinterError | null; full: string } {
  const klippy = text(status.webhooks?.state) ?? ctx.klippyState;
  const klippyMessage = (text(status.webhooks?.state_message) ?? ctx.klippyMessage ?? '').trim();
  if (klippy === 'shutdown' || klippy === 'error') {
    const message = klippyMessage || (klippy === 'shutdown' ? 'Klipper is shut down' : 'Klipper failed to start');
    return { state: 'error', raw: klippy.toUpperCase(), error: { code: `KLIPPY_${klippy.toUpperCase()}`, message: `Klipper ${klippy}: ${firstLine(message)}` }, full: klippyMessage };
  }
  if (klippy === 'startup') return { state: 'busy', raw: 'STARTUP', error: null, full: '' };
  const raw = text(status.print_stats?.state) ?? 'standby';
  const state = mapPrintStatsState(raw);
  if (state === 'error') {
    const message = (text(status.print_stats?.message) ?? '').trim();
    return { state, raw: raw.toUpperCase(), error: { code: 'PRINT_ERROR', message: message ? `Print error: ${firstLine(message)}` : 'The print stopped with an error' }, full: message };
  }
  return { state, raw: raw.toUpperCase(), error: null, full: '' };
}

/** What to do when Klipper's message says nothing about it (English, and German as the other families give it). */
const FALLBACK: Record<string, { severity: AttentionCause['severity']; en: string; de: string }> = {
  KLIPPY_SHUTDOWN: { severity: 'fatal', en: 'Fix the cause, then send FIRMWARE_RESTART (Mainsail, Fluidd or the printer\'s screen).', de: 'Ursache beheben, dann FIRMWARE_RESTART senden (Mainsail, Fluidd oder Bildschirm des Druckers).' },
  KLIPPY_ERROR: { severity: 'fatal', en: "Correct printer.cfg (klippy.log names the problem), then send RESTART.", de: 'printer.cfg korrigieren (klippy.log nennt das Problem), dann RESTART senden.' },
  PRINT_ERROR: { severity: 'serious', en: 'Check the printer and the plate; the next print (or SDCARD_RESET_FILE) clears the error.', de: 'Drucker und Druckplatte prüfen; der nächste Druck (oder SDCARD_RESET_FILE) löscht den Fehler.' },
};
/** Klipper's closing line of a shutdown or halt: the state, already said by the entry. */
const CLOSING = /^printer is (shutdown|halted)\.?$/i;

/**
 * A Klippy shutdown or error and a print error as the attention entry the other families give (Prusa ERROR,
 * Bambu HMS), so that the attention list, its /ws frame and the `attention` notification carry them. Klipper's
 * first line says what is wrong; the lines after it are its own advice ("Once the underlying issue is corrected,
 * use the FIRMWARE_RESTART command..."). The previous list while nothing changed (the attention book compares by
 * reference).
 */
function attentionOf(prev: PrinterState | null, error: PrinterError | null, full: string, runout: AttentionCause | null): AttentionCause[] {
  const before = prev?.attention ?? [];
  const causes: AttentionCause[] = [];
  if (error) {
    const what = FALLBACK[error.code] ?? FALLBACK.PRINT_ERROR;
    const lines = full.split('\n').map((l) => l.trim()).filter((l) => l && !CLOSING.test(l));
    const advice = lines.slice(1).join(' ').slice(0, MAX_TEXT);
    const klippy = error.code === 'KLIPPY_SHUTDOWN' ? 'Klipper shut down' : error.code === 'KLIPPY_ERROR' ? 'Klipper failed to start' : null;
    const message = klippy ? (lines[0] ? `${klippy}: ${lines[0]}` : klippy) : error.message;
    const en: AttentionText = { message, action: advice || what.en };
    causes.push({ code: error.code, severity: what.severity, source: 'klipper', text: advice ? { en } : { en, de: { message, action: what.de } } });
  }
  if (runout) causes.push(runout);
  const same = causes.length === before.length && causes.every((c, i) => c.code === before[i].code && c.severity === before[i].severity && c.text.en.message === before[i].text.en.message && c.text.en.action === before[i].text.en.action);
  return same ? before : causes;
}

/**
 * A print its runout sensor stopped: a sensor (enabled) that no longer detects filament while a print runs or is
 * paused (Klipper's runout_gcode pauses it by default). Nobody at the printer sees "paused" alone as a reason;
 * Prusa's ATTENTION and Bambu's HMS say "filament runout", so this does. Idle without filament is nothing to do.
 */
function runoutOf(status: KlipperStatus, state: MachineState): AttentionCause | null {
  if (state !== 'printing' && state !== 'paused') return null;
  const names = Object.keys(status).filter((name) => RUNOUT_SENSOR.test(name) && status[name]?.enabled !== false && status[name]?.filament_detected === false);
  if (!names.length) return null;
  const empty = names.map((name) => name.slice(name.indexOf(' ') + 1));
  // A motion sensor also trips when the filament stops moving (a jam, a tangle), not only when it runs out.
  const jam = names.some((name) => name.startsWith('filament_motion_sensor'));
  const where = `${empty.length > 1 ? 'sensors' : 'sensor'} ${empty.join(', ')}`;
  const message = `Filament ran out${jam ? ' or jammed' : ''} (${where}): ${state === 'paused' ? 'the print is paused' : 'the print will pause'}`;
  return {
    code: 'FILAMENT_RUNOUT',
    severity: 'serious',
    source: 'klipper',
    text: {
      en: { message, action: `${jam ? 'Clear the jam or load' : 'Load'} new filament, then resume the print (RESUME in Mainsail, Fluidd or on the screen).` },
      de: {
        message: `Filament zu Ende${jam ? ' oder blockiert' : ''} (${empty.length > 1 ? 'Sensoren' : 'Sensor'} ${empty.join(', ')}): ${state === 'paused' ? 'der Druck ist pausiert' : 'der Druck wird pausiert'}`,
        action: 'Neues Filament einlegen, dann den Druck fortsetzen (RESUME in Mainsail, Fluidd oder am Bildschirm).',
      },
    },
  };
}

function firstLine(message: string): string {
  return message.split('\n').find((l) => l.trim())?.trim() ?? message;
}

/** States in which print_stats names the file of a job (the last one, until the next starts or a reset). */
const WITH_JOB = ['printing', 'paused', 'complete', 'cancelled', 'error'];

function jobOf(prev: PrintProgress | null, status: KlipperStatus, ctx: KlipperContext): PrintProgress | null {
  const ps = status.print_stats;
  const raw = text(ps?.state) ?? 'standby';
  const filename = text(ps?.filename) ?? '';
  if (!filename || !WITH_JOB.includes(raw)) return null;
  const total = num(ps?.total_duration);
  const printing = num(ps?.print_duration);
  // The same job while the file stays and its clock does not run backwards (a restart of the file does).
  const same = prev && prev.file === filename && !(total !== null && prev.time_printing !== null && printing !== null && printing + 5 < prev.time_printing) ? prev : null;
  const fraction = num(status.display_status?.progress) ?? num(status.virtual_sdcard?.progress);
  let progress = fraction === null ? (same?.progress ?? 0) : Math.round(Math.max(0, Math.min(1, fraction)) * 1000) / 10;
  if (raw === 'complete') progress = 100;
  const info = ps?.info && typeof ps.info === 'object' ? (ps.info as Record<string, unknown>) : null;
  const layer = (v: unknown) => {
    const n = num(v);
    return n === null || n < 0 ? null : Math.round(n);
  };
  const estimate = ctx.metadata?.filename === filename ? ctx.metadata.estimated_time : null;
  let remaining: number | null = null;
  if (raw === 'complete' || raw === 'cancelled' || raw === 'error') remaining = 0;
  else if (estimate !== null && printing !== null) remaining = Math.max(0, Math.round(estimate - printing));
  else if (printing !== null && fraction !== null && fraction > 0.01) remaining = Math.max(0, Math.round(printing / fraction - printing));
  // The start is fixed the first time the job is seen, so that it does not drift update by update.
  const startedAt = same?.started_at ?? (total !== null ? new Date(Math.floor(ctx.now / 1000) * 1000 - Math.round(total) * 1000).toISOString() : null);
  return {
    name: filename.split('/').pop() || filename,
    file: filename,
    display_name: null,
    progress,
    layer_current: layer(info?.current_layer),
    layer_total: layer(info?.total_layer),
    remaining_seconds: remaining,
    started_at: startedAt,
    printer_job_id: null,
    time_printing: printing === null ? null : Math.round(printing),
  };
}

/** The merged objects (and what else the driver knows) as the normalised state. */
export function toState(prev: PrinterState | null, status: KlipperStatus, ctx: KlipperContext): PrinterState {
  const { state, raw, error, full } = machineOf(status, ctx);
  const t = prev?.temperatures;
  return {
    state,
    raw_state: raw,
    temperatures: {
      nozzle: num(status.extruder?.temperature) ?? t?.nozzle ?? 0,
      bed: num(status.heater_bed?.temperature) ?? t?.bed ?? 0,
      nozzle_target: num(status.extruder?.target) ?? t?.nozzle_target ?? 0,
      bed_target: num(status.heater_bed?.target) ?? t?.bed_target ?? 0,
    },
    job: jobOf(prev?.job ?? null, status, ctx),
    error,
    attention: attentionOf(prev, error, full, runoutOf(status, state)),
    firmware_version: ctx.firmwareVersion,
    // Klipper does not know what machine it drives: the configured model stays.
    model: null,
    capabilities: { has_camera: ctx.hasCamera, has_ams: false, supports_remote_control: true },
    ...(ctx.nozzleDiameter !== null ? { nozzle_diameter: ctx.nozzleDiameter } : {}),
    ...(ctx.materials !== null ? { materials: ctx.materials } : {}),
    ...(ctx.cameraUrl !== null ? { camera_url: ctx.cameraUrl } : {}),
    ...(ctx.endedPrint ? { ended_print: ctx.endedPrint } : {}),
  };
}

/** True when two states differ in anything a listener would see (field by field: no serialisation per delta). */
export function stateChanged(a: PrinterState | null, b: PrinterState): boolean {
  return !samePrinterState(a, b);
}
