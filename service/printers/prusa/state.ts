/**
 * PrusaLink answers -> PrinterState, as pure functions (no I/O, no clock
 * except the `now` passed in). The driver feeds them what it polled; the unit
 * tests feed them literal answers.
 */
import type { AttentionCause } from '../attention';
import type { MachineState, PrinterError, PrinterState, PrintProgress } from '../driver';

/** GET /api/version (Buddy and Prusa-Link on a Pi). */
export interface PrusaVersion {
  api?: string;
  server?: string;
  version?: string;
  printer?: string;
  text?: string;
  firmware?: string;
  sdk?: string;
  hostname?: string;
  nozzle_diameter?: number;
  capabilities?: Record<string, unknown>;
}

/** GET /api/v1/info */
export interface PrusaInfo {
  name?: string;
  location?: string;
  farm_mode?: boolean;
  nozzle_diameter?: number;
  min_extrusion_temp?: number;
  serial?: string;
  hostname?: string;
  port?: string;
  mmu?: boolean;
  sd_ready?: boolean;
  active_camera?: boolean;
}

export interface PrusaStatusPrinter {
  state: string;
  temp_nozzle?: number;
  target_nozzle?: number;
  temp_bed?: number;
  target_bed?: number;
  axis_x?: number;
  axis_y?: number;
  axis_z?: number;
  flow?: number;
  speed?: number;
  fan_hotend?: number;
  fan_print?: number;
  status_printer?: { ok?: boolean; message?: string };
  status_connect?: { ok?: boolean; message?: string };
  /** The loaded filament type (Buddy firmware), "---" when none is loaded. */
  material?: string;
}

export interface PrusaStatusJob {
  id?: number;
  progress?: number;
  time_remaining?: number;
  time_printing?: number;
}

/** GET /api/v1/status: everything but `printer` is optional. */
export interface PrusaStatus {
  printer: PrusaStatusPrinter;
  job?: PrusaStatusJob;
  storage?: unknown;
  transfer?: unknown;
  camera?: { id?: string };
}

export interface PrusaFileRefs {
  icon?: string;
  thumbnail?: string;
  download?: string;
}

/** GET /api/v1/job (204 when there is no job). */
export interface PrusaJob {
  id: number;
  state?: string;
  progress?: number;
  time_remaining?: number;
  time_printing?: number;
  inaccurate_estimates?: boolean;
  file?: {
    name: string;
    display_name?: string;
    path: string;
    display_path?: string;
    size?: number;
    m_timestamp?: number;
    refs?: PrusaFileRefs;
  };
  serial_print?: boolean;
}

/** A child in a folder listing of /api/v1/files/{storage}/{path}. */
export interface PrusaFileEntry {
  name: string;
  display_name?: string;
  type?: string;
  ro?: boolean;
  read_only?: boolean;
  size?: number;
  m_timestamp?: number;
  refs?: PrusaFileRefs;
  children?: PrusaFileEntry[];
}

/** PrusaLink printer.state -> the normalised machine state. */
export function mapPrusaState(raw: string): MachineState {
  switch (raw.toUpperCase()) {
    case 'IDLE':
    case 'READY':
      return 'idle';
    case 'BUSY':
      return 'busy';
    case 'PRINTING':
      return 'printing';
    case 'PAUSED':
      return 'paused';
    case 'FINISHED':
      return 'finished';
    case 'STOPPED':
      return 'stopped';
    case 'ERROR':
    case 'ATTENTION':
      return 'error';
    default:
      // An unknown word from newer firmware: the printer is doing something we cannot name.
      return 'busy';
  }
}

/** Printer states in which a job exists on the printer (so /api/v1/job is worth asking). */
export function stateHasJob(raw: string): boolean {
  return !['IDLE', 'READY', 'BUSY'].includes(raw.toUpperCase());
}

