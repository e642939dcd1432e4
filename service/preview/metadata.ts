/**
 * One normalised metadata shape for every format (3MF, BGCode, G-code from
 * PrusaSlicer / OrcaSlicer / Bambu Studio / Cura) and the small parsers that
 * turn slicer text into it. Fields the file does not state are null, never guessed.
 */

export interface PrintMetadata {
  /** Seconds (normal mode where the slicer gives several). */
  estimated_print_time: number | null;
  /** Millimetres. */
  layer_height: number | null;
  /** Sparse infill density in percent (15 for "15%"). */
  infill: number | null;
  layer_count: number | null;
  support_material: boolean | null;
  /** Filament type(s), distinct values joined with ", " ("PLA", "PLA, PETG"). */
  material_type: string | null;
  /** °C, of the first (used) extruder / filament. */
  nozzle_temperature: number | null;
  /** °C, for the bed/plate type the file was sliced for. */
  bed_temperature: number | null;
  /** Grams, all filaments together. */
  filament_used_g: number | null;
  /** Producer name and version, e.g. "PrusaSlicer 2.8.1", "BambuStudio 02.01.00.59", "Cura 4.10.0". */
  slicer: string | null;
  /** Printer model as the slicer names it ("MK4S", "Bambu Lab P1S"). */
  printer_model: string | null;
}

export const METADATA_FIELDS: readonly (keyof PrintMetadata)[] = [
  'estimated_print_time',
  'layer_height',
  'infill',
  'layer_count',
  'support_material',
  'material_type',
  'nozzle_temperature',
  'bed_temperature',
  'filament_used_g',
  'slicer',
  'printer_model',
];

export function emptyMetadata(): PrintMetadata {
  return {
    estimated_print_time: null,
    layer_height: null,
    infill: null,
    layer_count: null,
    support_material: null,
    material_type: null,
    nozzle_temperature: null,
    bed_temperature: null,
    filament_used_g: null,
    slicer: null,
    printer_model: null,
  };
}

/** Field by field, the first non-null value wins (list sources from most to least authoritative). */
export function mergeMetadata(...parts: (Partial<PrintMetadata> | null | undefined)[]): PrintMetadata {
  const out = emptyMetadata();
  for (const field of METADATA_FIELDS) {
    for (const part of parts) {
      const value = part?.[field];
      if (value !== null && value !== undefined) {
        (out as unknown as Record<string, unknown>)[field] = value;
        break;
      }
    }
  }
  return out;
}

/** Bambu `printer_model_id` codes (slice_info.config) to the model names. */
export const BAMBU_PRINTER_MODELS: Readonly<Record<string, string>> = {
  'BL-P001': 'Bambu Lab X1 Carbon',
  'BL-P002': 'Bambu Lab X1',
  C11: 'Bambu Lab P1P',
  C12: 'Bambu Lab P1S',
  C13: 'Bambu Lab X1E',
  N1: 'Bambu Lab A1 mini',
  N2S: 'Bambu Lab A1',
  O1D: 'Bambu Lab H2D',
};

// ---------------------------------------------------------------------------
// Value parsers

/** Strips surrounding quotes and whitespace. */
export function unquote(text: string): string {
  let s = text.trim();
  if (s.length >= 2 && ((s[0] === '"' && s[s.length - 1] === '"') || (s[0] === "'" && s[s.length - 1] === "'"))) s = s.slice(1, -1).trim();
  return s;
}

/** A multi-value setting ("PLA;PETG", "220,220", `"PLA";"PLA"`) as its trimmed, unquoted items. */
export function listValues(text: string | null | undefined): string[] {
  if (text === null || text === undefined) return [];
  return text
    .split(/[;,]/)
    .map(unquote)
    .filter((v) => v.length > 0);
}

