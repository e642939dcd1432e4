/**
 * Real-format files the simulated printers hold, made in memory at start:
 * a Bambu Studio `.gcode.3mf` (plate G-code, plate thumbnails,
 * slice_info.config), a PrusaSlicer `.gcode` with `; thumbnail begin` blocks
 * and its metadata footer, a Prusa `.bgcode` (CRC32-checked blocks with PNG
 * thumbnails) and a binary `.stl`. Parsers read them like the real thing.
 */
import { createHash } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { strToU8, zipSync, zlibSync } from 'fflate';
import { PNG } from 'pngjs';

export interface SeedFile {
  name: string;
  data: Buffer;
}

const thumbnails = new Map<string, Buffer>();

/**
 * A small picture: a shaded square on a transparent background, tinted by `hue` (0-360).
 * Encoding takes pngjs a while, so each size and hue is made once per process.
 */
export function thumbnailPng(width: number, height: number, hue = 200): Buffer {
  const key = `${width}x${height}:${hue}`;
  let made = thumbnails.get(key);
  if (!made) {
    made = drawThumbnail(width, height, hue);
    if (thumbnails.size > 64) thumbnails.clear();
    thumbnails.set(key, made);
  }
  return Buffer.from(made);
}

function drawThumbnail(width: number, height: number, hue: number): Buffer {
  const png = new PNG({ width, height });
  const [r, g, b] = hslToRgb(hue / 360, 0.6, 0.5);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 4;
      const inside = x > width * 0.2 && x < width * 0.8 && y > height * 0.2 && y < height * 0.8;
      const shade = 0.6 + (0.4 * (width - x + y)) / (width + height);
      png.data[i] = Math.round(r * shade);
      png.data[i + 1] = Math.round(g * shade);
      png.data[i + 2] = Math.round(b * shade);
      png.data[i + 3] = inside ? 255 : 0;
    }
  }
  return PNG.sync.write(png);
}

function hslToRgb(h: number, s: number, l: number): [number, number, number] {
  const f = (n: number) => {
    const k = (n + h * 12) % 12;
    return l - s * Math.min(l, 1 - l) * Math.max(-1, Math.min(k - 3, 9 - k, 1));
  };
  return [f(0) * 255, f(8) * 255, f(4) * 255];
}

/** Toolpath of a hollow square tower: enough layers for progress and previews to mean something. */
function cubeGcode(layers: number, layerHeight = 0.2, size = 20): string[] {
  const lines = ['G28 ; home', 'G29 ; mesh bed levelling', 'G92 E0'];
  let e = 0;
  for (let layer = 0; layer < layers; layer++) {
    const z = ((layer + 1) * layerHeight).toFixed(2);
    lines.push(';LAYER_CHANGE', `;Z:${z}`, `;HEIGHT:${layerHeight}`, `G1 Z${z} F720`, ';TYPE:External perimeter');
    const corners = [
      [100, 100],
      [100 + size, 100],
      [100 + size, 100 + size],
      [100, 100 + size],
      [100, 100],
    ];
    lines.push(`G1 X${corners[0][0]} Y${corners[0][1]} F9000`);
    for (const [x, y] of corners.slice(1)) {
      e += size * 0.0333;
      lines.push(`G1 X${x} Y${y} E${e.toFixed(5)} F1800`);
    }
    lines.push(`M73 P${Math.round(((layer + 1) / layers) * 100)} R${Math.max(0, Math.round((layers - layer - 1) / 10))}`);
  }
  lines.push('M104 S0', 'M140 S0', 'M84');
  return lines;
}

function thumbnailBlock(png: Buffer, width: number, height: number, keyword = 'thumbnail'): string[] {
  const b64 = png.toString('base64');
  const out = [`; ${keyword} begin ${width}x${height} ${b64.length}`];
  for (let i = 0; i < b64.length; i += 78) out.push(`; ${b64.slice(i, i + 78)}`);
  out.push(`; ${keyword} end`, ';');
  return out;
}

