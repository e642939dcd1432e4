/** The shapes of the simulated PrusaLink printer: its options, faults, materials and start records. */
import type { SeedFile } from '../seed-files';

export interface PrusaSimulatorOptions {
  /** PrusaLink password (also the X-Api-Key); random when omitted. */
  password?: string;
  /** "Core One" (default) or "MK4S"... */
  model?: string;
  /** Printer time runs this many times faster than the wall clock (default 1). */
  speed?: number;
  /** Printer name shown in /api/v1/info and printerConfig(). */
  name?: string;
  /** Printer id for printerConfig() (default derived from the name and port). */
  id?: string;
  /** Older firmware: X-Api-Key only, no Digest challenge. */
  apiKeyOnly?: boolean;
  /** How long a Digest nonce stays valid (ms, default 5000 as on Buddy). */
  nonceTtlMs?: number;
  /** Offer qop="auth" (RFC 2617) as Prusa-Link on a Raspberry Pi does; Buddy does not. */
  qop?: boolean;
  /** Digest realm (Buddy: "Printer API"; Prusa-Link on a Pi: "Administrator"). */
  realm?: string;
  /** Printer seconds one print takes after heating (default 600). */
  printSeconds?: number;
  /** Files on the USB stick (default: seedFiles()). */
  files?: SeedFile[];
  /** Port of the printer API (default 0: any free port). */
  port?: number;
  /** Firmware from before the v1 API (only /api/version and the OctoPrint-style paths): /api/v1/* is 404. */
  noV1Api?: boolean;
  /** Whether the printer reports a camera / an MMU. */
  camera?: boolean;
  mmu?: boolean;
  serial?: string;
  /** Nozzle diameter in mm (default 0.4), in /api/v1/info and /api/version. */
  nozzleDiameter?: number;
}

/** The filament loaded in a tool, as the control API shows and sets it (slot 0 on a one-tool printer). */
export interface PrusaMaterial {
  slot: number;
  type: string;
  color: string;
}

/** What `last_start` in GET /state says about the last accepted start. */
export interface PrusaStartRecord {
  source: 'upload' | 'api' | 'screen';
  file: string;
  plate: null;
  ams_mapping: null;
  job_id: number;
  at: string;
}

export interface PrusaFaults {
  /** Leave optional fields out of /api/v1/status (alternating halves, sometimes the whole job). */
  partial_reports: boolean;
  /** Job control and print starts answer 409. */
  reject_commands: boolean;
  /** Throttle downloads to this many bytes per second (0: unthrottled). */
  transfer_bytes_per_sec: number;
  /** Camera snapshots hang without an answer. */
  camera_stalled: boolean;
}

export type PrusaPrinterConfig = {
  id: string;
  name: string;
  type: 'prusa_core';
  model: string;
  ip_address: string;
  access_code: string;
  http_port: number;
  auth_method?: 'api_key'; // firmware that only takes X-Api-Key
};
