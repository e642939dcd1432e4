/**
 * The simulated printer's storage (what FTPS shows and what prints read):
 * an in-memory tree with the folders a P1/X1 SD card has, plus what a
 * stored file tells about the print it would make (duration, layers,
 * temperatures), read from its slicer metadata like the printer would.
 */
import { strFromU8, unzipSync } from 'fflate';
import { parseDuration } from '../../preview/metadata';
import { parseSliceInfo, type SlicePlate } from '../../preview/slice-info';
import { seedFiles } from '../seed-files';

export interface SimFile {
  path: string;
  data: Buffer;
  mtime: Date;
}

export interface PrintPlan {
  /** Print time in (simulated) seconds. */
  durationS: number;
  layers: number;
  nozzleTarget: number;
  bedTarget: number;
}

export const ROOT_FOLDERS = ['/', '/cache', '/model', '/timelapse'];

/** Normalise `path` (absolute or relative to `cwd`) to an absolute path; null if it climbs above the root. */
export function resolvePath(cwd: string, path: string): string | null {
  const input = path.startsWith('/') ? path : `${cwd.replace(/\/$/, '')}/${path}`;
  const out: string[] = [];
  for (const part of input.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') {
      if (out.length === 0) return null;
      out.pop();
      continue;
    }
    out.push(part);
  }
  return `/${out.join('/')}`;
}

export function dirname(path: string): string {
  const at = path.lastIndexOf('/');
  return at <= 0 ? '/' : path.slice(0, at);
}

