/**
 * G-code preview optimisation (interface spec, "Behavior rules: G-code
 * preview optimization") and the streaming toolpath renderer.
 *
 * 1. The first `optimization_max_lines` lines are examined for a print-start
 *    marker (`;LAYER:0`, `;LAYER_CHANGE`, `;TYPE:SKIRT`, `;TYPE:WALL-OUTER`,
 *    `START_PRINT`, `;PRINT_START`, `;layer 0`; case-insensitive). Bambu
 *    Studio's `; CHANGE_LAYER` and a bare `PRINT_START` macro call count too.
 * 2. Without a marker, movement decides: after the warm-up (heating M104/M109/
 *    M140/M190, homing G28, levelling G29, `G92 E0`) the first substantial
 *    extrusion move (positive E over at least 1 mm of XY travel) starts the
 *    print. A later heat-and-wait or homing/levelling inside the window means
 *    that extrusion was a purge, so the search starts again after it.
 * 3. No start found (or an error while looking): render from line 1.
 * 4. At most `render_max_lines` lines, counted from the print start, are rendered.
 * 5. `optimize_print_only: false`: nothing is skipped; rendering starts at line 1
 *    (the `render_max_lines` limit still applies).
 *
 * The file is streamed and reading stops once the render range has been read.
 *
 * The rules (the decision) are `gcode-print-start.ts`; line parsing is `gcode-words.ts`,
 * streaming `gcode-line-source.ts`, drawing `gcode-toolpath-render.ts`. This module is their
 * public face.
 */
import { scanSource, type Source } from './gcode-line-source';
import { ToolpathScanner, type GcodeAnalysis, type GcodeOptimizationOptions } from './gcode-print-start';

export {
  findPrintStart,
  GCODE_OPTIMIZATION_DEFAULTS,
  matchPrintStartMarker,
  PRINT_START_MARKERS,
  resolveOptimizationOptions,
  ToolpathScanner,
  type GcodeAnalysis,
  type GcodeOptimizationOptions,
  type PrintStartMarker,
  type PrintStartMethod,
  type ToolpathScanOptions,
} from './gcode-print-start';
export { renderGcodeToolpath, type ToolpathRender, type ToolpathRenderOptions } from './gcode-toolpath-render';

/** Applies the optimisation rules to a G-code file, Buffer or Readable (streamed; stops after the render range). */
export async function analyzeGcode(source: Source, options: GcodeOptimizationOptions = {}): Promise<GcodeAnalysis> {
  const scanner = new ToolpathScanner(options);
  await scanSource(source, scanner);
  return scanner.finish();
}
