/**
 * Moonraker's `gcodes` root: the file list, a file's metadata (estimated
 * time, filament, thumbnails), downloads of files and thumbnails, removal.
 * Paths are relative to the root ("sub/part.gcode"); the farm sees them with
 * a leading "/" like the other families' paths.
 */
import { DriverError, type PrinterFile } from '../driver';
import type { MoonrakerHttp } from './http';

/** Most files one listing returns. */
const MAX_FILES = 5000;
/** Largest file the service downloads from a printer (G-code of a long print is large, but bounded). */
export const MAX_DOWNLOAD_BYTES = 2 * 1024 * 1024 * 1024;
const MAX_THUMBNAIL_BYTES = 4 * 1024 * 1024;

export interface KlipperFileMetadata {
  filename: string;
  size: number | null;
  modified: string | null;
  slicer: string | null;
  estimated_time: number | null;
  filament_type: string | null;
  filament_total_mm: number | null;
  filament_weight_g: number | null;
  nozzle_diameter: number | null;
  layer_height: number | null;
  object_height: number | null;
  thumbnails: { width: number; height: number; size: number; path: string }[];
}

/** "/sub/a b.gcode" -> "sub/a%20b.gcode": each segment encoded, nothing that climbs out of the root. */
export function rootRelative(path: string): string {
  const segments = path.split('/').filter((s) => s.length > 0);
  if (!segments.length) throw new DriverError('NOT_FOUND', 'no file given');
  if (segments.some((s) => s === '.' || s === '..')) throw new DriverError('NOT_FOUND', `bad path ${path}`);
  return segments.map(encodeURIComponent).join('/');
}

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const str = (v: unknown, max = 300): string | null => (typeof v === 'string' ? v.slice(0, max) : null);
const time = (v: unknown): string | null => {
  const n = num(v);
  return n === null ? null : new Date(n * 1000).toISOString();
};

export async function listKlipperFiles(http: MoonrakerHttp): Promise<PrinterFile[]> {
  const entries = await http.json<unknown>('GET', '/server/files/list?root=gcodes');
  if (!Array.isArray(entries)) throw new DriverError('PROTOCOL', 'Moonraker listed the files in an unknown shape');
  const files: PrinterFile[] = [];
  for (const e of entries) {
    if (files.length >= MAX_FILES) break;
    const path = str((e as { path?: unknown })?.path, 1000);
    if (!path) continue;
    files.push({
      path: `/${path}`,
      name: path.split('/').pop() ?? path,
      size: num((e as { size?: unknown }).size) ?? 0,
      modified: time((e as { modified?: unknown }).modified),
      storage: 'gcodes',
    });
  }
  return files;
}

export async function klipperFileMetadata(http: MoonrakerHttp, path: string, signal?: AbortSignal): Promise<KlipperFileMetadata> {
  const m = await http.json<Record<string, unknown>>('GET', `/server/files/metadata?filename=${rootRelative(path)}`, signal);
  if (!m || typeof m !== 'object') throw new DriverError('PROTOCOL', 'Moonraker sent file metadata in an unknown shape');
  const folder = path.replace(/^\/+/, '').split('/').slice(0, -1).join('/');
  const thumbnails = (Array.isArray(m.thumbnails) ? m.thumbnails : []).slice(0, 16).flatMap((t: Record<string, unknown>) => {
    const rel = str(t?.relative_path, 500);
    if (!rel) return [];
    return [{ width: num(t.width) ?? 0, height: num(t.height) ?? 0, size: num(t.size) ?? 0, path: `/${folder ? `${folder}/` : ''}${rel}` }];
  });
  return {
    filename: str(m.filename, 1000) ?? path.replace(/^\/+/, ''),
    size: num(m.size),
    modified: time(m.modified),
    slicer: str(m.slicer),
    estimated_time: num(m.estimated_time),
    filament_type: str(m.filament_type),
    filament_total_mm: num(m.filament_total),
    filament_weight_g: num(m.filament_weight_total),
    nozzle_diameter: num(m.nozzle_diameter),
    layer_height: num(m.layer_height),
    object_height: num(m.object_height),
    thumbnails,
  };
}

export function downloadKlipperFile(
  http: MoonrakerHttp,
  path: string,
  destination: string,
  onProgress?: (bytes: number, total: number) => void,
  signal?: AbortSignal,
): Promise<void> {
  return http.download(`/server/files/gcodes/${rootRelative(path)}`, destination, MAX_DOWNLOAD_BYTES, onProgress, signal);
}

/** The largest thumbnail the metadata names, downloaded to `destination`; false when the file has none. */
export async function downloadKlipperThumbnail(http: MoonrakerHttp, path: string, destination: string): Promise<boolean> {
  const meta = await klipperFileMetadata(http, path);
  const best = [...meta.thumbnails].sort((a, b) => b.width * b.height - a.width * a.height)[0];
  if (!best) return false;
  await http.download(`/server/files/gcodes/${rootRelative(best.path)}`, destination, MAX_THUMBNAIL_BYTES);
  return true;
}

export async function removeKlipperFile(http: MoonrakerHttp, path: string): Promise<void> {
  await http.json('DELETE', `/server/files/gcodes/${rootRelative(path)}`);
}
