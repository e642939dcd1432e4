/**
 * The simulated Bambu printer's options, fault switches and the shapes it
 * hands out (printerConfig(), onReport), apart from the simulator itself.
 */
import { randomInt } from 'node:crypto';
import { generate } from 'selfsigned';
export interface BambuSimulatorOptions {
  /** Printer serial (default: a random one with the model's real prefix, e.g. 01P00A… for a P1S). */
  serial?: string;
  /** LAN access code (default: 8 random digits). */
  accessCode?: string;
  /** Model as Bambu names it: P1S (default), P1P, X1C, X1E, A1, A1 mini, H2D… */
  model?: string;
  /** Time compression: 1 = real time, 60 = a minute per second. */
  speed?: number;
  /** Display name (default "Simulated <model>"). */
  name?: string;
  /** Printer id for printerConfig() (default derived from the serial). */
  id?: string;
  /** OTA firmware reported by get_version (default "01.08.02.00"). */
  firmware?: string;
  /** Report period in ms (default: 1000 / speed, kept between 100 and 1000). */
  reportIntervalMs?: number;
  /** LAN Developer Mode (default true). Off: control commands are refused as unsigned, like authorization firmware does. */
  developerMode?: boolean;
  /** An AMS unit (4 trays) attached (default true). Off: only the external spool. */
  ams?: boolean;
  /** How many AMS units are attached (default 1 with `ams`, 0 without; at most 4): global trays 0 .. 4*N-1. */
  amsUnits?: number;
  /** Nozzle diameter in mm the printer reports (`nozzle_diameter`, default 0.4). */
  nozzleDiameter?: number;
  /**
   * Simulated seconds between an accepted project_file and PREPARE, the printer reporting IDLE
   * meanwhile (default 90 on H2-series models, which take 80-210 s; 0 elsewhere).
   */
  startDelayS?: number;
  /**
   * TLS key and certificate (PEM) for MQTT and FTPS instead of a fresh self-signed pair with
   * CN = serial. Many simulators can share one (see BambuSimulator.tlsCredentials()): generating
   * a pair per printer is the slow part of starting hundreds of them.
   */
  tls?: SimTlsCredentials;
  /** Run the implicit-FTPS server (default true). Off: ftpsPort is 0 and printerConfig() has no ftps_port. */
  ftps?: boolean;
  /** Run the HTTP control API (default true). Off: controlUrl is empty; the methods still work. */
  control?: boolean;
  /**
   * Run the model's camera (default true): "JPEG over TLS" for A1 / A1 mini / P1P / P1S, RTSPS
   * for X1 / X1C / X1E / H2D / H2S / P2S (where the system ffmpeg is installed; without it the
   * camera object exists, stays off and says why). Off: `camera` is null and printerConfig() has
   * no camera_port. Benchmarks that measure MQTT alone turn it off.
   */
  camera?: boolean;
  /** Port of the camera (default 0: any free port; 6000 or 322 on a real printer). */
  cameraPort?: number;
  /** Size of the port-6000 camera's pictures (default 320x180; the RTSPS camera sends 640x360). */
  cameraSize?: { width: number; height: number };
  /** Milliseconds between the port-6000 camera's frames (default 1000, as the printers send). */
  cameraIntervalMs?: number;
  /** Benchmarks: every port-6000 camera frame carries the time it was sent in a JPEG comment (bambu/camera.ts cameraFrameStamp). */
  cameraStamp?: boolean;
  /**
   * Where in each report interval the periodic reports fall (ms, on the process's monotonic clock; see
   * report-clock.ts): spreads many printers over the second and keeps them apart. Default: every interval
   * from the start.
   */
  reportPhaseMs?: number;
  /**
   * Benchmark mode (default false): every report carries a new nozzle temperature, a 1 °C
   * sawtooth 200, 201 … 299, 200 …, so that every report changes what the service shows.
   * The print itself runs as usual.
   */
  benchReports?: boolean;
  /** Benchmark mode: every Nth periodic report is a full one (1: all of them, as an X1 sends; default 0: deltas only). */
  benchFullEvery?: number;
  /** Full reports carry everything a real X1C sends (bambu/real-size.ts), 6-10 KB with four loaded AMS units. */
  realSizeReports?: boolean;
  /** Called for each push_status report (periodic and full) once it is serialised, just before it is written. */
  onReport?: (report: SimReportInfo) => void;
}

export interface SimTlsCredentials {
  key: string;
  cert: string;
}

/** What onReport tells about a push_status report about to go out. */
export interface SimReportInfo {
  id: string;
  serial: string;
  /** The report's sequence_id (as a number). */
  sequence: number;
  /** true for the `msg:0` full report after a pushall. */
  full: boolean;
  /** nozzle_temper as sent. */
  nozzle: number;
}

/** Nozzle temperatures of the benchmark sawtooth: BENCH_NOZZLE_BASE … BENCH_NOZZLE_BASE + BENCH_NOZZLE_STEPS - 1. */
export const BENCH_NOZZLE_BASE = 200;
export const BENCH_NOZZLE_STEPS = 100;

export interface BambuFaults {
  /** Every periodic report is a delta with only the changed keys. */
  partial_reports: boolean;
  /** Every control command is answered `result: "fail"`. */
  reject_commands: boolean;
  /** FTPS throttle for downloads and uploads alike, bytes per second; 0 = unlimited. */
  transfer_bytes_per_sec: number;
  /** The camera keeps its connections open and sends no frame. */
  camera_stalled: boolean;
  /**
   * The pushall answer (the full report) goes this late while the periodic deltas do not: a busy printer. A
   * client sees deltas of its new link before any full report.
   */
  pushall_delay_ms: number;
}

export type BambuPrinterConfig = {
  id: string;
  name: string;
  type: 'bambu_lab';
  model: string;
  ip_address: string;
  serial_number: string;
  access_code: string;
  mqtt_port: number;
  /** Absent when the simulator runs without FTPS (`ftps: false`). */
  ftps_port?: number;
  /** Absent without a camera (`camera: false`, a model without one, an RTSPS camera without ffmpeg). */
  camera_port?: number;
};

/** Serial prefixes of real printers per model: how a serial tells the model (PROTOCOLS.md §1). */
export const SERIAL_PREFIX: Record<string, string> = {
  X1C: '00M',
  X1: '00W',
  X1E: '03W',
  P1P: '01S',
  P1S: '01P',
  'A1 MINI': '030',
  A1: '039',
  H2D: '094',
  H2S: '093',
  P2S: '22E',
};

export function randomDigits(n: number): string {
  let out = '';
  for (let i = 0; i < n; i++) out += String(randomInt(10));
  return out;
}

/** A serial such as a printer of `model` has: its real prefix, then 00A and digits (15 characters). */
export function serialFor(model: string): string {
  const prefix = SERIAL_PREFIX[model.toUpperCase()] ?? '01P';
  return `${prefix}00A${randomDigits(15 - prefix.length - 3)}`;
}

/** A self-signed EC P-256 key and certificate (CN = commonName). */
export async function selfSignedTls(commonName: string): Promise<SimTlsCredentials> {
  const pems = await generate([{ name: 'commonName', value: commonName }], { keyType: 'ec', curve: 'P-256', algorithm: 'sha256' });
  return { key: pems.private, cert: pems.cert };
}