/** The print metadata with the grams of each extruder when the filaments state them. */
function prusaMetadata(filaments: SeedFilament[]): Record<string, string> {
  if (!filaments.some((f) => f.grams !== undefined)) return PRUSA_METADATA;
  const grams = filaments.map((f) => f.grams ?? 0);
  return { ...PRUSA_METADATA, 'filament used [g]': grams.map((g) => g.toFixed(2)).join(', '), 'total filament used [g]': grams.reduce((a, b) => a + b, 0).toFixed(2) };
}

const PRUSA_METADATA: Record<string, string> = {
  'filament used [mm]': '1052.36',
  'filament used [g]': '3.14',
  'total filament used [g]': '3.14',
  'estimated printing time (normal mode)': '12m 30s',
  'estimated first layer printing time (normal mode)': '35s',
};

/** PrusaSlicer's `printer_model` for a printer as people name it ("Core One" -> "COREONE"). */
export function prusaSlicerModel(model = 'MK4S'): string {
  const key = model.toUpperCase().replace(/[\s_-]+/g, '');
  return { COREONE: 'COREONE', MK4S: 'MK4S', MK4: 'MK4', XL: 'XL', MINI: 'MINI', MK39: 'MK3.9', 'MK3.9': 'MK3.9', MK35: 'MK3.5', 'MK3.5': 'MK3.5' }[key] ?? key;
}

/** A file's filament: what the slicer wrote for one extruder / AMS filament. */
export interface SeedFilament {
  type: string;
  /** "#RRGGBB". */
  color: string;
  /** Grams of it the print uses (3MF `used_g`, G-code `filament used [g]`); default: a small cube's share. */
  grams?: number;
}

const DEFAULT_FILAMENTS: SeedFilament[] = [{ type: 'PLA', color: '#FFFFFF' }];

/** The slicer settings of the Prusa seed files, sliced for `model` with `filaments` (one per extruder). */
function prusaConfig(model: string, filaments: SeedFilament[]): Record<string, string> {
  return {
    layer_height: '0.2',
    fill_density: '15%',
    filament_type: filaments.map((f) => f.type).join(';'),
    filament_colour: filaments.map((f) => f.color).join(';'),
    temperature: '215',
    first_layer_temperature: '215',
    bed_temperature: '60',
    nozzle_diameter: filaments.map(() => '0.4').join(','),
    printer_model: prusaSlicerModel(model),
    support_material: '0',
  };
}

export interface PrusaSeedOptions {
  /** The printer the file is sliced for (default MK4S): its `printer_model`. */
  model?: string;
  filaments?: SeedFilament[];
}

export function prusaGcode(options: PrusaSeedOptions = {}): Buffer {
  const config = prusaConfig(options.model ?? 'MK4S', options.filaments ?? DEFAULT_FILAMENTS);
  const lines = [
    '; generated by PrusaSlicer 2.8.1+linux-x64-GTK3 on 2026-11-01 at 10:00:00 UTC',
    ';',
    ...thumbnailBlock(thumbnailPng(16, 16, 30), 16, 16),
    ...thumbnailBlock(thumbnailPng(313, 173, 30), 313, 173),
    'M107',
    'M104 S215',
    'M140 S60',
    'M190 S60',
    'M109 S215',
    ...cubeGcode(50),
    ...Object.entries(prusaMetadata(options.filaments ?? DEFAULT_FILAMENTS)).map(([k, v]) => `; ${k} = ${v}`),
    '',
    '; prusaslicer_config = begin',
    ...Object.entries(config).map(([k, v]) => `; ${k} = ${v}`),
    '; prusaslicer_config = end',
  ];
  return Buffer.from(lines.join('\n') + '\n');
}

/**
 * A G-code sliced for a Klipper printer (a PrusaSlicer/OrcaSlicer printer profile): the Prusa seed G-code
 * with `printer_model` and `printer_settings_id` naming `model` as the profile does ("Voron 2.4 350").
 */
export function klipperGcode(model = 'Voron 2.4 350'): Buffer {
  const name = model.replace(/[\r\n]/g, ' ').slice(0, 100);
  const text = prusaGcode({ model: 'MK4S' })
    .toString('utf8')
    .replace(/^; printer_model = .*$/m, `; printer_model = ${name}\n; printer_settings_id = ${name}`);
  return Buffer.from(text);
}

