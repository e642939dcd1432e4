/**
 * The decision of the G-code preview optimisation: where the print starts (marker, movement or
 * line 1) and which lines are rendered. The rules are described in `gcode-analyzer.ts`.
 */
import { SegmentStore } from './gcode-segments';
import { HE, HI, HJ, HX, HY, HZ, parseWords, type Words } from './gcode-words';

export interface GcodeOptimizationOptions {
  /** Skip the warm-up (default true). */
  optimize_print_only?: boolean;
  /** Lines examined for the print start (default 1000). */
  optimization_max_lines?: number;
  /** Lines rendered at most, from the print start (default 10000). */
  render_max_lines?: number;
}

export const GCODE_OPTIMIZATION_DEFAULTS: Required<GcodeOptimizationOptions> = {
  optimize_print_only: true,
  optimization_max_lines: 1000,
  render_max_lines: 10000,
};

export type PrintStartMethod = 'marker' | 'movement' | 'none' | 'disabled';

export interface GcodeAnalysis {
  /** 1-based line where rendering starts. */
  print_start_line: number;
  /** Lines before the print start (print_start_line - 1). */
  skipped_lines: number;
  /** Lines in the render range (at most render_max_lines). */
  rendered_lines: number;
  /** Lines read from the file in total. */
  total_lines_scanned: number;
  method: PrintStartMethod;
  /** The marker that matched (method 'marker'). */
  marker?: string;
}

export interface PrintStartMarker {
  name: string;
  pattern: RegExp;
}

export const PRINT_START_MARKERS: readonly PrintStartMarker[] = [
  { name: ';LAYER:0', pattern: /^;\s*LAYER:\s*0(?![\d.])/i },
  { name: ';LAYER_CHANGE', pattern: /^;\s*LAYER_CHANGE\b/i },
  { name: ';TYPE:SKIRT', pattern: /^;\s*TYPE:\s*SKIRT/i },
  { name: ';TYPE:WALL-OUTER', pattern: /^;\s*TYPE:\s*WALL-OUTER\b/i },
  { name: 'START_PRINT', pattern: /^\s*START_PRINT\b/i },
  { name: ';PRINT_START', pattern: /^;\s*PRINT_START\b/i },
  { name: ';layer 0', pattern: /^;\s*layer\s+0(?![\d.])/i },
  // Beyond the spec's list, for slicers that write none of the above:
  { name: '; CHANGE_LAYER', pattern: /^;\s*CHANGE_LAYER\b/i },
  { name: 'PRINT_START', pattern: /^\s*PRINT_START\b/i },
];

/** The marker a line is, or null. Cheap for ordinary move lines. */
export function matchPrintStartMarker(line: string): string | null {
  const c = line.charCodeAt(0);
  // Only comments and the Klipper macros (S/P, possibly indented) can match.
  if (c !== 59 /* ; */ && c !== 83 && c !== 115 && c !== 80 && c !== 112 && c !== 32 && c !== 9) return null;
  for (const m of PRINT_START_MARKERS) if (m.pattern.test(line)) return m.name;
  return null;
}

export function resolveOptimizationOptions(o: GcodeOptimizationOptions = {}): Required<GcodeOptimizationOptions> {
  const int = (v: unknown, d: number, min: number) => (typeof v === 'number' && Number.isFinite(v) && v >= min ? Math.floor(v) : d);
  return {
    optimize_print_only: typeof o.optimize_print_only === 'boolean' ? o.optimize_print_only : GCODE_OPTIMIZATION_DEFAULTS.optimize_print_only,
    optimization_max_lines: int(o.optimization_max_lines, GCODE_OPTIMIZATION_DEFAULTS.optimization_max_lines, 0),
    render_max_lines: int(o.render_max_lines, GCODE_OPTIMIZATION_DEFAULTS.render_max_lines, 1),
  };
}

export interface ToolpathScanOptions extends GcodeOptimizationOptions {
  /** Keep extrusion segments for rendering (default false: analysis only). */
  collect?: boolean;
  /** Segments kept at most before they are merged/thinned (default 1 000 000). */
  maxSegments?: number;
}