/** The readable error for ERROR and ATTENTION, null otherwise. */
export function errorOf(printer: PrusaStatusPrinter): PrinterError | null {
  const raw = printer.state.toUpperCase();
  const detail = printer.status_printer && printer.status_printer.ok === false ? printer.status_printer.message?.trim() : undefined;
  if (raw === 'ERROR') return { code: 'ERROR', message: detail ? `Printer error: ${detail}` : 'The printer reports an error' };
  if (raw === 'ATTENTION')
    return { code: 'ATTENTION', message: detail ? `The printer needs attention: ${detail}` : 'The printer needs attention (see its screen)' };
  return null;
}

/** The model name, from what the printer says about itself. */
export function modelOf(version: PrusaVersion | null, info: PrusaInfo | null): string | null {
  // Some firmware puts the model in /api/version "printer"; others a version number there.
  if (version?.printer && !/^\d/.test(version.printer)) return version.printer;
  const host = `${info?.hostname ?? ''} ${version?.hostname ?? ''}`.toLowerCase();
  const known: Array<[RegExp, string]> = [
    [/core[-_ ]?one/, 'Core One'],
    [/mk4s/, 'MK4S'],
    [/mk4/, 'MK4'],
    [/mk3[._-]?9/, 'MK3.9'],
    [/mk3[._-]?5/, 'MK3.5'],
    [/mk3/, 'MK3'],
    [/\bxl\b|-xl/, 'XL'],
    [/mini/, 'MINI'],
  ];
  for (const [re, name] of known) if (re.test(host)) return name;
  return null;
}

const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
const seconds = (v: unknown): number | null | undefined => {
  const n = num(v);
  if (n === undefined) return undefined;
  return n < 0 ? null : Math.round(n);
};

export interface MergeInput {
  status: PrusaStatus;
  /** The /api/v1/job answer: an object, null for 204, undefined when not asked this round. */
  job: PrusaJob | null | undefined;
  version: PrusaVersion | null;
  info: PrusaInfo | null;
  /** ms since the epoch, for started_at of a newly seen job. */
  now: number;
}

/**
 * Merges one poll into the previous state. PrusaLink may leave out any field
 * but printer.state (partial reports): a missing value keeps the last one.
 */
export function mergePrusaState(prev: PrinterState | null, input: MergeInput): PrinterState {
  const { status, job, version, info, now } = input;
  const p = status.printer;
  const raw = String(p.state ?? 'UNKNOWN').toUpperCase();
  const prevT = prev?.temperatures;
  const temperatures = {
    nozzle: num(p.temp_nozzle) ?? prevT?.nozzle ?? 0,
    bed: num(p.temp_bed) ?? prevT?.bed ?? 0,
    nozzle_target: num(p.target_nozzle) ?? prevT?.nozzle_target ?? 0,
    bed_target: num(p.target_bed) ?? prevT?.bed_target ?? 0,
  };

  const error = mergeError(prev, p, raw);
  return {
    state: mapPrusaState(raw),
    raw_state: raw,
    temperatures,
    job: mergeJob(prev?.job ?? null, raw, status.job, job, now),
    error,
    attention: attentionOf(prev, error),
    firmware_version: version?.firmware ?? version?.server ?? version?.version ?? prev?.firmware_version ?? null,
    model: modelOf(version, info) ?? prev?.model ?? null,
    capabilities: info
      ? { has_camera: info.active_camera === true, has_ams: info.mmu === true, supports_remote_control: true }
      : (prev?.capabilities ?? null),
    ...nozzleOf(info, version, prev),
    ...materialOf(p, prev),
  };
}

/** The nozzle diameter where the firmware reports it (/api/v1/info, /api/version); left out when it does not. */
function nozzleOf(info: PrusaInfo | null, version: PrusaVersion | null, prev: PrinterState | null): Pick<PrinterState, 'nozzle_diameter'> {
  const d = num(info?.nozzle_diameter) ?? num(version?.nozzle_diameter) ?? prev?.nozzle_diameter;
  return d === undefined || d === null ? {} : { nozzle_diameter: d };
}

/** The loaded filament where the firmware reports it (`printer.material`); left out when it does not. */
function materialOf(p: PrusaStatusPrinter, prev: PrinterState | null): Pick<PrinterState, 'materials'> {
  if (typeof p.material !== 'string') return prev?.materials ? { materials: prev.materials } : {};
  const type = p.material.trim();
  return { materials: !type || /^-+$/.test(type) ? [] : [{ slot: 0, type: type.slice(0, 50), color: null, remaining_percent: null }] };
}