export function basename(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

export class SimStorage {
  private readonly dirs = new Set<string>(ROOT_FOLDERS);
  private readonly files = new Map<string, SimFile>();

  /** The files every simulated Bambu printer starts with (its 3MF sliced for `model`). */
  static seeded(now = new Date(), model = 'P1S'): SimStorage {
    const storage = new SimStorage();
    const old = new Date(now.getTime() - 400 * 24 * 3600 * 1000); // listed with a year, like real old files
    for (const file of seedFiles({ bambu: model })) {
      // Bambu Studio's LAN send puts projects in "/", cloud prints land in /cache, samples in /model.
      const folder = file.name.endsWith('.3mf') ? '/' : file.name.endsWith('.gcode') ? '/cache' : '/model';
      storage.put(`${folder === '/' ? '' : folder}/${file.name}`, file.data, folder === '/model' ? old : now);
    }
    // A short timelapse: P1/A1 record .avi (content is filler).
    const video = Buffer.alloc(48 * 1024);
    for (let i = 0; i < video.length; i++) video[i] = (i * 31 + 7) & 0xff;
    storage.put('/timelapse/video_2026-11-01_10-00-00.avi', video, now);
    return storage;
  }

  isDir(path: string): boolean {
    return this.dirs.has(path);
  }

  get(path: string): SimFile | null {
    return this.files.get(path) ?? null;
  }

  put(path: string, data: Buffer, mtime = new Date()): boolean {
    if (!this.dirs.has(dirname(path)) || this.dirs.has(path)) return false;
    this.files.set(path, { path, data, mtime });
    return true;
  }

  delete(path: string): boolean {
    return this.files.delete(path);
  }

  /** Entries directly in `dir`: sub-folders first, then files, by name. */
  list(dir: string): Array<{ name: string; dir: boolean; size: number; mtime: Date }> {
    const prefix = dir === '/' ? '/' : `${dir}/`;
    const direct = (p: string) => p.startsWith(prefix) && p !== dir && !p.slice(prefix.length).includes('/');
    const folders = [...this.dirs].filter(direct).sort();
    const files = [...this.files.values()].filter((f) => direct(f.path)).sort((a, b) => a.path.localeCompare(b.path));
    const epoch = new Date('2026-01-01T00:00:00Z');
    return [
      ...folders.map((p) => ({ name: basename(p), dir: true, size: 4096, mtime: epoch })),
      ...files.map((f) => ({ name: basename(f.path), dir: false, size: f.data.length, mtime: f.mtime })),
    ];
  }

  /** Every file path, sorted. */
  paths(): string[] {
    return [...this.files.keys()].sort();
  }

  /**
   * A file named the way a client or the screen names it: an absolute path,
   * a printer URL (`file:///sdcard/x`, `ftp:///x`), `/sdcard/x`, or a bare
   * name looked up in `/`, `/cache` and `/model`.
   */
  find(name: string): SimFile | null {
    let p = name.trim().replace(/^file:\/\/\/?sdcard\//i, '/').replace(/^ftp:\/\/\/?/i, '/').replace(/^\/?sdcard\//i, '/');
    if (!p.startsWith('/')) p = `/${p}`;
    const resolved = resolvePath('/', p);
    if (resolved && this.files.has(resolved)) return this.files.get(resolved)!;
    if (!p.slice(1).includes('/')) {
      for (const folder of ['', '/cache', '/model']) {
        const hit = this.files.get(`${folder}${p}`);
        if (hit) return hit;
      }
    }
    return null;
  }
}

function planFromGcode(text: string, plan: PrintPlan): void {
  const head = text.length > 200_000 ? text.slice(0, 100_000) + text.slice(-100_000) : text;
  const total = head.match(/;\s*total estimated time:\s*([^;\n]+)/i) ?? head.match(/;\s*estimated printing time \(normal mode\)\s*=\s*([^\n]+)/i);
  const seconds = total ? parseDuration(total[1]) : null;
  if (seconds) plan.durationS = seconds;
  const layers = head.match(/;\s*total layer number:\s*(\d+)/i);
  if (layers) plan.layers = Number(layers[1]);
  else {
    const changes = text.match(/^;LAYER_CHANGE/gm)?.length ?? 0;
    if (changes > 0) plan.layers = changes;
  }
  const nozzle = head.match(/;\s*(?:nozzle_temperature|temperature)\s*=\s*(\d+)/);
  if (nozzle) plan.nozzleTarget = Number(nozzle[1]);
  const bed = head.match(/;\s*(?:hot_plate_temp|bed_temperature)\s*=\s*(\d+)/);
  if (bed) plan.bedTarget = Number(bed[1]);
}

/**
 * What printing `file` (plate `plate` of a 3MF) would take, from the slicer's
 * metadata; falls back to a 10-minute, 50-layer PLA print.
 */
export function printPlan(file: SimFile, plate = 1): PrintPlan {
  const plan: PrintPlan = { durationS: 600, layers: 50, nozzleTarget: 220, bedTarget: 55 };
  try {
    if (file.path.endsWith('.3mf')) {
      const gcodeName = `Metadata/plate_${plate}.gcode`;
      const entries = unzipSync(new Uint8Array(file.data), { filter: (f) => f.name === 'Metadata/slice_info.config' || f.name === gcodeName });
      const gcode = entries[gcodeName];
      if (gcode) planFromGcode(strFromU8(gcode), plan);
      const info = entries['Metadata/slice_info.config'];
      const plateInfo = info ? plateSection(strFromU8(info), plate) : null;
      const prediction = Number(plateInfo?.meta.prediction);
      if (Number.isInteger(prediction) && prediction > 0) plan.durationS = prediction;
    } else if (file.path.endsWith('.gcode')) {
      planFromGcode(file.data.toString('utf8'), plan);
    }
  } catch {
    // Not a readable slicer file: the defaults stand.
  }
  plan.durationS = Math.max(10, plan.durationS);
  plan.layers = Math.max(1, plan.layers);
  return plan;
}

/** The `<plate>` of slice_info.config whose index is `plate` (null if there is none, or the file is hostile). */
export function plateSection(sliceInfo: string, plate: number): SlicePlate | null {
  try {
    return parseSliceInfo(sliceInfo).find((p) => p.index === plate) ?? null;
  } catch {
    return null;
  }
}
