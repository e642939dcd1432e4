/**
 * What a print file says about the printer it needs: the model it was sliced
 * for, the nozzle diameter and the filaments (type and colour) the plate uses.
 * Read from the file's own metadata (3MF slice_info.config and
 * project_settings.config, G-code config lines, BGCode printer metadata) with
 * the preview library's defensive readers; never guessed from the file name.
 */
import { readBgcode } from '../preview/bgcode';
import { readGcodeMetadata } from '../preview/gcode-meta';
import { BAMBU_PRINTER_MODELS, listValues, lowerKeys, parseNumber } from '../preview/metadata';
import { withSource } from '../preview/source';
import { parseProjectSettings, parseSliceInfo } from '../preview/threemf';
import { ZipArchive } from '../preview/zip';

export type PrintFormat = '3mf' | 'gcode' | 'bgcode' | 'other';

export interface FileFilament {
  /** 1-based filament number in the file (slice_info `id`, or the position in the filament list). */
  id: number;
  type: string | null;
  /** "#RRGGBB" when stated. */
  color: string | null;
}

export interface FileFacts {
  format: PrintFormat;
  /** The model the file was sliced for, as the file names it ("Bambu Lab X1 Carbon", "MK4S"); null when it does not say. */
  printer_model: string | null;
  /** The slicer's printer profile name (printer_settings_id, e.g. "Voron 2.4 350"), when a G-code names one. */
  printer_profile?: string | null;
  nozzle_diameter: number | null;
  /** Every filament slot of the file (3MF: the project's list), in order. */
  filament_count: number;
  /** The filaments the chosen plate uses. */
  filaments: FileFilament[];
  /** 3MF: plates with sliced G-code inside. */
  sliced_plates: number[];
}

const MAX_CONFIG_BYTES = 64 * 1024 * 1024;

export function formatOf(fileName: string): PrintFormat {
  const lower = fileName.toLowerCase();
  if (lower.endsWith('.3mf')) return '3mf';
  if (lower.endsWith('.bgcode')) return 'bgcode';
  if (/\.(gcode|gco|g)$/.test(lower)) return 'gcode';
  return 'other';
}

function color(value: string | undefined): string | null {
  const v = (value ?? '').trim().replace(/^#/, '');
  return /^[0-9a-f]{6}([0-9a-f]{2})?$/i.test(v) ? `#${v.slice(0, 6).toUpperCase()}` : null;
}

/** printer_settings_id as a model name; PrusaSlicer's "- default FFF -" and quoted empties say nothing. */
function profileName(value: string | undefined): string | null {
  const v = (value ?? '').trim().replace(/^"(.*)"$/, '$1').trim();
  return v && !/^-.*-$/.test(v) ? v.slice(0, 200) : null;
}

/** The facts of a G-code or BGCode from its `key = value` settings (PrusaSlicer, OrcaSlicer, Bambu Studio). */
export function factsFromSlicerKeys(rawInput: Record<string, string>, format: PrintFormat): FileFacts {
  const raw = lowerKeys(rawInput);
  const types = listValues(raw.filament_type);
  const colors = listValues(raw.filament_colour ?? raw.extruder_colour);
  const count = Math.max(types.length, 1);
  const filaments: FileFilament[] = [];
  for (let i = 0; i < count; i++) filaments.push({ id: i + 1, type: types[i] ?? null, color: color(colors[i]) });
  const modelId = raw.printer_model_id;
  return {
    format,
    printer_model: raw.printer_model?.trim() || (modelId ? (BAMBU_PRINTER_MODELS[modelId] ?? modelId) : null),
    printer_profile: profileName(raw.printer_settings_id),
    nozzle_diameter: parseNumber(raw.nozzle_diameter),
    filament_count: count,
    filaments: types.length ? filaments : [],
    sliced_plates: [],
  };
}

async function factsOf3mf(file: string, plate: number): Promise<FileFacts> {
  return withSource(file, async (src) => {
    const zip = await ZipArchive.open(src);
    const text = async (name: string) => {
      const e = zip.get(name);
      return e ? (await zip.read(e, MAX_CONFIG_BYTES)).toString('utf8') : null;
    };
    const sliceXml = await text('Metadata/slice_info.config');
    const projectText = await text('Metadata/project_settings.config');
    const project = projectText ? lowerKeys(parseProjectSettings(projectText)) : {};
    const plates = sliceXml ? parseSliceInfo(sliceXml) : [];
    const slicePlate = plates.find((p) => p.index === plate);
    const sliced = zip.entries
      .map((e) => /^metadata\/plate_(\d+)\.gcode$/.exec(e.key))
      .filter((m): m is RegExpExecArray => m !== null)
      .map((m) => Number(m[1]))
      .sort((a, b) => a - b);
    const projectTypes = listValues(project.filament_type);
    const projectColors = listValues(project.filament_colour);
    const used: FileFilament[] = (slicePlate?.filaments ?? [])
      .map((f) => {
        const id = Number(f.id);
        return { id, type: f.type?.trim() || projectTypes[id - 1] || null, color: color(f.color) ?? color(projectColors[id - 1]) };
      })
      .filter((f) => Number.isInteger(f.id) && f.id >= 1 && f.id <= 64);
    const modelId = slicePlate?.meta.printer_model_id;
    const nozzle = parseNumber(slicePlate?.meta.nozzle_diameters) ?? parseNumber(project.nozzle_diameter);
    return {
      format: '3mf',
      printer_model: project.printer_model?.trim() || (modelId ? (BAMBU_PRINTER_MODELS[modelId] ?? modelId) : null),
      nozzle_diameter: nozzle,
      filament_count: Math.max(projectTypes.length, ...used.map((f) => f.id), used.length ? 1 : 0),
      filaments: used,
      sliced_plates: sliced,
    };
  });
}

/** Reads the facts of a local print file; `plate` picks the 3MF plate. Throws a PreviewError for a malformed file. */
export async function readFileFacts(file: string, fileName: string, plate = 1): Promise<FileFacts> {
  const format = formatOf(fileName);
  switch (format) {
    case '3mf':
      return factsOf3mf(file, plate);
    case 'bgcode': {
      const b = await readBgcode(file, { gcode: 'skip' });
      return factsFromSlicerKeys({ ...b.slicerMetadata, ...b.printMetadata, ...b.printerMetadata }, format);
    }
    case 'gcode':
      return factsFromSlicerKeys((await readGcodeMetadata(file, { countLayers: false, maxThumbnails: 0 })).raw, format);
    default:
      return { format, printer_model: null, nozzle_diameter: null, filament_count: 0, filaments: [], sliced_plates: [] };
  }
}
