/**
 * One interface for every printer family. A driver owns the connection to
 * one printer (MQTT+FTPS for bambu_lab, PrusaLink HTTP for prusa_core), turns
 * what the printer says into PrinterState, and carries out commands.
 * Nothing outside printers/ knows topics, FTP paths or PrusaLink URLs.
 */
import type { EventEmitter } from 'node:events';
import type { AttentionCause } from './attention';

/** The printer's own machine state, normalised across families. */
export type MachineState =
  | 'idle' // ready, no job
  | 'preparing' // job accepted: downloading, heating, levelling
  | 'printing'
  | 'paused'
  | 'finished' // the last job ended well (until the next one starts)
  | 'failed' // the last job ended with an error
  | 'stopped' // the last job was cancelled
  | 'busy' // doing something that is not a print (calibration, homing...)
  | 'error'; // the printer reports an error that needs attention

export interface Temperatures {
  nozzle: number;
  bed: number;
  chamber?: number;
  nozzle_target: number;
  bed_target: number;
}

export interface PrintProgress {
  /** Job name as the printer shows it (Bambu subtask_name, PrusaLink display name). */
  name: string;
  /** File the printer prints, as the printer names it (path or short name). */
  file: string | null;
  /** Display file name when the printer has a short and a long one (PrusaLink). */
  display_name?: string | null;
  progress: number;
  layer_current: number | null;
  layer_total: number | null;
  remaining_seconds: number | null;
  /** The print's start as the printer reports it (Bambu gcode_start_time), ISO 8601. */
  started_at: string | null;
  /** The printer's own id of the job (PrusaLink job id), when it has one. */
  printer_job_id: string | null;
  /** Seconds printed so far, when reported. */
  time_printing: number | null;
}

export interface PrinterError {
  /** The printer's own code, e.g. a Bambu HMS code or print_error, a PrusaLink state. */
  code: string;
  message: string;
}

/** One loaded filament: an AMS tray, the external spool, or the filament a single-extruder printer has loaded. */
export interface PrinterMaterial {
  /** Bambu: global AMS tray number (ams_id*4 + tray; an AMS-HT its id, 128 and up), 254 the external spool. Prusa: 0. */
  slot: number;
  /** "PLA", "PETG"... as the printer reports it. */
  type: string;
  /** "#RRGGBB", when reported. */
  color: string | null;
  /** 0..100, null when the printer does not know. */
  remaining_percent: number | null;
  /** Bambu: the spool's RFID identity (32 hex characters); absent or null for a spool without a Bambu tag. */
  tray_uuid?: string | null;
  /** Bambu: grams of filament on a full spool of this kind (`tray_weight`), when reported. */
  tray_weight_g?: number | null;
}

/**
 * How a print ended, as the printer's own job history records it (Klipper: Moonraker's history). A print lost
 * without an end state (Klipper restarted or crashed, the host lost power) leaves the printer idle; its record
 * still says what happened.
 */
export interface EndedPrint {
  /** The file as the printer names it. */
  file: string;
  outcome: 'completed' | 'failed' | 'cancelled';
  /** Why it failed, in words an operator reads; null otherwise. */
  reason: string | null;
  /** ISO 8601, when recorded. */
  started_at: string | null;
  ended_at: string | null;
}

export interface PrinterState {
  state: MachineState;
  /** The state word as the printer sent it (gcode_state, PrusaLink state). */
  raw_state: string;
  temperatures: Temperatures;
  job: PrintProgress | null;
  error: PrinterError | null;
  firmware_version: string | null;
  model: string | null;
  capabilities: { has_camera: boolean; has_ams: boolean; supports_remote_control: boolean } | null;
  /** Nozzle diameter in mm, when the printer reports it. */
  nozzle_diameter?: number | null;
  /** The filaments loaded now (empty when none or not reported). */
  materials?: PrinterMaterial[];
  /** The slot feeding the nozzle now (Bambu `tray_now`: a global tray, 254 the external spool), null when none or not reported. */
  active_slot?: number | null;
  /** What needs a person, worst first (the same array while nothing changed). */
  attention?: AttentionCause[];
  /**
   * A camera the printer names itself, as an absolute http(s) URL (Klipper: the first enabled webcam of
   * Moonraker's `server.webcams.list`); the printer's own camera_url setting wins over it.
   */
  camera_url?: string | null;
  /**
   * The printer's record of its newest ended print, when it keeps one (Klipper with Moonraker's history). The job
   * tracker takes its outcome for a print that vanished without an end state (the same object while unchanged).
   */
  ended_print?: EndedPrint | null;
}

export interface PrinterFile {
  /** Path on the printer, usable with download() and startPrint(). */
  path: string;
  name: string;
  size: number;
  modified: string | null;
  /** Storage or folder it lives in ("/", "cache", "usb"...). */
  storage: string;
}

