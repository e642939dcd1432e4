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
 */
import { open } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { PreviewError } from './errors';
import { encodePng } from './png';
import { heightColor, Projector, Raster, resolveView, type ViewOptions } from './render';

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

// ---------------------------------------------------------------------------
// Line parsing

interface Words {
  letter: number; // 'G' | 'M' | 0
  code: number;
  x: number;
  y: number;
  z: number;
  e: number;
  i: number;
  j: number;
  has: number; // bit flags
}
const HX = 1;
const HY = 2;
const HZ = 4;
const HE = 8;
const HI = 16;
const HJ = 32;
const HR = 64;

/** Parses a G/M line's command and X Y Z E I J words into `w` (no allocation). */
function parseWords(line: string, w: Words): void {
  const n = line.length;
  let p = 0;
  w.letter = 0;
  w.has = 0;
  while (p < n && (line.charCodeAt(p) === 32 || line.charCodeAt(p) === 9)) p++;
  let c = line.charCodeAt(p) | 32;
  if (c === 110 /* n */) {
    p++;
    while (p < n && line.charCodeAt(p) >= 48 && line.charCodeAt(p) <= 57) p++;
    while (p < n && (line.charCodeAt(p) === 32 || line.charCodeAt(p) === 9)) p++;
    c = line.charCodeAt(p) | 32;
  }
  if (c !== 103 /* g */ && c !== 109 /* m */) return;
  p++;
  let code = 0;
  let digits = 0;
  while (p < n) {
    const d = line.charCodeAt(p) - 48;
    if (d < 0 || d > 9) break;
    code = code * 10 + d;
    digits++;
    p++;
  }
  if (digits === 0) return;
  // "M862.3" and the like: a sub-code; keep it out of the main code.
  if (p < n && line.charCodeAt(p) === 46) {
    code += 0.5;
    p++;
    while (p < n && line.charCodeAt(p) >= 48 && line.charCodeAt(p) <= 57) p++;
  }
  w.letter = c === 103 ? 71 : 77;
  w.code = code;
  if (w.letter !== 71) return;
  while (p < n) {
    const ch = line.charCodeAt(p);
    if (ch === 59 /* ; */) break;
    if (ch === 32 || ch === 9) {
      p++;
      continue;
    }
    const letter = ch | 32;
    p++;
    // number: [+-]digits[.digits][e[+-]digits]
    const start = p;
    let sign = 1;
    let cc = line.charCodeAt(p);
    if (cc === 45) {
      sign = -1;
      p++;
    } else if (cc === 43) p++;
    let val = 0;
    let any = false;
    while (p < n) {
      cc = line.charCodeAt(p) - 48;
      if (cc < 0 || cc > 9) break;
      val = val * 10 + cc;
      any = true;
      p++;
    }
    if (p < n && line.charCodeAt(p) === 46) {
      p++;
      let scale = 0.1;
      while (p < n) {
        cc = line.charCodeAt(p) - 48;
        if (cc < 0 || cc > 9) break;
        val += cc * scale;
        scale *= 0.1;
        any = true;
        p++;
      }
    }
    if (p < n && (line.charCodeAt(p) | 32) === 101 && any) {
      // exponent (rare): fall back to Number() for exactness
      let q = p + 1;
      if (line.charCodeAt(q) === 45 || line.charCodeAt(q) === 43) q++;
      while (q < n && line.charCodeAt(q) >= 48 && line.charCodeAt(q) <= 57) q++;
      val = Math.abs(Number(line.slice(start, q)));
      p = q;
    }
    while (p < n && line.charCodeAt(p) !== 32 && line.charCodeAt(p) !== 9 && line.charCodeAt(p) !== 59) p++; // junk after the number
    if (!any) continue;
    val *= sign;
    switch (letter) {
      case 120:
        w.x = val;
        w.has |= HX;
        break;
      case 121:
        w.y = val;
        w.has |= HY;
        break;
      case 122:
        w.z = val;
        w.has |= HZ;
        break;
      case 101:
        w.e = val;
        w.has |= HE;
        break;
      case 105:
        w.i = val;
        w.has |= HI;
        break;
      case 106:
        w.j = val;
        w.has |= HJ;
        break;
      case 114:
        w.has |= HR;
        break;
    }
  }
}

// ---------------------------------------------------------------------------
// Segment store (bounded)

