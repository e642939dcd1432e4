/**
 * A G-code preview for a client: the toolpath picture (PNG) and what the
 * preview optimisation decided (print-start line, skipped and rendered
 * lines), for G-code text, a file on this machine, or a file of the service's
 * catalog (its content is fetched, downloading it from the printer first when
 * there is no local copy). The optimisation settings come from the service
 * (GET /settings/gcode-optimization) unless the caller gives them.
 *
 * Rendering runs here with the bundled preview library: the service has no
 * preview endpoint yet (spec 4.4 POST /files/{id}/preview).
 */
import fs from 'node:fs';
import path from 'node:path';
import { extractThumbnail, renderGcodeToolpath, type GcodeAnalysis, type GcodeOptimizationOptions } from '../preview';
import { PrintfarmError } from './errors';
import type { PrintfarmClient } from './rest';

export type PreviewSource = { kind: 'gcode'; text: Buffer } | { kind: 'path'; path: string } | { kind: 'file_id'; id: string };
export type PreviewSourceHint = 'auto' | 'gcode' | 'path' | 'file_id';

export interface PreviewOptions extends GcodeOptimizationOptions {
  /** Picture size in pixels (square; 512). */
  size?: number;
  view?: 'iso' | 'top';
}

export interface PreviewResult {
  png: Buffer;
  width: number;
  height: number;
  /** How the picture was made: 'analyzed' (toolpath) or, for other file types, 'extracted' / 'generated'. */
  method: string;
  /** What the optimisation rules decided (G-code toolpaths). */
  analysis: GcodeAnalysis | null;
  /** The settings that were applied. */
  settings: Required<GcodeOptimizationOptions>;
  /** Catalog files: id and name. */
  file?: { id: string; filename: string };
}

const GCODE_LINE = /^\s*(;|[GMT]\d)/m;

/**
 * What an input is: a Buffer or text with G-code lines is G-code; an absolute
 * path (or one of a file that exists) is a path; anything else is a file id.
 */
export function previewSource(input: unknown, hint: PreviewSourceHint = 'auto'): PreviewSource {
  if (Buffer.isBuffer(input) || input instanceof Uint8Array) {
    if (hint === 'path' || hint === 'file_id') throw new TypeError(`a ${hint} must be text, not bytes`);
    return { kind: 'gcode', text: Buffer.from(input) };
  }
  if (typeof input !== 'string' || input.trim() === '') throw new TypeError('give G-code text (string or Buffer), a file path or a file id');
  switch (hint) {
    case 'gcode':
      return { kind: 'gcode', text: Buffer.from(input, 'latin1') };
    case 'path':
      return { kind: 'path', path: input };
    case 'file_id':
      return { kind: 'file_id', id: input.trim() };
  }
  if (input.includes('\n') || GCODE_LINE.test(input)) return { kind: 'gcode', text: Buffer.from(input, 'latin1') };
  if (path.isAbsolute(input) || fs.existsSync(input)) return { kind: 'path', path: input };
  return { kind: 'file_id', id: input.trim() };
}

/** The service's optimisation settings, overridden by the caller's. */
async function settingsFor(client: PrintfarmClient | null, options: PreviewOptions): Promise<Required<GcodeOptimizationOptions>> {
  const given = {
    optimize_print_only: options.optimize_print_only,
    optimization_max_lines: options.optimization_max_lines,
    render_max_lines: options.render_max_lines,
  };
  const missing = Object.values(given).some((v) => v === undefined);
  const service = missing && client ? await client.settings.gcodeOptimization() : { optimize_print_only: true, optimization_max_lines: 1000, render_max_lines: 10000 };
  return {
    optimize_print_only: given.optimize_print_only ?? service.optimize_print_only,
    optimization_max_lines: given.optimization_max_lines ?? service.optimization_max_lines,
    render_max_lines: given.render_max_lines ?? service.render_max_lines,
  };
}

const isGcodeName = (name: string) => /\.(gcode|gco|g)$/i.test(name);

export async function gcodePreview(source: PreviewSource, client: PrintfarmClient | null, options: PreviewOptions = {}): Promise<PreviewResult> {
  const settings = await settingsFor(client, options);
  const render = { ...settings, width: options.size ?? 512, height: options.size ?? 512, view: options.view };
  const toolpath = async (input: Buffer | string) => {
    const r = await renderGcodeToolpath(input, render);
    return { png: r.png, width: r.width, height: r.height, method: 'analyzed', analysis: r.analysis, settings };
  };
  if (source.kind === 'gcode') return toolpath(source.text);
  if (source.kind === 'path') {
    if (isGcodeName(source.path)) return toolpath(source.path);
    const t = await extractThumbnail(source.path, undefined, { ...settings, size: options.size, view: options.view, fallback: false });
    return { png: t.data, width: t.width, height: t.height, method: t.method, analysis: t.analysis ?? null, settings };
  }
  if (!client) throw new TypeError('a file id needs a Printfarm service');
  let file = await client.files.get(source.id);
  if (!file.content_url) {
    if (!file.printer_id || !file.printer_path) throw new PrintfarmError(409, 'NO_LOCAL_COPY', `File "${file.filename}" has no content to preview`);
    await client.files.downloadForPrinter(file.printer_id, file.printer_path);
    file = await client.files.get(source.id);
  }
  const data = await client.files.content(source.id);
  const meta = { file: { id: file.id, filename: file.filename } };
  if (isGcodeName(file.filename)) return { ...(await toolpath(data)), ...meta };
  const t = await extractThumbnail(data, file.file_type, { ...settings, size: options.size, view: options.view, fallback: false });
  return { png: t.data, width: t.width, height: t.height, method: t.method, analysis: t.analysis ?? null, settings, ...meta };
}
