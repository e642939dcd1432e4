/**
 * Where the objects of a plate sit, as far as the file says: PrusaSlicer's
 * `objects_info` (each object's footprint polygon in bed coordinates) and
 * `max_layer_z`; Bambu Studio's plate_N.json `bbox_all` (x0, y0, x1, y1).
 * Used to check that a plate fits a printer's bed and height; a file that
 * says nothing is not checked.
 */
import { parseNumber } from '../preview/metadata';

export interface PlateBounds {
  /** Footprint in bed coordinates (mm); null when the file does not say. */
  min_x: number | null;
  min_y: number | null;
  max_x: number | null;
  max_y: number | null;
  /** Highest layer (mm). */
  height: number | null;
}

const MAX_POINTS = 100_000;

const finite = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v) && Math.abs(v) < 100_000;

function footprint(points: [number, number][]): Pick<PlateBounds, 'min_x' | 'min_y' | 'max_x' | 'max_y'> | null {
  if (!points.length) return null;
  const xs = points.map((p) => p[0]);
  const ys = points.map((p) => p[1]);
  return { min_x: Math.min(...xs), min_y: Math.min(...ys), max_x: Math.max(...xs), max_y: Math.max(...ys) };
}

/** From PrusaSlicer keys (lower-cased): `objects_info` and `max_layer_z`. Null when neither is there. */
export function boundsFromSlicerKeys(raw: Record<string, string>): PlateBounds | null {
  const height = parseNumber(raw.max_layer_z);
  let xy: ReturnType<typeof footprint> = null;
  const info = raw.objects_info;
  if (info && info.length < 4 * 1024 * 1024) {
    try {
      const parsed = JSON.parse(info) as { objects?: { polygon?: unknown }[] };
      const points: [number, number][] = [];
      for (const o of Array.isArray(parsed?.objects) ? parsed.objects : []) {
        for (const p of Array.isArray(o?.polygon) ? o.polygon : []) {
          if (points.length >= MAX_POINTS) break;
          if (Array.isArray(p) && finite(p[0]) && finite(p[1])) points.push([p[0], p[1]]);
        }
      }
      xy = footprint(points);
    } catch {
      xy = null; // not JSON: says nothing
    }
  }
  if (!xy && height === null) return null;
  return { min_x: null, min_y: null, max_x: null, max_y: null, ...xy, height: height !== null && height > 0 ? height : null };
}

/** From a Bambu plate_N.json: `bbox_all` [x0, y0, x1, y1]. */
export function boundsFromPlateJson(text: string | null): PlateBounds | null {
  if (!text || text.length > 4 * 1024 * 1024) return null;
  try {
    const box = (JSON.parse(text) as { bbox_all?: unknown }).bbox_all;
    if (!Array.isArray(box) || box.length < 4 || !box.slice(0, 4).every(finite)) return null;
    const [x0, y0, x1, y1] = box as number[];
    return { min_x: Math.min(x0, x1), min_y: Math.min(y0, y1), max_x: Math.max(x0, x1), max_y: Math.max(y0, y1), height: null };
  } catch {
    return null;
  }
}

/** Why the plate does not fit a build volume, or null when it fits (or the file does not say). 0.5 mm of tolerance. */
export function misfit(bounds: PlateBounds | null, bed: { x: number; y: number }, height: number): string | null {
  if (!bounds) return null;
  const tol = 0.5;
  if (bounds.height !== null && bounds.height > height + tol) return `the objects are ${round(bounds.height)} mm high, more than its ${height} mm`;
  const { min_x, min_y, max_x, max_y } = bounds;
  if (min_x !== null && min_y !== null && max_x !== null && max_y !== null) {
    if (min_x < -tol || min_y < -tol || max_x > bed.x + tol || max_y > bed.y + tol) {
      return `the objects reach ${round(max_x)} x ${round(max_y)} mm, beyond its ${bed.x} x ${bed.y} mm bed`;
    }
  }
  return null;
}

const round = (n: number) => Math.round(n * 10) / 10;
