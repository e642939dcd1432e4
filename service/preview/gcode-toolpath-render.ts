/**
 * Draws the toolpath of a G-code file's render range: extrusion moves coloured by height from
 * blue (bottom) to red (top), on a transparent background.
 */
import { PreviewError } from './errors';
import { scanSource, type Source } from './gcode-line-source';
import { ToolpathScanner, type GcodeAnalysis, type GcodeOptimizationOptions } from './gcode-print-start';
import { encodePng } from './png';
import { heightColor, Projector, Raster, resolveView, type ViewOptions } from './render';

export interface ToolpathRenderOptions extends GcodeOptimizationOptions, ViewOptions {
  /** 'iso' (default) or 'top'. */
  view?: 'iso' | 'top';
  /** Segments kept at most (default 1 000 000); more are merged/thinned. */
  maxSegments?: number;
  /** Line width in output pixels (default 1, 2 from 1024 px up). */
  lineWidth?: number;
}

export interface ToolpathRender {
  png: Buffer;
  width: number;
  height: number;
  analysis: GcodeAnalysis;
  /** Extrusion segments drawn. */
  segments: number;
  bounds: { min: [number, number, number]; max: [number, number, number] };
}

/**
 * Renders the extrusion moves of the render range (after the optimisation
 * rules), coloured by height from blue (bottom) to red (top), on a
 * transparent background. Throws NO_THUMBNAIL when the range has no extrusion.
 */
export async function renderGcodeToolpath(source: Source, options: ToolpathRenderOptions = {}): Promise<ToolpathRender> {
  const view = resolveView({
    ...options,
    azimuth: options.view === 'top' ? 0 : (options.azimuth ?? 45),
    elevation: options.view === 'top' ? 90 : (options.elevation ?? 35),
  });
  const scanner = new ToolpathScanner({ ...options, collect: true });
  await scanSource(source, scanner);
  const analysis = scanner.finish();
  const store = scanner.segments!;
  if (store.count === 0) throw new PreviewError('NO_THUMBNAIL', 'no extrusion moves in the rendered G-code range');

  const c = store.coords;
  const min: [number, number, number] = [Infinity, Infinity, Infinity];
  const max: [number, number, number] = [-Infinity, -Infinity, -Infinity];
  for (let i = 0; i < store.count * 6; i += 3) {
    for (let k = 0; k < 3; k++) {
      const v = c[i + k];
      if (v < min[k]) min[k] = v;
      if (v > max[k]) max[k] = v;
    }
  }
  if (![...min, ...max].every(Number.isFinite)) throw new PreviewError('MALFORMED', 'G-code moves have non-finite coordinates');
  const proj = new Projector(view);
  proj.fitBox(min, max);
  const raster = new Raster(proj.pxWidth, proj.pxHeight);
  const zSpan = max[2] - min[2];
  const p = new Float64Array(6);
  const lw = Math.max(1, Math.round(options.lineWidth ?? (view.width >= 1024 ? 2 : 1))) * view.ss;
  // Colour lookup by height: 256 steps.
  const ramp = Array.from({ length: 256 }, (_, i) => heightColor(i / 255));
  for (let s = 0; s < store.count; s++) {
    const o = s * 6;
    proj.project(c[o], c[o + 1], c[o + 2], p, 0);
    proj.project(c[o + 3], c[o + 4], c[o + 5], p, 3);
    const t = zSpan > 0 ? ((c[o + 2] + c[o + 5]) / 2 - min[2]) / zSpan : 0.5;
    const [r, g, b] = ramp[Math.round(t * 255)];
    raster.line(p[0], p[1], p[2], p[3], p[4], p[5], r, g, b, lw);
  }
  const img = raster.downsample(view.ss);
  return { png: encodePng(img.data, img.width, img.height), width: img.width, height: img.height, analysis, segments: store.count, bounds: { min, max } };
}
