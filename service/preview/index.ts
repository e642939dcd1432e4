/**
 * Preview and metadata library: entry points that dispatch by file type.
 *
 *   extractThumbnail(pathOrBuffer, fileType?, options?) -> picture (+ how it was made)
 *   readMetadata(pathOrBuffer, fileType?, options?)     -> normalised PrintMetadata
 *
 * Methods, as in the interface spec: 'extracted' (3MF / BGCode / G-code
 * embedded pictures), 'generated' (STL / OBJ rendered in software),
 * 'analyzed' (G-code toolpath after the preview optimisation rules) and
 * 'placeholder' (when processing fails and `fallback` is on).
 */
import { open } from 'node:fs/promises';
import { bgcodeMetadata, isBgcode, pickBgcodeThumbnail, readBgcode } from './bgcode';
import { PreviewError, type PreviewErrorCode } from './errors';
import { renderGcodeToolpath, type GcodeAnalysis, type GcodeOptimizationOptions } from './gcode-analyzer';
import { extractGcodeThumbnail, readGcodeMetadata } from './gcode-meta';
import type { MeshLimits } from './mesh';
import { renderMeshOffThread } from './mesh-thread';
import { emptyMetadata, type PrintMetadata } from './metadata';
import { placeholderPng, toDisplayImage } from './png';
import { DEFAULT_RENDER_SIZE } from './render';
import { extract3mfThumbnail, read3mfMetadata } from './threemf';
import type { ZipLimits } from './zip';

export * from './errors';
export * from './metadata';
export { decodeQoi, encodeQoi, isQoi } from './qoi';
export { decodePng, encodePng, imageInfo, placeholderPng, toDisplayImage } from './png';
export { read3mf, read3mfMetadata, extract3mfThumbnail } from './threemf';
export { readBgcode, bgcodeMetadata, meatpackDecode, heatshrinkDecode } from './bgcode';
export { readGcodeMetadata, extractGcodeThumbnail, GcodeMetaScanner } from './gcode-meta';
export { analyzeGcode, renderGcodeToolpath, findPrintStart, GCODE_OPTIMIZATION_DEFAULTS, PRINT_START_MARKERS } from './gcode-analyzer';
export type { GcodeAnalysis, GcodeOptimizationOptions, PrintStartMethod, ToolpathRenderOptions } from './gcode-analyzer';
export { parseStl, parseObj, parseMesh, isBinaryStl, loadMeshFile, MESH_MAX_FILE_BYTES } from './mesh';
export { renderMeshOffThread, activeMeshRenders } from './mesh-thread';
export { renderMesh, renderMeshPng } from './render';

export type PreviewFileType = '3mf' | 'bgcode' | 'gcode' | 'stl' | 'obj';

/** Thumbnail processing priority by type (interface spec): 3MF 1, BGCode 1, STL/OBJ 2, G-code 3. */
export const THUMBNAIL_PRIORITY: Readonly<Record<PreviewFileType, number>> = { '3mf': 1, bgcode: 1, stl: 2, obj: 2, gcode: 3 };

/**
 * The preview type of an extension or file name: ".3mf", "gcode.3mf",
 * "part.gcode.3mf", ".bgcode", ".gcode"/".gco"/".g", ".stl", ".obj"
 * (case-insensitive). Null for anything else.
 */
export function previewFileType(nameOrExtension: string): PreviewFileType | null {
  const s = nameOrExtension.trim().toLowerCase();
  const ext = s.includes('.') ? s.slice(s.lastIndexOf('.') + 1) : s;
  switch (ext) {
    case '3mf':
      return '3mf';
    case 'bgcode':
    case 'bgc':
      return 'bgcode';
    case 'gcode':
    case 'gco':
    case 'g':
      return 'gcode';
    case 'stl':
      return 'stl';
    case 'obj':
      return 'obj';
    default:
      return null;
  }
}