const MIN_SUBSTANTIAL_MM = 1.0;

/**
 * Push-based: `line()` for each line in order until it returns false, then
 * `finish()`. Used by {@link analyzeGcode} and {@link renderGcodeToolpath}.
 */
export class ToolpathScanner {
  readonly opts: Required<GcodeOptimizationOptions>;
  readonly segments: SegmentStore | null;
  private lineNo = 0;
  private decided = false;
  private start = 1;
  private method: PrintStartMethod = 'none';
  private marker: string | undefined;
  private failed = false;
  // machine state
  private x = 0;
  private y = 0;
  private z = 0;
  private e = 0;
  private relXYZ = false;
  private relE = false;
  private readonly w: Words = { letter: 0, code: 0, x: 0, y: 0, z: 0, e: 0, i: 0, j: 0, has: 0 };
  // movement analysis
  private warmupSeen = false;
  private candidate = 0;

  constructor(options: ToolpathScanOptions = {}) {
    this.opts = resolveOptimizationOptions(options);
    this.segments = options.collect ? new SegmentStore(Math.max(1024, options.maxSegments ?? 1_000_000)) : null;
    if (!this.opts.optimize_print_only) this.decide(1, 'disabled');
    else if (this.opts.optimization_max_lines === 0) this.decide(1, 'none');
  }

  /** Feeds the next line (without its newline). Returns false once nothing more is needed. */
  line(raw: string): boolean {
    const n = ++this.lineNo;
    if (!this.decided) {
      if (n > this.opts.optimization_max_lines) {
        this.decideFromMovement();
      } else {
        try {
          const m = matchPrintStartMarker(raw);
          if (m) {
            this.marker = m;
            this.decide(n, 'marker');
          }
        } catch {
          this.failed = true;
          this.decide(1, 'none');
        }
      }
    }
    if (this.decided && n >= this.start + this.opts.render_max_lines) {
      this.lineNo--; // this line is beyond the range: not counted as scanned
      return false;
    }
    this.execute(raw, n);
    return true;
  }

  private decide(line: number, method: PrintStartMethod): void {
    this.decided = true;
    this.start = line;
    this.method = method;
    if (method !== 'marker') this.marker = undefined;
    this.segments?.keepRange(line, line + this.opts.render_max_lines);
  }

  private decideFromMovement(): void {
    if (this.failed) this.decide(1, 'none');
    else if (this.candidate > 0) this.decide(this.candidate, 'movement');
    else this.decide(1, 'none');
  }

  private execute(raw: string, n: number): void {
    const w = this.w;
    parseWords(raw, w);
    if (w.letter === 0) return;
    const inWindow = !this.decided;
    if (w.letter === 77) {
      switch (w.code) {
        case 82:
          this.relE = false;
          break;
        case 83:
          this.relE = true;
          break;
        case 104:
        case 140:
          if (inWindow) this.warmupSeen = true;
          break;
        case 109:
        case 190:
          if (inWindow) {
            this.warmupSeen = true;
            this.candidate = 0; // heat-and-wait after an extrusion: that was a purge
          }
          break;
      }
      return;
    }
    switch (w.code) {
      case 0:
      case 1:
      case 2:
      case 3:
        this.move(w, n, inWindow);
        return;
      case 28:
        if (w.has & HX || !(w.has & (HX | HY | HZ))) this.x = 0;
        if (w.has & HY || !(w.has & (HX | HY | HZ))) this.y = 0;
        if (w.has & HZ || !(w.has & (HX | HY | HZ))) this.z = 0;
        if (inWindow) {
          this.warmupSeen = true;
          this.candidate = 0;
        }
        return;
      case 29:
        if (inWindow) {
          this.warmupSeen = true;
          this.candidate = 0;
        }
        return;
      case 90:
        this.relXYZ = false;
        this.relE = false;
        return;
      case 91:
        this.relXYZ = true;
        this.relE = true;
        return;
      case 92:
        if (w.has & HX) this.x = w.x;
        if (w.has & HY) this.y = w.y;
        if (w.has & HZ) this.z = w.z;
        if (w.has & HE) {
          this.e = w.e;
          if (inWindow && w.e === 0 && this.candidate === 0) this.warmupSeen = true;
        }
        return;
    }
  }