/**
 * How Bambu Studio names a printer in a sliced file: `printer_model_id` in
 * slice_info.config (absent for models we know no code of) and `printer_model`
 * in project_settings.config ("X1C" -> BL-P001, "Bambu Lab X1 Carbon").
 */
export function bambuSlicerModel(model = 'P1S'): { id: string | null; name: string } {
  const known: Record<string, [string, string]> = {
    X1C: ['BL-P001', 'Bambu Lab X1 Carbon'],
    X1: ['BL-P002', 'Bambu Lab X1'],
    X1E: ['C13', 'Bambu Lab X1E'],
    P1P: ['C11', 'Bambu Lab P1P'],
    P1S: ['C12', 'Bambu Lab P1S'],
    'A1 MINI': ['N1', 'Bambu Lab A1 mini'],
    A1: ['N2S', 'Bambu Lab A1'],
    H2D: ['O1D', 'Bambu Lab H2D'],
  };
  const hit = known[model.toUpperCase()];
  return hit ? { id: hit[0], name: hit[1] } : { id: null, name: `Bambu Lab ${model}` };
}

export interface BambuSeedOptions {
  /** The printer the file is sliced for (default P1S). */
  model?: string;
  /** The project's filaments, in order (filament ids 1, 2, ...); all are used on plate 1. */
  filaments?: SeedFilament[];
  /** slice_info's `prediction` (seconds, default 622). */
  predictionS?: number;
  nozzleDiameter?: number;
}

export function bambu3mf(options: BambuSeedOptions = {}): Buffer {
  const slicer = bambuSlicerModel(options.model ?? 'P1S');
  const filaments = options.filaments ?? DEFAULT_FILAMENTS;
  const nozzle = String(options.nozzleDiameter ?? 0.4);
  const gcode = [
    '; HEADER_BLOCK_START',
    '; BambuStudio 02.01.00.59',
    '; model printing time: 9m 40s; total estimated time: 10m 22s',
    '; total layer number: 40',
    '; total filament weight [g] : 2.65',
    '; HEADER_BLOCK_END',
    '; CONFIG_BLOCK_START',
    '; layer_height = 0.2',
    `; nozzle_temperature = ${filaments.map(() => '220').join(',')}`,
    '; hot_plate_temp = 55',
    `; filament_type = ${filaments.map((f) => f.type).join(';')}`,
    `; filament_colour = ${filaments.map((f) => f.color).join(';')}`,
    `; nozzle_diameter = ${nozzle}`,
    `; printer_model = ${slicer.name}`,
    '; sparse_infill_density = 15%',
    '; CONFIG_BLOCK_END',
    ...cubeGcode(40),
  ].join('\n');
  const filamentLines = filaments.map(
    (f, i) => `    <filament id="${i + 1}" tray_info_idx="${bambuFilamentIdx(f.type)}" type="${f.type}" color="${f.color}" used_m="${(0.88 / filaments.length).toFixed(2)}" used_g="${(f.grams ?? 2.65 / filaments.length).toFixed(2)}"/>`,
  );
  const sliceInfo = `<?xml version="1.0" encoding="UTF-8"?>
<config>
  <header><header_item key="X-BBL-Client-Type" value="slicer"/><header_item key="X-BBL-Client-Version" value="02.01.00.59"/></header>
  <plate>
    <metadata key="index" value="1"/>
${slicer.id ? `    <metadata key="printer_model_id" value="${slicer.id}"/>\n` : ''}    <metadata key="nozzle_diameters" value="${nozzle}"/>
    <metadata key="prediction" value="${options.predictionS ?? 622}"/>
    <metadata key="weight" value="2.65"/>
    <metadata key="support_used" value="false"/>
    <object identify_id="101" name="cube.stl" skipped="false"/>
${filamentLines.join('\n')}
  </plate>
</config>
`;
  const projectSettings = JSON.stringify({
    layer_height: '0.2',
    nozzle_temperature: filaments.map(() => '220'),
    hot_plate_temp: filaments.map(() => '55'),
    curr_bed_type: 'Textured PEI Plate',
    filament_type: filaments.map((f) => f.type),
    filament_colour: filaments.map((f) => f.color),
    nozzle_diameter: [nozzle],
    sparse_infill_density: '15%',
    printer_model: slicer.name,
  });
  const plateJson = JSON.stringify({
    bed_type: 'textured_plate',
    nozzle_diameter: Number(nozzle),
    filament_colors: filaments.map((f) => f.color),
    filament_ids: filaments.map((_, i) => i),
    first_extruder: 0,
    is_seq_print: false,
    version: 2,
  });
  const files: Record<string, Uint8Array> = {
    '[Content_Types].xml': strToU8(
      '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="model" ContentType="application/vnd.ms-package.3dmanufacturing-3dmodel+xml"/><Default Extension="png" ContentType="image/png"/><Default Extension="gcode" ContentType="text/x.gcode"/></Types>',
    ),
    '_rels/.rels': strToU8(
      '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Target="/3D/3dmodel.model" Id="rel-1" Type="http://schemas.microsoft.com/3dmanufacturing/2013/01/3dmodel"/><Relationship Target="/Metadata/plate_1.png" Id="rel-2" Type="http://schemas.openxmlformats.org/package/2006/relationships/metadata/thumbnail"/></Relationships>',
    ),
    '3D/3dmodel.model': strToU8(
      '<?xml version="1.0" encoding="UTF-8"?><model unit="millimeter" xml:lang="en-US" xmlns="http://schemas.microsoft.com/3dmanufacturing/core/2015/02"><metadata name="Application">BambuStudio-02.01.00.59</metadata><resources/><build/></model>',
    ),
    'Metadata/plate_1.gcode': strToU8(gcode),
    'Metadata/plate_1.gcode.md5': strToU8(createHash('md5').update(gcode).digest('hex').toUpperCase()),
    'Metadata/plate_1.png': thumbnailPng(256, 256, 140),
    'Metadata/plate_1_small.png': thumbnailPng(64, 64, 140),
    'Metadata/slice_info.config': strToU8(sliceInfo),
    'Metadata/project_settings.config': strToU8(projectSettings),
    'Metadata/plate_1.json': strToU8(plateJson),
  };
  return Buffer.from(zipSync(files, { level: 6 }));
}