/** Type from content: ZIP -> 3mf, "GCDE" -> bgcode, STL shapes, else null. */
export function sniffFileType(head: Uint8Array, totalSize?: number): PreviewFileType | null {
  if (head.length >= 4 && head[0] === 0x50 && head[1] === 0x4b && head[2] === 0x03 && head[3] === 0x04) return '3mf';
  if (isBgcode(head)) return 'bgcode';
  const text = Buffer.from(head.buffer, head.byteOffset, Math.min(head.length, 512)).toString('latin1');
  if (/^\s*solid\b/i.test(text) && /\bfacet\b/i.test(text)) return 'stl';
  if (head.length >= 84 && totalSize !== undefined) {
    const count = Buffer.from(head.buffer, head.byteOffset, head.length).readUInt32LE(80);
    if (84 + count * 50 === totalSize) return 'stl';
  }
  if (/^\s*(#.*\n\s*)*(v|o|g|mtllib)\s/.test(text)) return 'obj';
  if (/^\s*(;|[GMT]\d)/m.test(text)) return 'gcode';
  return null;
}

async function resolveType(input: string | Buffer, fileType?: string): Promise<PreviewFileType> {
  if (fileType) {
    const t = previewFileType(fileType);
    if (t) return t;
    throw new PreviewError('UNSUPPORTED', `no preview for file type "${fileType.slice(0, 40)}"`);
  }
  if (typeof input === 'string') {
    const t = previewFileType(input);
    if (t) return t;
    const handle = await open(input, 'r');
    try {
      const size = (await handle.stat()).size;
      const head = Buffer.alloc(Math.min(size, 512));
      await handle.read(head, 0, head.length, 0);
      const sniffed = sniffFileType(head, size);
      if (sniffed) return sniffed;
    } finally {
      await handle.close();
    }
  } else {
    const sniffed = sniffFileType(input, input.length);
    if (sniffed) return sniffed;
  }
  throw new PreviewError('UNSUPPORTED', 'file type unknown and not recognisable from its content');
}

export type ThumbnailMethod = 'extracted' | 'generated' | 'analyzed' | 'placeholder';

export interface ThumbnailResult {
  data: Buffer;
  mime: 'image/png' | 'image/jpeg';
  width: number;
  height: number;
  method: ThumbnailMethod;
  /** Where it came from: a 3MF entry name, "thumbnail_QOI 313x173", "bgcode thumbnail 313x173", "mesh", "toolpath", "placeholder". */
  source: string;
  /** G-code toolpath previews: what the optimisation rules decided. */
  analysis?: GcodeAnalysis;
  /** When a placeholder replaced a failure. */
  error?: { code: PreviewErrorCode | 'ERROR'; message: string };
}

export interface ThumbnailOptions extends GcodeOptimizationOptions {
  /** 3MF: the plate's picture. */
  plate?: number;
  /** Size of generated / analysed / placeholder pictures (default 512). */
  size?: number;
  /** G-code toolpath view (default 'iso'). */
  view?: 'iso' | 'top';
  /** Return a placeholder instead of throwing when nothing can be produced (default true). */
  fallback?: boolean;
  /** 3MF safety limits. */
  zipLimits?: ZipLimits;
  /** STL/OBJ limits. */
  meshLimits?: MeshLimits;
  /** G-code / BGCode without an embedded picture: render the toolpath (default true). */
  renderToolpath?: boolean;
  /** Stops reading a BGCode file or rendering a mesh (the client has gone). */
  signal?: AbortSignal;
  /** STL/OBJ: most pixels the triangles may cover, in pictures (default 64; see MeshRenderOptions). */
  maxCoverage?: number;
}

/**
 * The picture for a file: embedded (3MF, BGCode, G-code), rendered (STL,
 * OBJ, G-code toolpath), or a placeholder when `fallback` (default) is on.
 */
export async function extractThumbnail(input: string | Buffer, fileType?: string, options: ThumbnailOptions = {}): Promise<ThumbnailResult> {
  const size = options.size ?? DEFAULT_RENDER_SIZE;
  try {
    const type = await resolveType(input, fileType);
    return await thumbnailFor(type, input, options, size);
  } catch (err) {
    // Stopped work has no result, not even a placeholder (the caller must not store one).
    if (options.fallback === false || (err instanceof PreviewError && err.code === 'ABORTED')) throw err;
    const code = err instanceof PreviewError ? err.code : 'ERROR';
    return {
      data: placeholderPng(size, size),
      mime: 'image/png',
      width: size,
      height: size,
      method: 'placeholder',
      source: 'placeholder',
      error: { code, message: (err as Error).message },
    };
  }
}

async function thumbnailFor(type: PreviewFileType, input: string | Buffer, options: ThumbnailOptions, size: number): Promise<ThumbnailResult> {
  switch (type) {
    case '3mf': {
      const img = await extract3mfThumbnail(input, { plate: options.plate, limits: options.zipLimits });
      return { ...img, method: 'extracted' };
    }
    case 'bgcode': {
      const file = await readBgcode(input, { gcode: 'skip', signal: options.signal });
      const best = pickBgcodeThumbnail(file);
      if (best) return { ...toDisplayImage(best.data), method: 'extracted', source: `bgcode thumbnail ${best.width}x${best.height}` };
      if (options.renderToolpath === false) throw new PreviewError('NO_THUMBNAIL', 'the BGCode file has no thumbnail block');
      // No picture: render the toolpath from the decoded G-code, decoding only the lines needed.
      const opt = resolveLines(options);
      let lines = 0;
      const decoded = await readBgcode(input, {
        gcode: 'decode',
        signal: options.signal,
        onGcode: (text) => {
          for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) lines++;
          return lines < opt;
        },
      });
      const r = await renderGcodeToolpath(Buffer.from(decoded.gcode.text ?? '', 'latin1'), { ...options, width: size, height: size });
      return { data: r.png, mime: 'image/png', width: r.width, height: r.height, method: 'analyzed', source: 'toolpath', analysis: r.analysis };
    }
    case 'gcode': {
      try {
        const img = await extractGcodeThumbnail(input);
        return { data: img.data, mime: img.mime, width: img.width, height: img.height, method: 'extracted', source: img.source };
      } catch (err) {
        if (!(err instanceof PreviewError && err.code === 'NO_THUMBNAIL') || options.renderToolpath === false) throw err;
      }
      const r = await renderGcodeToolpath(input, { ...options, width: size, height: size });
      return { data: r.png, mime: 'image/png', width: r.width, height: r.height, method: 'analyzed', source: 'toolpath', analysis: r.analysis };
    }
    case 'stl':
    case 'obj': {
      // Off the event loop, bounded in pixels and time, stopped when the caller leaves.
      const png = await renderMeshOffThread(input, type, { size, meshLimits: options.meshLimits, maxCoverage: options.maxCoverage, signal: options.signal });
      return { data: png, mime: 'image/png', width: size, height: size, method: 'generated', source: 'mesh' };
    }
  }
}

/** Lines a toolpath preview can need: the optimisation window plus the render range. */
function resolveLines(o: GcodeOptimizationOptions): number {
  const w = o.optimize_print_only === false ? 0 : (o.optimization_max_lines ?? 1000);
  return w + (o.render_max_lines ?? 10000);
}

export interface MetadataOptions {
  /** 3MF: the plate's metadata (default: the first sliced plate). */
  plate?: number;
  /**
   * G-code and BGCode: count layer-change markers when no header states the
   * layer count (G-code: streams the file; BGCode: decodes the G-code blocks).
   * Default true.
   */
  countLayers?: boolean;
  zipLimits?: ZipLimits;
  /** Stops reading a BGCode file (the client has gone). */
  signal?: AbortSignal;
}

/** Normalised metadata of a file; STL/OBJ carry none (all fields null). */
export async function readMetadata(input: string | Buffer, fileType?: string, options: MetadataOptions = {}): Promise<PrintMetadata> {
  const type = await resolveType(input, fileType);
  switch (type) {
    case '3mf':
      return read3mfMetadata(input, { plate: options.plate, limits: options.zipLimits });
    case 'bgcode': {
      const count = options.countLayers !== false;
      let layers = 0;
      const file = await readBgcode(input, {
        gcode: count ? 'decode' : 'verify',
        maxGcodeText: 0,
        signal: options.signal,
        onGcode: (text) => {
          for (let i = text.indexOf(';LAYER_CHANGE'); i !== -1; i = text.indexOf(';LAYER_CHANGE', i + 13)) {
            if (i === 0 || text.charCodeAt(i - 1) === 10) layers++;
          }
        },
      });
      const meta = bgcodeMetadata(file);
      // A count of part of the file is no layer count.
      if (meta.layer_count === null && layers > 0 && !file.gcode.decodeStopped) meta.layer_count = layers;
      return meta;
    }
    case 'gcode':
      return (await readGcodeMetadata(input, { countLayers: options.countLayers !== false })).metadata;
    case 'stl':
    case 'obj':
      return emptyMetadata();
  }
}