export type ConnectionState = 'connected' | 'disconnected' | 'error';

export interface ConnectionChange {
  connection: ConnectionState;
  /** Readable reason for disconnected/error (wrong access code, timeout...). */
  message: string | null;
}

export type DriverErrorCode = 'OFFLINE' | 'AUTH' | 'REJECTED' | 'TIMEOUT' | 'NOT_FOUND' | 'PROTOCOL';

export { storageFullCode } from '../util/storage-errors';

export class DriverError extends Error {
  constructor(
    readonly code: DriverErrorCode,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

export interface DriverConfig {
  id: string;
  ip_address: string;
  serial_number: string | null;
  access_code: string | null;
  /** prusa_core: Digest (default) or the X-Api-Key header; the driver never falls back from one to the other. */
  auth_method?: 'digest' | 'api_key';
  /** Port overrides (simulators, NAT); undefined means the printer's real port. */
  ports: { mqtt?: number; ftps?: number; http?: number };
  /** A link silent for longer than this is offline (ms). */
  watchdog_ms: number;
  /** How long a command waits for the printer's answer (ms). */
  command_timeout_ms: number;
  /** Poll cadence for polling drivers (ms). */
  poll_ms: number;
  /**
   * Set when the service's record of the printer's last print says it ended cancelled: whether a print the
   * printer reports is that run. A driver of a printer that forgets a cancel (Bambu: FAILED, print_error cleared)
   * shows that run stopped, as the service showed it before this driver started; asked once, for the driver's
   * first state (monitoring/cancelled-runs.ts).
   */
  cancelled_run?: (print: PrintProgress | null) => boolean;
}

/** A queued print to send to a printer and start (the print queue's dispatcher builds it). */
export interface QueuedStart {
  /** The file on this machine. */
  localPath: string;
  /** The name it gets on the printer's storage (card root / USB). */
  remoteName: string;
  /** 3MF plate number. */
  plate: number;
  /** A fresh decimal id below 2^31-1 for this start (Bambu task/subtask/project id). */
  taskId: string;
  /** Bambu: one tray per filament of the file, -1 for unused and the external spool. */
  amsMapping: number[];
  options: { bed_leveling: boolean; timelapse: boolean; flow_cali: boolean; vibration_cali: boolean };
}

export interface QueuedStartHooks {
  /**
   * Called once the file is on the printer and right before the start command goes out (PrusaLink: before
   * the one request that uploads and starts). It persists the dispatch as `starting` and checks the printer is
   * still free; when it throws, nothing is started.
   */
  beforeStart(): Promise<void>;
  onProgress?(bytes: number, total: number): void;
}

/**
 * Events: 'state' (PrinterState, after every report that changed something)
 * and 'connection' (ConnectionChange).
 */
export interface PrinterDriver extends EventEmitter {
  readonly config: DriverConfig;
  /** The last merged state, or null before the first report. */
  readonly state: PrinterState | null;
  readonly connection: ConnectionState;
  /** Counts of what the driver refused from the printer (dropped reports, faults), when it keeps them. */
  readonly faultStats?: Record<string, number>;
  /** Starts connecting; resolves once connected, rejects with a DriverError (AUTH, OFFLINE, TIMEOUT). Keeps reconnecting in the background either way until close(). */
  connect(): Promise<void>;
  close(): Promise<void>;
  listFiles(): Promise<PrinterFile[]>;
  /** Streams a file to `destination` (a path written by the caller's temp-file logic), reporting bytes. */
  download(path: string, destination: string, onProgress?: (bytes: number, total: number) => void, signal?: AbortSignal): Promise<void>;
  pause(): Promise<void>;
  resume(): Promise<void>;
  stop(): Promise<void>;
  startPrint(path: string): Promise<void>;
  /**
   * Sends a local file to the printer and starts it (the print queue). Resolves once the start command was
   * sent (and accepted where the printer answers); the print itself is acknowledged by the printer's state.
   * Rejects with a DriverError: REJECTED when the printer refused (PrusaLink 409: not ready at its screen).
   */
  sendAndStart?(start: QueuedStart, hooks: QueuedStartHooks): Promise<void>;
  /** Polling drivers: `config.poll_ms` changed (the monitoring_interval setting); poll now and wait the new period from there. */
  pollIntervalChanged?(): void;
  /** Removes a queued print's file after the print, if still there (Bambu: a file left on the card can restart as a "ghost print" at power-on). */
  removeQueuedFile?(remoteName: string): Promise<void>;
}

/** Exponential backoff with full jitter, 1 s doubling to 60 s. */
export function backoffDelay(attempt: number, random: () => number = Math.random, baseMs = 1000, maxMs = 60_000): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** Math.max(0, attempt));
  return Math.max(baseMs, Math.round(ceiling / 2 + (random() * ceiling) / 2));
}