/** One BGCode block: header, parameters, data (Deflate when `compress`), then CRC32 over all three. */
function bgcodeBlock(type: number, params: Buffer, data: Buffer, compress = false): Buffer {
  const payload = compress ? Buffer.from(zlibSync(data)) : data;
  const header = Buffer.alloc(compress ? 12 : 8);
  header.writeUInt16LE(type, 0);
  header.writeUInt16LE(compress ? 1 : 0, 2);
  header.writeUInt32LE(data.length, 4);
  if (compress) header.writeUInt32LE(payload.length, 8);
  const body = Buffer.concat([header, params, payload]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32LE(crc32(body) >>> 0, 0);
  return Buffer.concat([body, crc]);
}

const u16 = (...values: number[]) => {
  const b = Buffer.alloc(values.length * 2);
  values.forEach((v, i) => b.writeUInt16LE(v, i * 2));
  return b;
};

const ini = (entries: Record<string, string>) =>
  Buffer.from(
    Object.entries(entries)
      .map(([k, v]) => `${k}=${v}\n`)
      .join(''),
  );

export function prusaBgcode(options: PrusaSeedOptions = {}): Buffer {
  const config = prusaConfig(options.model ?? 'MK4S', options.filaments ?? DEFAULT_FILAMENTS);
  // "GCDE", version 1, checksum type 1 (CRC32).
  const header = Buffer.concat([Buffer.from('GCDE'), Buffer.from([1, 0, 0, 0]), u16(1)]);
  return Buffer.concat([
    header,
    bgcodeBlock(0, u16(0), ini({ Producer: 'PrusaSlicer 2.8.1', 'Produced on': '2026-11-01 10:00:00' })),
    bgcodeBlock(3, u16(0), ini({ ...config, ...PRUSA_METADATA, max_layer_z: '10.00' })),
    bgcodeBlock(5, u16(0, 16, 16), thumbnailPng(16, 16, 280)),
    bgcodeBlock(5, u16(0, 313, 173), thumbnailPng(313, 173, 280)),
    bgcodeBlock(4, u16(0), ini({ ...PRUSA_METADATA, 'filament used [cm3]': '2.53' }), true),
    bgcodeBlock(2, u16(0), ini(config), true),
    bgcodeBlock(1, u16(0), Buffer.from(cubeGcode(50).join('\n') + '\n')),
  ]);
}

/** A binary STL of a cube (12 triangles). */
export function cubeStl(size = 20): Buffer {
  const v = (x: number, y: number, z: number) => [x * size, y * size, z * size];
  const quads: number[][][] = [
    [[0, 0, -1], v(0, 0, 0), v(0, 1, 0), v(1, 1, 0), v(1, 0, 0)],
    [[0, 0, 1], v(0, 0, 1), v(1, 0, 1), v(1, 1, 1), v(0, 1, 1)],
    [[0, -1, 0], v(0, 0, 0), v(1, 0, 0), v(1, 0, 1), v(0, 0, 1)],
    [[0, 1, 0], v(0, 1, 0), v(0, 1, 1), v(1, 1, 1), v(1, 1, 0)],
    [[-1, 0, 0], v(0, 0, 0), v(0, 0, 1), v(0, 1, 1), v(0, 1, 0)],
    [[1, 0, 0], v(1, 0, 0), v(1, 1, 0), v(1, 1, 1), v(1, 0, 1)],
  ];
  const triangles = quads.flatMap(([n, a, b, c, d]) => [
    [n, a, b, c],
    [n, a, c, d],
  ]);
  const buf = Buffer.alloc(84 + triangles.length * 50);
  buf.write('binary STL: printfarm simulator cube', 0, 'ascii');
  buf.writeUInt32LE(triangles.length, 80);
  triangles.forEach((tri, i) => {
    let off = 84 + i * 50;
    for (const vec of tri) for (const c of vec) off = buf.writeFloatLE(c, off);
  });
  return buf;
}

/** Bambu's filament preset id for a type (tray_info_idx): Bambu's own "Basic" presets, "GFL99" (generic) otherwise. */
export function bambuFilamentIdx(type: string): string {
  return { PLA: 'GFA00', PETG: 'GFG00', ABS: 'GFB00', ASA: 'GFB01', TPU: 'GFU01', PC: 'GFC00', 'PA-CF': 'GFN03', 'PLA-CF': 'GFA50' }[type.toUpperCase()] ?? 'GFL99';
}

export interface SeedModels {
  /** Model the Bambu 3MF is sliced for (default P1S). */
  bambu?: string;
  /** Model the Prusa G-code and BGCode are sliced for (default MK4S). */
  prusa?: string;
}

/** Seed files by kind and model ("3mf:X1C", "gcode:MK4S"): a farm of several models builds each once. */
const cache = new Map<string, Buffer>();

function cached(key: string, make: () => Buffer): Buffer {
  let data = cache.get(key);
  if (!data) {
    data = make();
    if (cache.size > 64) cache.clear(); // a handful of models in practice; never unbounded
    cache.set(key, data);
  }
  return data;
}

/**
 * The files every simulated printer starts with, sliced for `models` (a
 * simulator passes its own model); made once per process and model pair, each
 * caller gets its own copies. The names stay the same whatever the model.
 */
export function seedFiles(models: SeedModels = {}): SeedFile[] {
  const bambu = models.bambu ?? 'P1S';
  const prusa = models.prusa ?? 'MK4S';
  const files = [
    { name: 'Cube_PLA.gcode.3mf', data: cached(`3mf:${bambu}`, () => bambu3mf({ model: bambu })) },
    { name: 'cube_0.2mm_PLA_MK4S_12m.gcode', data: cached(`gcode:${prusa}`, () => prusaGcode({ model: prusa })) },
    { name: 'cube_0.2mm_PLA_MK4S_12m.bgcode', data: cached(`bgcode:${prusa}`, () => prusaBgcode({ model: prusa })) },
    { name: 'cube_20mm.stl', data: cached('stl', () => cubeStl()) },
  ];
  return files.map((f) => ({ name: f.name, data: Buffer.from(f.data) }));
}