/** Extrusion segments x0 y0 z0 x1 y1 z1 with their line numbers; halves itself when full. */
class SegmentStore {
  coords: Float32Array;
  lines: Int32Array;
  count = 0;
  compactions = 0;
  constructor(private readonly cap: number) {
    const initial = Math.min(cap, 4096);
    this.coords = new Float32Array(initial * 6);
    this.lines = new Int32Array(initial);
  }
  add(x0: number, y0: number, z0: number, x1: number, y1: number, z1: number, line: number): void {
    if (this.count === this.lines.length) {
      if (this.count >= this.cap) this.compact();
      else this.grow();
    }
    const o = this.count * 6;
    const c = this.coords;
    c[o] = x0;
    c[o + 1] = y0;
    c[o + 2] = z0;
    c[o + 3] = x1;
    c[o + 4] = y1;
    c[o + 5] = z1;
    this.lines[this.count++] = line;
  }
  private grow(): void {
    const size = Math.min(this.cap, this.lines.length * 2);
    const coords = new Float32Array(size * 6);
    coords.set(this.coords);
    const lines = new Int32Array(size);
    lines.set(this.lines);
    this.coords = coords;
    this.lines = lines;
  }
  /** Joins consecutive connected segments pairwise; drops every other one if that frees too little. */
  private compact(): void {
    this.compactions++;
    const c = this.coords;
    let out = 0;
    let i = 0;
    while (i < this.count) {
      const o = i * 6;
      if (i + 1 < this.count && c[o + 3] === c[o + 6] && c[o + 4] === c[o + 7] && c[o + 5] === c[o + 8]) {
        const d = out * 6;
        const x0 = c[o], y0 = c[o + 1], z0 = c[o + 2];
        c[d] = x0;
        c[d + 1] = y0;
        c[d + 2] = z0;
        c[d + 3] = c[o + 9];
        c[d + 4] = c[o + 10];
        c[d + 5] = c[o + 11];
        this.lines[out] = this.lines[i];
        i += 2;
      } else {
        c.copyWithin(out * 6, o, o + 6);
        this.lines[out] = this.lines[i];
        i += 1;
      }
      out++;
    }
    this.count = out;
    if (this.count > this.cap * 0.75) {
      let k = 0;
      for (let s = 0; s < this.count; s += 2, k++) {
        c.copyWithin(k * 6, s * 6, s * 6 + 6);
        this.lines[k] = this.lines[s];
      }
      this.count = k;
    }
  }
  /** Keeps the segments of lines in [from, to) (once the print start is known). */
  keepRange(from: number, to: number): void {
    let k = 0;
    for (let s = 0; s < this.count; s++) {
      if (this.lines[s] < from || this.lines[s] >= to) continue;
      if (k !== s) {
        this.coords.copyWithin(k * 6, s * 6, s * 6 + 6);
        this.lines[k] = this.lines[s];
      }
      k++;
    }
    this.count = k;
  }
}

// ---------------------------------------------------------------------------
// The scanner

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

// ---------------------------------------------------------------------------
// Streaming drivers

type Source = string | Buffer | Readable;

/** Splits latin1 text chunks into lines and feeds them; returns false once the consumer stops. */
class LineFeeder {
  private carry = '';
  stopped = false;
  constructor(
    private readonly onLine: (line: string) => boolean,
    private readonly maxLine = 1 << 20,
  ) {}
  feed(text: string): boolean {
    if (this.stopped) return false;
    let pos = 0;
    const n = text.length;
    while (pos < n) {
      const nl = text.indexOf('\n', pos);
      if (nl === -1) {
        if (this.carry.length + (n - pos) <= this.maxLine) this.carry += text.slice(pos);
        else this.carry = this.carry.slice(0, 0); // a runaway line: keep nothing of it
        return true;
      }
      let line = this.carry ? this.carry + text.slice(pos, nl) : text.slice(pos, nl);
      this.carry = '';
      if (line.charCodeAt(line.length - 1) === 13) line = line.slice(0, -1);
      pos = nl + 1;
      if (!this.onLine(line)) {
        this.stopped = true;
        return false;
      }
    }
    return true;
  }
  end(): void {
    if (!this.stopped && this.carry.length) {
      let line = this.carry;
      if (line.charCodeAt(line.length - 1) === 13) line = line.slice(0, -1);
      this.onLine(line);
    }
    this.carry = '';
  }
}

async function scanSource(source: Source, scanner: ToolpathScanner): Promise<void> {
  const feeder = new LineFeeder((l) => scanner.line(l));
  if (Buffer.isBuffer(source)) {
    const step = 1 << 20;
    for (let p = 0; p < source.length; p += step) {
      if (!feeder.feed(source.toString('latin1', p, Math.min(source.length, p + step)))) return;
    }
    feeder.end();
    return;
  }
  if (typeof source === 'string') {
    const handle = await open(source, 'r');
    try {
      const buf = Buffer.allocUnsafe(256 << 10);
      let pos = 0;
      for (;;) {
        const { bytesRead } = await handle.read(buf, 0, buf.length, pos);
        if (bytesRead === 0) break;
        pos += bytesRead;
        if (!feeder.feed(buf.toString('latin1', 0, bytesRead))) return;
      }
      feeder.end();
    } finally {
      await handle.close();
    }
    return;
  }
  try {
    for await (const chunk of source) {
      const text = typeof chunk === 'string' ? chunk : Buffer.isBuffer(chunk) ? chunk.toString('latin1') : Buffer.from(chunk as Uint8Array).toString('latin1');
      if (!feeder.feed(text)) {
        source.destroy();
        return;
      }
    }
    feeder.end();
  } catch (err) {
    if (feeder.stopped) return;
    throw err;
  }
}

/** Applies the optimisation rules to a G-code file, Buffer or Readable (streamed; stops after the render range). */
export async function analyzeGcode(source: Source, options: GcodeOptimizationOptions = {}): Promise<GcodeAnalysis> {
  const scanner = new ToolpathScanner(options);
  await scanSource(source, scanner);
  return scanner.finish();
}

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
