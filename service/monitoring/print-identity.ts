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
