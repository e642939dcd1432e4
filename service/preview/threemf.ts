/**
 * 3MF packages (Bambu Studio, OrcaSlicer, PrusaSlicer; projects and sliced
 * `.gcode.3mf`): embedded pictures and print metadata, read through the
 * defensive {@link ZipArchive}. Nothing is ever written to disk; entry names
 * are only compared with the names this module looks for.
 */
import { PreviewError } from './errors';
import { GcodeMetaScanner } from './gcode-meta';
import { BAMBU_PRINTER_MODELS, cleanSlicerName, materialFrom, mergeMetadata, metadataFromSlicerKeys, parseBool, parseNumber, type PrintMetadata } from './metadata';
import { imageInfo, toDisplayImage, type ImageFormat } from './png';
import { generatedBy, settingLine } from './setting-lines';
import { MAX_3MF_CONFIG_BYTES, modelApplication, parseSliceInfo, type SlicePlate } from './slice-info';
import { withSource } from './source';
import { scanXml } from './xml-reader';
import { ZipArchive, zipKey, type ZipLimits } from './zip';

export { parseSliceInfo } from './slice-info';

export type ThreeMfImageKind = 'relationship' | 'plate' | 'plate_no_light' | 'plate_small' | 'top' | 'thumbnail' | 'auxiliary';

export interface ThreeMfImage {
  /** Entry name as stored in the archive. */
  name: string;
  kind: ThreeMfImageKind;
  /** Plate number for per-plate pictures. */
  plate: number | null;
  /** Named by `_rels/.rels` as the package thumbnail or a cover. */
  fromRelationship: boolean;
  format: ImageFormat;
  width: number;
  height: number;
}

export interface ThreeMfOptions {
  /** Plate whose picture/metadata is wanted (1-based). Default: the best picture, the first sliced plate. */
  plate?: number;
  limits?: ZipLimits;
}

export interface ThreeMfInfo {
  metadata: PrintMetadata;
  /** Plates found (slice_info plates, plate_N pictures or plate_N.gcode). */
  plates: number[];
  /** Plates with sliced G-code inside. */
  slicedPlates: number[];
  images: ThreeMfImage[];
  /** The plate the metadata was taken from, when per-plate data exists. */
  plate: number | null;
}

/** Largest picture entry read (default 32 MiB). */
const MAX_IMAGE_ENTRY = 32 * 1024 * 1024;
const MAX_IMAGES = 64;
const KIND_RANK: Record<ThreeMfImageKind, number> = { relationship: 0, plate: 1, auxiliary: 2, thumbnail: 3, plate_no_light: 4, plate_small: 5, top: 6 };

/** Reads pictures and metadata of a 3MF (path or buffer). */
export async function read3mf(input: string | Buffer, options: ThreeMfOptions = {}): Promise<ThreeMfInfo> {
  return withSource(input, async (src) => {
    const zip = await ZipArchive.open(src, options.limits);
    return inspect(zip, options);
  });
}

export async function read3mfMetadata(input: string | Buffer, options: ThreeMfOptions = {}): Promise<PrintMetadata> {
  return (await read3mf(input, options)).metadata;
}

export interface ExtractedImage {
  data: Buffer;
  mime: 'image/png' | 'image/jpeg';
  width: number;
  height: number;
  /** The entry it came from. */
  source: string;
}

/** The best picture of a 3MF (largest; or the given plate's cover), as PNG/JPEG. Throws NO_THUMBNAIL when there is none. */
export async function extract3mfThumbnail(input: string | Buffer, options: ThreeMfOptions = {}): Promise<ExtractedImage> {
  return withSource(input, async (src) => {
    const zip = await ZipArchive.open(src, options.limits);
    const images = await listImages(zip);
    const chosen = chooseImage(images, options.plate);
    const data = await zip.read(chosen.name, MAX_IMAGE_ENTRY);
    return { ...toDisplayImage(data), source: chosen.name };
  });
}

/** Picks the picture: the plate's own when asked (cover, then unlit cover, small, top view), else the largest. */
export function chooseImage(images: readonly ThreeMfImage[], plate?: number): ThreeMfImage {
  const usable = images.filter((i) => i.width > 0 && i.height > 0);
  if (usable.length === 0) throw new PreviewError('NO_THUMBNAIL', '3MF has no embedded picture');
  const perPlate = usable.filter((i) => i.plate !== null);
  if (plate !== undefined && perPlate.length > 0) {
    const own = perPlate.filter((i) => i.plate === plate).sort((a, b) => KIND_RANK[a.kind] - KIND_RANK[b.kind]);
    if (own.length === 0) throw new PreviewError('NO_THUMBNAIL', `3MF has no picture for plate ${plate}`);
    return own[0];
  }
  const ranked = usable.filter((i) => i.kind !== 'top');
  const pool = ranked.length ? ranked : usable;
  return pool.slice().sort((a, b) => {
    const area = b.width * b.height - a.width * a.height;
    if (area !== 0) return area;
    if (a.fromRelationship !== b.fromRelationship) return a.fromRelationship ? -1 : 1;
    const rank = KIND_RANK[a.kind] - KIND_RANK[b.kind];
    if (rank !== 0) return rank;
    return (a.plate ?? 0) - (b.plate ?? 0);
  })[0];
}