/** ATTENTION or ERROR with the printer's own message; the previous list while the printer says the same. */
function attentionOf(prev: PrinterState | null, error: PrinterError | null): AttentionCause[] {
  const before = prev?.attention ?? [];
  if (!error) return before.length ? [] : before;
  if (before.length === 1 && before[0].code === error.code && before[0].text.en.message === error.message) return before;
  const fatal = error.code === 'ERROR';
  return [
    {
      code: error.code,
      severity: fatal ? 'fatal' : 'serious',
      source: 'prusalink',
      text: {
        en: { message: error.message, action: fatal ? "Check the printer, then clear the error on its screen." : "Go to the printer and answer its screen." },
        de: { message: error.message, action: fatal ? 'Drucker prüfen und den Fehler am Bildschirm quittieren.' : 'Zum Drucker gehen und die Meldung am Bildschirm beantworten.' },
      },
    },
  ];
}

function mergeError(prev: PrinterState | null, p: PrusaStatusPrinter, raw: string): PrinterError | null {
  const error = errorOf({ ...p, state: raw });
  // A partial report without status_printer keeps the detailed message already known.
  if (error && p.status_printer === undefined && prev?.error?.code === error.code) return prev.error;
  return error;
}

function mergeJob(
  prev: PrintProgress | null,
  raw: string,
  statusJob: PrusaStatusJob | undefined,
  job: PrusaJob | null | undefined,
  now: number,
): PrintProgress | null {
  if (job === null) return null; // the printer said 204: no job
  const id = num(job?.id) ?? num(statusJob?.id);
  if (id === undefined) {
    // Neither answer names a job: keep the last one only while the state says a job runs
    // (a partial report left it out); otherwise there is none.
    return prev && (raw === 'PRINTING' || raw === 'PAUSED') ? prev : null;
  }
  const same = prev && prev.printer_job_id === String(id) ? prev : null;
  const progress = num(job?.progress) ?? num(statusJob?.progress) ?? same?.progress ?? 0;
  const remaining = seconds(job?.time_remaining) ?? seconds(statusJob?.time_remaining);
  const printing = seconds(job?.time_printing) ?? seconds(statusJob?.time_printing);
  const file = job?.file;
  const displayName = file ? (file.display_name ?? file.name) : (same?.display_name ?? null);
  const filePath = file ? joinPath(file.path, file.name) : (same?.file ?? null);
  const timePrinting = printing === undefined ? (same?.time_printing ?? null) : printing;
  // started_at is fixed the first time a job is seen, so that it does not drift poll by poll.
  const startedAt =
    same?.started_at ?? (timePrinting !== null ? new Date(Math.floor(now / 1000) * 1000 - timePrinting * 1000).toISOString() : null);
  return {
    name: displayName ?? same?.name ?? `job ${id}`,
    file: filePath,
    display_name: displayName,
    progress: Math.max(0, Math.min(100, progress)),
    layer_current: null,
    layer_total: null,
    remaining_seconds: remaining === undefined ? (same?.remaining_seconds ?? null) : remaining,
    started_at: startedAt,
    printer_job_id: String(id),
    time_printing: timePrinting,
  };
}

/** "/usb" + "SHAPE-~1.BGC" -> "/usb/SHAPE-~1.BGC" */
export function joinPath(folder: string, name: string): string {
  const f = ('/' + folder).replace(/\/+/g, '/').replace(/\/$/, '');
  return `${f}/${name.replace(/^\/+/, '')}`;
}

/** "/usb/a b/X.BGC" -> "/usb/a%20b/X.BGC": each segment percent-encoded, no empty segments. */
export function encodePath(path: string): string {
  return (
    '/' +
    path
      .split('/')
      .filter((s) => s.length > 0)
      .map(encodeURIComponent)
      .join('/')
  );
}

/** True when two states differ in anything a listener would see. */
export function stateChanged(a: PrinterState | null, b: PrinterState): boolean {
  return a === null || JSON.stringify(a) !== JSON.stringify(b);
}
