/**
 * The identity of a print: which printer, which file, which start minute.
 * File names arrive in many spellings for the same print ("cache/Cube.gcode.3mf",
 * "/sdcard/Cube.3mf", "Cube", PrusaLink's "CUBE~1.BGC" vs its display name);
 * they are normalised so that one print is one job.
 */

import type { PrintProgress } from '../printers/driver';

const EXTENSIONS = /(\.gcode\.3mf|\.3mf|\.gcode|\.bgcode|\.bgc|\.gco|\.g)$/i;

/** "cache/Benchy_PLA.gcode.3mf" -> "benchy_pla"; folders, storage prefixes and print-file extensions go. */
export function normaliseFileName(name: string): string {
  const base = name.replace(/\\/g, '/').split('/').filter(Boolean).pop() ?? name;
  let stem = base.trim();
  // Strip repeated variants like "x.gcode.3mf" or "x.3mf.gcode" too.
  for (let i = 0; i < 3 && EXTENSIONS.test(stem); i++) stem = stem.replace(EXTENSIONS, '');
  return stem.normalize('NFC').toLowerCase();
}

/** The minute a print started, as "YYYY-MM-DDTHH:MM" (UTC). */
export function startMinute(iso: string): string {
  return new Date(iso).toISOString().slice(0, 16);
}

/** The key behind the database's unique guard: one job per (printer, file, start minute). */
export function printKey(fileName: string, startedAt: string): string {
  return `${normaliseFileName(fileName)}@${startMinute(startedAt)}`;
}

/**
 * The file name that identifies a print: PrusaLink's display name over its 8.3 short name, else the file,
 * else the job name. An X1 reports the plate G-code on its ramdisk ("/data/Metadata/plate_1.gcode"), which
 * names no file: its job name (subtask_name) does.
 */
export function printFileName(job: PrintProgress): string {
  const file = job.display_name || job.file;
  if (!file || /(^|\/)Metadata\/plate_\d+\.gcode$/i.test(file)) return job.name;
  return file;
}

/**
 * The catalog entry of the file a print prints. The exact file first (the path the printer reports, then the
 * file name it shows), another spelling of the same name only after that: a printer may hold cube.gcode and
 * cube.bgcode, which normalise alike, and the job must describe (and a download fetch) the one it prints.
 */
export function printedFile<T extends { printer_path: string | null; filename: string }>(files: readonly T[], wanted: { path?: string | null; name: string }): T | undefined {
  const bare = (p: string) => p.replace(/\\/g, '/').replace(/^\/+/, '');
  if (wanted.path) {
    const path = bare(wanted.path);
    const hit = files.find((f) => f.printer_path !== null && bare(f.printer_path) === path);
    if (hit) return hit;
  }
  const name = bare(wanted.name).split('/').pop() ?? wanted.name;
  const lower = name.toLowerCase();
  const normalised = normaliseFileName(name);
  return files.find((f) => f.filename === name) ?? files.find((f) => f.filename.toLowerCase() === lower) ?? files.find((f) => normaliseFileName(f.filename) === normalised);
}

/**
 * Whether the print a printer reports is the one a job records: the job's file (or name) is the print's, in
 * any spelling. A printer that prints without saying what (an early report) counts as printing the job.
 */
export function isPrintOf(print: PrintProgress | null, job: { filename: string | null; job_name: string }): boolean {
  if (!print) return true;
  const name = normaliseFileName(printFileName(print));
  return [job.filename, job.job_name].some((n) => n !== null && normaliseFileName(n) === name);
}

/** What tells one print run of a printer from another: its file, and the printer's job id and start when known. */
export interface RunIdentity {
  /** The file (or job name) as normaliseFileName spells it. */
  name: string;
  /** The minute the printer says the run started (startMinute), when it says. */
  startMinute: string | null;
  printerJobId: string | null;
}

/** The run a stored job records (the job tracker's: `customer_info.printer_start_time` is the printer's start). */
export function runOfJob(job: { filename: string | null; job_name: string; printer_job_id: string | null; customer_info: Record<string, unknown> | null }): RunIdentity {
  const start = job.customer_info?.printer_start_time;
  return {
    name: normaliseFileName(job.filename ?? job.job_name),
    startMinute: typeof start === 'string' ? startMinute(start) : null,
    printerJobId: job.printer_job_id,
  };
}

/**
 * Whether a printer's print is the run: the same file in any spelling, and the same printer job id and start
 * minute where both sides know them. Start times derived from "time printed" drift by a minute at most; a real
 * new print starts later.
 */
export function isSameRun(run: RunIdentity, job: PrintProgress): boolean {
  if (normaliseFileName(printFileName(job)) !== run.name) return false;
  if (run.printerJobId && job.printer_job_id && run.printerJobId !== job.printer_job_id) return false;
  if (run.startMinute && job.started_at && run.startMinute !== startMinute(job.started_at)) {
    return Math.abs(Date.parse(run.startMinute) - Date.parse(startMinute(job.started_at))) <= 60_000;
  }
  return true;
}