/** The numeric value of a setting, or of its item `index` when it is a list ("220,225" -> 225 for index 1). */
export function parseNumber(text: string | null | undefined, index = 0): number | null {
  const items = listValues(text);
  const item = items[index] ?? items[0];
  if (item === undefined) return null;
  const m = /^[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?/i.exec(item);
  if (!m) return null;
  const n = Number(m[0]);
  return Number.isFinite(n) ? n : null;
}

/** Sum of a numeric list ("1.20, 0, 0.29" -> 1.49), null when no item is numeric. */
export function sumNumbers(text: string | null | undefined): number | null {
  let total = 0;
  let any = false;
  for (const item of listValues(text)) {
    const n = Number(item);
    if (Number.isFinite(n)) {
      total += n;
      any = true;
    }
  }
  return any ? round(total, 4) : null;
}

/** "15%" -> 15; "0.15" -> 15 (a fraction); "15" -> 15. */
export function parsePercent(text: string | null | undefined): number | null {
  const items = listValues(text);
  if (items.length === 0) return null;
  const item = items[0];
  const n = parseNumber(item);
  if (n === null) return null;
  if (item.includes('%')) return n;
  return n > 0 && n < 1 ? round(n * 100, 4) : n;
}

/** "1", "true", "True", "yes" -> true; "0", "false", "no", "none" -> false; anything else null. */
export function parseBool(text: string | null | undefined): boolean | null {
  if (text === null || text === undefined) return null;
  const v = unquote(listValues(text)[0] ?? text).toLowerCase();
  if (['1', 'true', 'yes', 'on', 'enabled'].includes(v)) return true;
  if (['0', 'false', 'no', 'off', 'none', 'disabled', ''].includes(v)) return false;
  return null;
}

/**
 * A slicer duration in seconds: "1d 2h 3m 4s", "3m 41s", "20s", "02h 05m", or a
 * plain number of seconds ("6085"). Null when nothing parses.
 */
export function parseDuration(text: string | null | undefined): number | null {
  if (text === null || text === undefined) return null;
  const s = text.trim();
  if (/^\d+(?:\.\d+)?$/.test(s)) return Math.round(Number(s));
  // One forward pass over "<number> <unit>" pairs (a global regex here was quadratic on a long digit run).
  let total = 0;
  let matched = false;
  let i = 0;
  while (i < s.length) {
    if (!isDigit(s, i)) {
      i++;
      continue;
    }
    let end = i;
    while (isDigit(s, end)) end++;
    if (s[end] === '.' && isDigit(s, end + 1)) {
      end++;
      while (isDigit(s, end)) end++;
    }
    let u = end;
    while (u < s.length && /\s/.test(s[u])) u++;
    const factor = DURATION_UNITS[s[u]?.toLowerCase() ?? ''];
    if (factor !== undefined && !/\w/.test(s[u + 1] ?? '')) {
      total += Number(s.slice(i, end)) * factor;
      matched = true;
      i = u + 1;
    } else i = end;
  }
  return matched ? Math.round(total) : null;
}

const DURATION_UNITS: Record<string, number> = { d: 86400, h: 3600, m: 60, s: 1 };
const isDigit = (s: string, i: number): boolean => {
  const c = s.charCodeAt(i);
  return c >= 48 && c <= 57;
};

function round(n: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}

/** Distinct non-empty filament types joined with ", ". */
export function materialFrom(text: string | null | undefined, indices?: number[]): string | null {
  const all = listValues(text);
  const picked = indices && indices.length > 0 ? indices.map((i) => all[i]).filter((v): v is string => !!v) : all;
  const distinct = [...new Set(picked.map((v) => v.trim()).filter(Boolean))];
  return distinct.length ? distinct.join(', ') : null;
}

/** The per-plate bed temperature key of Bambu Studio / OrcaSlicer for a `curr_bed_type`. */
export function bedTemperatureKey(bedType: string | null | undefined): string | null {
  if (!bedType) return null;
  const t = unquote(bedType).toLowerCase();
  if (t.includes('supertack')) return 'supertack_plate_temp';
  if (t.includes('textured cool')) return 'textured_cool_plate_temp';
  if (t.includes('cool')) return 'cool_plate_temp';
  if (t.includes('engineering')) return 'eng_plate_temp';
  if (t.includes('textured')) return 'textured_plate_temp';
  if (t.includes('high temp') || t.includes('smooth') || t.includes('pei')) return 'hot_plate_temp';
  return null;
}

const MAX_PRODUCER_CHARS = 200;

/** A producer line's name and version, cleaned: "PrusaSlicer 2.8.1+linux-x64-GTK3" -> "PrusaSlicer 2.8.1". */
export function cleanSlicerName(text: string | null | undefined): string | null {
  if (!text) return null;
  // Producer lines are short; the cut keeps this backtracking pattern's work small on a hostile megabyte line.
  const t = text.trim().slice(0, MAX_PRODUCER_CHARS);
  const m = /^\s*([A-Za-z][\w.-]*?)(?:[\s-]+v?(\d[\w.]*?))?(?:\+\S*)?(?:\s+on\s+.*)?\s*$/.exec(t);
  if (!m) return t || null;
  let name = m[1];
  if (/^cura_steamengine$/i.test(name)) name = 'Cura';
  return m[2] ? `${name} ${m[2]}` : name;
}

/** Lower-cased, trimmed keys (first value kept when a key repeats with different case). */
export function lowerKeys(raw: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(raw)) {
    const key = k.trim().toLowerCase();
    if (!(key in out)) out[key] = v;
  }
  return out;
}

const nonEmpty = (v: string | undefined | null): string | undefined => {
  if (v === undefined || v === null) return undefined;
  const s = unquote(v);
  return s.length ? s : undefined;
};

