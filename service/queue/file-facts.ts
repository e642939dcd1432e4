/**
 * What a print file says about the printer it needs: the model it was sliced
 * for, the nozzle diameter and the filaments (type and colour) the plate uses.
 * Read from the file's own metadata (3MF slice_info.config and
 * project_settings.config, G-code config lines, BGCode printer metadata) with
 * the preview library's defensive readers; never guessed from the file name.
 */
import { readBgcode } from '../preview/bgcode';
import { readGcodeMetadata } from '../preview/gcode-meta';
import { listValues, lowerKeys, metadataFromSlicerKeys, parseNumber } from '../preview/metadata';
import { MAX_3MF_CONFIG_BYTES } from '../preview/slice-info';
import { withSource } from '../preview/source';
import { parseProjectSettings, parseSliceInfo } from '../preview/threemf';
import { ZipArchive } from '../preview/zip';
import { boundsFromPlateJson, boundsFromSlicerKeys, type PlateBounds } from './file-bounds';
import { bgcodeFirmwareChecks, gcodeFirmwareChecks, type FirmwareChecks } from './firmware-checks';
import { modelClaim, type ModelSource } from './model-claims';

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
  /** Where the file names that model (model-claims.ts): the firmware check, printer_model, printer_notes... */
  model_source: ModelSource | null;
  /** The family the file's vendor keyword names (PRINTER_VENDOR_PRUSA3D -> prusa_core), when stated. */
  vendor_family: string | null;
  /** The slicer's printer profile name (printer_settings_id, e.g. "Voron 2.4 350"), when a G-code names one: Klipper matches it. */
  printer_profile?: string | null;
  nozzle_diameter: number | null;
  /** Every filament slot of the file (3MF: the project's list), in order. */
  filament_count: number;
  /** The filaments the chosen plate uses. */
  filaments: FileFilament[];
  /** 3MF: plates with sliced G-code inside. */
  sliced_plates: number[];
  /** Where the plate's objects are, when the file says (checked against the printer's build volume). */
  bounds: PlateBounds | null;
  /** The slicer's print time estimate, seconds. */
  print_time_s: number | null;
}

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

/** The facts of a G-code or BGCode from its `key = value` settings (PrusaSlicer, OrcaSlicer, Bambu Studio) and its firmware checks. */
export function factsFromSlicerKeys(rawInput: Record<string, string>, format: PrintFormat, checks: FirmwareChecks | null = null): FileFacts {
  const raw = lowerKeys(rawInput);
  const types = listValues(raw.filament_type);
  const colors = listValues(raw.filament_colour ?? raw.extruder_colour);
  const count = Math.max(types.length, 1);
  const filaments: FileFilament[] = [];
  for (let i = 0; i < count; i++) filaments.push({ id: i + 1, type: types[i] ?? null, color: color(colors[i]) });
  const claim = modelClaim(raw, checks);
  return {
    format,
    printer_model: claim.model,
    model_source: claim.source,
    vendor_family: claim.vendor_family,
    printer_profile: profileName(raw.printer_settings_id),
    // The firmware's nozzle check is what the printer enforces.
    nozzle_diameter: checks?.nozzle ?? parseNumber(raw.nozzle_diameter),
    filament_count: count,
    filaments: types.length ? filaments : [],
    sliced_plates: [],
    bounds: boundsFromSlicerKeys(raw),
    print_time_s: metadataFromSlicerKeys(raw).estimated_print_time,
  };
}

async function factsOf3mf(file: string, plate: number): Promise<FileFacts> {
  return withSource(file, async (src) => {
    const zip = await ZipArchive.open(src);
    const text = async (name: string) => {
      const e = zip.get(name);
      return e ? (await zip.read(e, MAX_3MF_CONFIG_BYTES)).toString('utf8') : null;
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
    const claim = modelClaim(project, null, slicePlate?.meta.printer_model_id);
    const nozzle = parseNumber(slicePlate?.meta.nozzle_diameters) ?? parseNumber(project.nozzle_diameter);
    const prediction = parseNumber(slicePlate?.meta.prediction);
    return {
      format: '3mf',
      printer_model: claim.model,
      model_source: claim.source,
      vendor_family: claim.vendor_family,
      nozzle_diameter: nozzle,
      filament_count: Math.max(projectTypes.length, ...used.map((f) => f.id), used.length ? 1 : 0),
      filaments: used,
      sliced_plates: sliced,
      bounds: boundsFromPlateJson(await text(`Metadata/plate_${plate}.json`)),
      print_time_s: prediction !== null && prediction > 0 ? Math.round(prediction) : null,
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
      return factsFromSlicerKeys({ ...b.slicerMetadata, ...b.printMetadata, ...b.printerMetadata }, format, await bgcodeFirmwareChecks(file));
    }
    case 'gcode':
      return factsFromSlicerKeys((await readGcodeMetadata(file, { countLayers: false, maxThumbnails: 0 })).raw, format, await gcodeFirmwareChecks(file));
    default:
      return { format, printer_model: null, model_source: null, vendor_family: null, nozzle_diameter: null, filament_count: 0, filaments: [], sliced_plates: [], bounds: null, print_time_s: null };
  }
}
