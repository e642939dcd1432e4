/**
 * How many grams of each filament a print file uses, from the file's own
 * metadata: 3MF `Metadata/slice_info.config` (`used_g` of each `<filament>` of
 * the plate; ids are 1-based positions in the project's filament list),
 * G-code and BGCode `; filament used [g] = a, b` (one value per extruder,
 * extruder i is filament i + 1). Read once per file version and plate (a
 * small bounded cache: the queue's gate asks on every pass).
 */
import { readBgcode } from '../preview/bgcode';
import { readGcodeMetadata } from '../preview/gcode-meta';
import { listValues, lowerKeys } from '../preview/metadata';
import { withSource } from '../preview/source';
import { parseSliceInfo } from '../preview/threemf';
import { ZipArchive } from '../preview/zip';

export interface FilamentGrams {
  /** 1-based filament number of the file. */
  filament: number;
  type: string | null;
  /** "#RRGGBB" when stated. */
  color: string | null;
  grams: number;
}

const MAX_CONFIG_BYTES = 16 * 1024 * 1024;
/** More filaments than any printer feeds: a file claiming more is cut here. */
const MAX_FILAMENTS = 64;
const MAX_CACHE = 256;

function color(value: string | undefined): string | null {
  const v = (value ?? '').trim().replace(/^#/, '');
  return /^[0-9a-f]{6}([0-9a-f]{2})?$/i.test(v) ? `#${v.slice(0, 6).toUpperCase()}` : null;
}

/** A plausible gram figure (a file may say anything). */
function gramsOf(text: string | undefined): number | null {
  const n = Number((text ?? '').trim());
  return Number.isFinite(n) && n >= 0 && n < 100_000 ? Math.round(n * 100) / 100 : null;
}

/** G-code / BGCode settings: `filament used [g]` per extruder, with the types and colours of the same list. */
export function gramsFromSlicerKeys(rawInput: Record<string, string>): FilamentGrams[] {
  const raw = lowerKeys(rawInput);
  const perExtruder = (raw['filament used [g]'] ?? '').split(',').slice(0, MAX_FILAMENTS);
  const types = listValues(raw.filament_type);
  const colors = listValues(raw.filament_colour ?? raw.extruder_colour);
  const out: FilamentGrams[] = [];
  perExtruder.forEach((value, i) => {
    const g = gramsOf(value);
    if (g !== null && g > 0) out.push({ filament: i + 1, type: types[i]?.trim() || null, color: color(colors[i]), grams: g });
  });
  if (out.length === 0) {
    // Only the total: one filament (single-extruder slicers that leave the per-extruder line out).
    const total = gramsOf(raw['total filament used [g]']);
    if (total !== null && total > 0) out.push({ filament: 1, type: types[0]?.trim() || null, color: color(colors[0]), grams: total });
  }
  return out;
}

async function gramsOf3mf(file: string, plate: number): Promise<FilamentGrams[]> {
  return withSource(file, async (src) => {
    const zip = await ZipArchive.open(src);
    const entry = zip.get('Metadata/slice_info.config');
    if (!entry) return [];
    const plates = parseSliceInfo((await zip.read(entry, MAX_CONFIG_BYTES)).toString('utf8'));
    const slice = plates.find((p) => p.index === plate) ?? (plates.length === 1 ? plates[0] : undefined);
    return (slice?.filaments ?? [])
      .slice(0, MAX_FILAMENTS)
      .map((f) => ({ filament: Number(f.id), type: f.type?.trim() || null, color: color(f.color), grams: gramsOf(f.used_g) ?? 0 }))
      .filter((f) => Number.isInteger(f.filament) && f.filament >= 1 && f.filament <= MAX_FILAMENTS && f.grams > 0);
  });
}

/** The grams per filament of a local print file (empty when the file does not say). Throws for a malformed file. */
export async function readFilamentGrams(file: string, fileName: string, plate = 1): Promise<FilamentGrams[]> {
  const lower = fileName.toLowerCase();
  if (lower.endsWith('.3mf')) return gramsOf3mf(file, plate);
  if (lower.endsWith('.bgcode')) {
    const b = await readBgcode(file, { gcode: 'skip' });
    return gramsFromSlicerKeys({ ...b.slicerMetadata, ...b.printMetadata, ...b.printerMetadata });
  }
  if (/\.(gcode|gco|g)$/.test(lower)) return gramsFromSlicerKeys((await readGcodeMetadata(file, { countLayers: false, maxThumbnails: 0 })).raw);
  return [];
}

/** Grams per (file version, plate), most recently used kept. */
export class FileGramsCache {
  private readonly entries = new Map<string, Promise<FilamentGrams[]>>();

  get(file: { id: string; checksum: string | null; updated_at: string; local_path: string; filename: string }, plate: number): Promise<FilamentGrams[]> {
    const key = `${file.id}\u0000${file.checksum ?? file.updated_at}\u0000${plate}`;
    let grams = this.entries.get(key);
    if (grams) {
      this.entries.delete(key);
    } else {
      grams = readFilamentGrams(file.local_path, file.filename, plate);
      grams.catch(() => this.entries.delete(key));
    }
    this.entries.set(key, grams);
    while (this.entries.size > MAX_CACHE) this.entries.delete(this.entries.keys().next().value!);
    return grams;
  }
}