function classify(key: string): { kind: ThreeMfImageKind; plate: number | null } | null {
  let m: RegExpExecArray | null;
  if ((m = /^metadata\/plate_(\d+)\.(png|jpe?g)$/.exec(key))) return { kind: 'plate', plate: Number(m[1]) };
  if ((m = /^metadata\/plate_(\d+)_small\.(png|jpe?g)$/.exec(key))) return { kind: 'plate_small', plate: Number(m[1]) };
  if ((m = /^metadata\/plate_no_light_(\d+)\.(png|jpe?g)$/.exec(key))) return { kind: 'plate_no_light', plate: Number(m[1]) };
  if ((m = /^metadata\/top_(\d+)\.(png|jpe?g)$/.exec(key))) return { kind: 'top', plate: Number(m[1]) };
  if (/^metadata\/thumbnail\.(png|jpe?g)$/.test(key)) return { kind: 'thumbnail', plate: null };
  if (/^auxiliaries\/\.thumbnails\/[^/]+\.(png|jpe?g)$/.test(key)) return { kind: 'auxiliary', plate: null };
  return null;
}

/** Picture entries with their sizes (read from each picture's header). */
export async function listImages(zip: ZipArchive): Promise<ThreeMfImage[]> {
  const relTargets = await thumbnailRelationships(zip);
  const found = new Map<string, { name: string; kind: ThreeMfImageKind; plate: number | null; fromRelationship: boolean }>();
  for (const e of zip.entries) {
    const c = classify(e.key);
    if (c && !found.has(e.key)) found.set(e.key, { name: e.name, ...c, fromRelationship: relTargets.has(e.key) });
  }
  for (const key of relTargets) {
    const e = zip.get(key);
    if (e && !found.has(e.key)) found.set(e.key, { name: e.name, kind: 'relationship', plate: null, fromRelationship: true });
  }
  const out: ThreeMfImage[] = [];
  for (const cand of [...found.values()].slice(0, MAX_IMAGES)) {
    try {
      const head = await zip.readHead(cand.name, 4096);
      const info = imageInfo(head);
      if (info) out.push({ ...cand, format: info.format, width: info.width, height: info.height });
    } catch (err) {
      // A broken picture must not hide the good ones; a hostile archive still fails loudly.
      if (err instanceof PreviewError && err.code === 'TOO_LARGE') throw err;
    }
  }
  return out;
}

async function thumbnailRelationships(zip: ZipArchive): Promise<Set<string>> {
  const out = new Set<string>();
  const rels = zip.get('_rels/.rels');
  if (!rels) return out;
  const xml = (await zip.read(rels, 4 * 1024 * 1024)).toString('utf8');
  scanXml(xml, {
    open(el) {
      if (el.name.toLowerCase() !== 'relationship') return;
      const type = (el.attributes.Type ?? '').toLowerCase();
      if ((type.endsWith('/metadata/thumbnail') || type.includes('cover-thumbnail')) && el.attributes.Target) out.add(zipKey(el.attributes.Target));
    },
  });
  return out;
}

// ---------------------------------------------------------------------------
// Metadata