  private move(w: Words, n: number, inWindow: boolean): void {
    const x0 = this.x;
    const y0 = this.y;
    const z0 = this.z;
    let x1 = x0;
    let y1 = y0;
    let z1 = z0;
    if (w.has & HX) x1 = this.relXYZ ? x0 + w.x : w.x;
    if (w.has & HY) y1 = this.relXYZ ? y0 + w.y : w.y;
    if (w.has & HZ) z1 = this.relXYZ ? z0 + w.z : w.z;
    let de = 0;
    if (w.has & HE) {
      if (this.relE) {
        de = w.e;
        this.e += w.e;
      } else {
        de = w.e - this.e;
        this.e = w.e;
      }
    }
    this.x = x1;
    this.y = y1;
    this.z = z1;
    if (!(de > 0)) return;
    const xy = Math.hypot(x1 - x0, y1 - y0);
    const isArc = (w.code === 2 || w.code === 3) && (w.has & (HI | HJ)) !== 0;
    if (xy === 0 && !isArc) return;
    if (inWindow && this.candidate === 0 && this.warmupSeen && (xy >= MIN_SUBSTANTIAL_MM || isArc)) this.candidate = n;
    const seg = this.segments;
    if (!seg) return;
    if (this.decided && n < this.start) return;
    if (!isArc) {
      seg.add(x0, y0, z0, x1, y1, z1, n);
      return;
    }
    // Arc about (x0 + I, y0 + J), clockwise for G2.
    const cx = x0 + (w.has & HI ? w.i : 0);
    const cy = y0 + (w.has & HJ ? w.j : 0);
    const r = Math.hypot(x0 - cx, y0 - cy);
    const a0 = Math.atan2(y0 - cy, x0 - cx);
    let a1 = Math.atan2(y1 - cy, x1 - cx);
    if (w.code === 2) {
      if (a1 >= a0) a1 -= 2 * Math.PI;
    } else if (a1 <= a0) a1 += 2 * Math.PI;
    const sweep = a1 - a0;
    const steps = Math.max(1, Math.min(64, Math.ceil(Math.abs(sweep) / (Math.PI / 18))));
    let px = x0;
    let py = y0;
    let pz = z0;
    for (let s = 1; s <= steps; s++) {
      const t = s / steps;
      const a = a0 + sweep * t;
      const qx = s === steps ? x1 : cx + r * Math.cos(a);
      const qy = s === steps ? y1 : cy + r * Math.sin(a);
      const qz = z0 + (z1 - z0) * t;
      seg.add(px, py, pz, qx, qy, qz, n);
      px = qx;
      py = qy;
      pz = qz;
    }
  }

  /** After the last line (or after `line()` returned false). */
  finish(): GcodeAnalysis {
    if (!this.decided) this.decideFromMovement();
    const total = this.lineNo;
    const rendered = total >= this.start ? Math.min(this.opts.render_max_lines, total - this.start + 1) : 0;
    const out: GcodeAnalysis = {
      print_start_line: this.start,
      skipped_lines: this.start - 1,
      rendered_lines: rendered,
      total_lines_scanned: total,
      method: this.method,
    };
    if (this.method === 'marker' && this.marker) out.marker = this.marker;
    return out;
  }
}

/** Runs the optimisation rules over lines already in memory (for tests and small inputs). */
export function findPrintStart(lines: Iterable<string>, options: GcodeOptimizationOptions = {}): GcodeAnalysis {
  const scanner = new ToolpathScanner(options);
  for (const l of lines) if (!scanner.line(l)) break;
  return scanner.finish();
}