function pick(raw: Record<string, string>, keys: string[]): string | undefined {
  for (const k of keys) {
    const v = nonEmpty(raw[k]);
    if (v !== undefined) return v;
  }
  return undefined;
}

export interface SlicerKeyHints {
  /** Producer, when known from elsewhere (a header line, the 3MF model's Application). */
  slicer?: string | null;
  /** Index of the first used filament, for per-filament lists (nozzle_temperature = 220,230). */
  filamentIndex?: number;
}

/**
 * Metadata from PrusaSlicer, OrcaSlicer and Bambu Studio keys: config lines
 * (`; key = value`), header lines (`; total layer number: 29`), BGCode INI blocks
 * and 3MF project settings. `raw` keys are matched lower-cased.
 */
export function metadataFromSlicerKeys(rawInput: Record<string, string>, hints: SlicerKeyHints = {}): PrintMetadata {
  const raw = lowerKeys(rawInput);
  const fi = hints.filamentIndex ?? 0;
  const out = emptyMetadata();

  out.estimated_print_time =
    parseDuration(pick(raw, ['estimated printing time (normal mode)', 'total estimated time', 'estimated printing time', 'prediction'])) ??
    parseDuration(pick(raw, ['model printing time']));
  out.layer_height = parseNumber(pick(raw, ['layer_height']));
  out.infill = parsePercent(pick(raw, ['fill_density', 'sparse_infill_density']));
  const layers = parseNumber(pick(raw, ['total layer number', 'total_layer_number', 'layer_count', 'total layers count']));
  out.layer_count = layers === null ? null : Math.round(layers);
  out.support_material = parseBool(pick(raw, ['support_used', 'support_material', 'enable_support']));
  out.material_type = materialFrom(pick(raw, ['filament_type']));
  out.nozzle_temperature = parseNumber(pick(raw, ['nozzle_temperature', 'temperature', 'nozzle_temperature_initial_layer', 'first_layer_temperature']), fi);

  const bedKey = bedTemperatureKey(pick(raw, ['curr_bed_type']));
  out.bed_temperature =
    parseNumber(bedKey ? pick(raw, [bedKey, `${bedKey}_initial_layer`]) : undefined, fi) ??
    parseNumber(pick(raw, ['bed_temperature', 'first_layer_bed_temperature', 'hot_plate_temp']), fi);

  out.filament_used_g =
    parseNumber(pick(raw, ['total filament used [g]', 'total filament weight [g]', 'total filament weight', 'weight'])) ??
    sumNumbers(pick(raw, ['filament used [g]']));

  out.slicer = cleanSlicerName(hints.slicer ?? pick(raw, ['producer', 'generated by']));
  const model = pick(raw, ['printer_model']);
  const modelId = pick(raw, ['printer_model_id']);
  // printer_settings_id is a profile name; PrusaSlicer's "- default FFF -" says nothing.
  const settingsId = pick(raw, ['printer_settings_id']);
  out.printer_model = model ?? (modelId ? (BAMBU_PRINTER_MODELS[modelId] ?? modelId) : undefined) ?? (settingsId && !/^-\s*default\b/i.test(settingsId) ? settingsId : null);
  return out;
}

/**
 * Metadata from Cura's `;KEY:value` header (TIME, Filament used, Layer height,
 * LAYER_COUNT, Generated with) and, when given, the `;SETTING_3` dump at the end.
 */
export function metadataFromCura(rawInput: Record<string, string>, settings = ''): PrintMetadata {
  const raw = lowerKeys(rawInput);
  const out = emptyMetadata();
  out.estimated_print_time = parseDuration(pick(raw, ['time', 'print.time']));
  out.layer_height = parseNumber(pick(raw, ['layer height']));
  const layers = parseNumber(pick(raw, ['layer_count']));
  out.layer_count = layers === null ? null : Math.round(layers);
  out.slicer = cleanSlicerName(pick(raw, ['generated with']));
  out.printer_model = pick(raw, ['target_machine.name']) ?? null;
  if (settings) {
    // The dump is JSON-ish with "\\n" separators: `infill_sparse_density = 20\\n`.
    const setting = (key: string): string | undefined => {
      const m = new RegExp(`(?:^|\\\\n|\\n|")${key}\\s*=\\s*([^\\\\\\n"]*)`).exec(settings);
      return m ? m[1].trim() : undefined;
    };
    out.infill = parsePercent(setting('infill_sparse_density'));
    out.support_material = parseBool(setting('support_enable'));
    out.nozzle_temperature = parseNumber(setting('material_print_temperature'));
    out.bed_temperature = parseNumber(setting('material_bed_temperature'));
    out.layer_height ??= parseNumber(setting('layer_height'));
  }
  return out;
}