async function inspect(zip: ZipArchive, options: ThreeMfOptions): Promise<ThreeMfInfo> {
  const images = await listImages(zip);
  const textOf = async (name: string, max = MAX_3MF_CONFIG_BYTES): Promise<string | null> => {
    const e = zip.get(name);
    return e ? (await zip.read(e, max)).toString('utf8') : null;
  };

  // slice_info.config (Bambu / Orca): per-plate results of slicing.
  const sliceXml = await textOf('Metadata/slice_info.config');
  const slicePlates = sliceXml ? parseSliceInfo(sliceXml) : [];

  const slicedPlates = zip.entries
    .map((e) => /^metadata\/plate_(\d+)\.gcode$/.exec(e.key))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => Number(m[1]));
  const plates = new Set<number>([...slicePlates.map((p) => p.index), ...slicedPlates, ...images.filter((i) => i.plate !== null).map((i) => i.plate!)]);

  let plate: number | null = null;
  if (options.plate !== undefined) plate = options.plate;
  else if (slicePlates.some((p) => 'prediction' in p.meta)) plate = slicePlates.find((p) => 'prediction' in p.meta)!.index;
  else if (slicedPlates.length) plate = Math.min(...slicedPlates);
  else if (plates.size) plate = Math.min(...plates);
  const slicePlate = slicePlates.find((p) => p.index === plate);

  // Filaments used on the plate: their 0-based indices into per-filament settings.
  const usedIdx = (slicePlate?.filaments ?? []).map((f) => Number(f.id) - 1).filter((i) => Number.isInteger(i) && i >= 0);
  const filamentIndex = usedIdx.length ? usedIdx[0] : 0;

  // project_settings.config (JSON; some older files use `key = value` lines).
  const projectText = await textOf('Metadata/project_settings.config');
  const project = projectText ? parseProjectSettings(projectText) : {};

  // PrusaSlicer: Metadata/Slic3r_PE.config (`; key = value`).
  const prusaText = await textOf('Metadata/Slic3r_PE.config');
  const prusa: Record<string, string> = {};
  let prusaProducer: string | null = null;
  if (prusaText) {
    for (const line of prusaText.split('\n')) {
      const kv = settingLine(line, 'required');
      if (kv) prusa[kv.key] = kv.value;
      prusaProducer ??= generatedBy(line);
    }
  }

  // The plate's G-code header (sliced files): HEADER_BLOCK / CONFIG_BLOCK.
  let gcodeMeta: PrintMetadata | null = null;
  const gcodeEntry = plate !== null ? zip.get(`Metadata/plate_${plate}.gcode`) : undefined;
  if (gcodeEntry) {
    const head = await zip.readHead(gcodeEntry, 1 << 20);
    const scanner = new GcodeMetaScanner({ countLayers: false, headBytes: head.length + 1, maxThumbnails: 0 });
    scanner.push(head);
    gcodeMeta = scanner.end().metadata;
  }

  // The producer, from the model's metadata.
  let application: string | null = null;
  const model = zip.get('3D/3dmodel.model');
  if (model) {
    const head = (await zip.readHead(model, 64 * 1024)).toString('utf8');
    application = modelApplication(head);
  }

  const slicer = cleanSlicerName(prusaProducer ?? application);
  const fromSlice = slicePlate ? sliceInfoMetadata(slicePlate, project) : null;
  const fromProject = Object.keys(project).length ? metadataFromSlicerKeys(project, { filamentIndex, slicer }) : null;
  const fromPrusa = Object.keys(prusa).length ? metadataFromSlicerKeys(prusa, { slicer }) : null;
  const metadata = mergeMetadata(fromSlice, gcodeMeta, fromProject, fromPrusa, { slicer });
  if (gcodeMeta?.slicer && !slicer) metadata.slicer = gcodeMeta.slicer;
  return { metadata, plates: [...plates].sort((a, b) => a - b), slicedPlates: slicedPlates.sort((a, b) => a - b), images, plate: slicePlate || gcodeEntry || plates.has(plate ?? -1) ? plate : null };
}

function sliceInfoMetadata(plate: SlicePlate, project: Record<string, string>): Partial<PrintMetadata> {
  const m = plate.meta;
  const out: Partial<PrintMetadata> = {};
  const prediction = parseNumber(m.prediction);
  if (prediction !== null) out.estimated_print_time = Math.round(prediction);
  const weight = parseNumber(m.weight);
  if (weight !== null) out.filament_used_g = weight;
  const support = parseBool(m.support_used);
  if (support !== null) out.support_material = support;
  const types = plate.filaments.map((f) => f.type).filter(Boolean);
  if (types.length) out.material_type = materialFrom(types.join(';'));
  else if (project.filament_type) {
    const idx = plate.filaments.map((f) => Number(f.id) - 1).filter((i) => i >= 0);
    out.material_type = materialFrom(project.filament_type, idx);
  }
  if (m.printer_model_id && !project.printer_model) out.printer_model = BAMBU_PRINTER_MODELS[m.printer_model_id] ?? m.printer_model_id;
  return out;
}

/** project_settings.config: JSON with string or string-array values (arrays joined with ";"), or `key = value` lines. */
export function parseProjectSettings(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  let obj: unknown;
  try {
    obj = JSON.parse(text);
  } catch {
    for (const line of text.split('\n')) {
      const kv = settingLine(line, 'optional');
      if (kv) out[kv.key] = kv.value;
    }
    return out;
  }
  if (!obj || typeof obj !== 'object' || Array.isArray(obj)) throw new PreviewError('MALFORMED', 'project_settings.config is JSON but not an object');
  for (const [k, v] of Object.entries(obj as Record<string, unknown>)) {
    if (typeof v === 'string') out[k] = v;
    else if (typeof v === 'number' || typeof v === 'boolean') out[k] = String(v);
    else if (Array.isArray(v)) out[k] = v.map((x) => (typeof x === 'string' ? x : JSON.stringify(x))).join(';');
  }
  return out;
}
