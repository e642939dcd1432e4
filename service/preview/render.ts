/**
 * Software rendering without a GPU: an orthographic, isometric-ish camera
 * fitted to the model's bounds, a z-buffer, flat Lambert shading and a
 * transparent background, supersampled and box-filtered down. Also the line
 * rasteriser used by the G-code toolpath preview.
 */
import { PreviewError } from './errors';
import type { Mesh } from './mesh';
import { encodePng, MAX_IMAGE_SIDE } from './png';
import type { RgbaImage } from './qoi';

export interface ViewOptions {
  /** Output size in pixels (default 512 x 512). */
  width?: number;
  height?: number;
  /** Rotation of the model about its vertical (Z) axis, degrees (default 45). */
  azimuth?: number;
  /** Camera height above the horizon, degrees (default 30; 90 looks straight down). */
  elevation?: number;
  /** Supersampling factor 1..4 (default 2). */
  supersample?: number;
  /** Empty border as a fraction of the size (default 0.06). */
  margin?: number;
}

export interface MeshRenderOptions extends ViewOptions {
  /** Base colour, RGB 0..255 (default a mid blue). */
  color?: [number, number, number];
  /**
   * Most pixels the triangles' boxes may cover in total, as a multiple of the
   * (supersampled) picture (default 64). Real models stay in single digits; a
   * file of 20,000 full-frame triangles would otherwise cost minutes.
   */
  maxCoverage?: number;
}

export const DEFAULT_MAX_COVERAGE = 64;

export const DEFAULT_RENDER_SIZE = 512;

export interface ResolvedView {
  width: number;
  height: number;
  ss: number;
  margin: number;
  cosA: number;
  sinA: number;
  cosE: number;
  sinE: number;
}

export function resolveView(o: ViewOptions): ResolvedView {
  const width = o.width ?? DEFAULT_RENDER_SIZE;
  const height = o.height ?? width;
  for (const [name, v] of [['width', width], ['height', height]] as const) {
    if (!Number.isInteger(v) || v < 1 || v > MAX_IMAGE_SIDE) throw new PreviewError('TOO_LARGE', `render ${name} ${v} outside 1..${MAX_IMAGE_SIDE}`);
  }
  let ss = Math.round(o.supersample ?? 2);
  ss = Math.max(1, Math.min(4, ss));
  // Keep the supersampled buffer reasonable for big outputs.
  while (ss > 1 && width * height * ss * ss > 16_777_216) ss--;
  const a = ((o.azimuth ?? 45) * Math.PI) / 180;
  const e = ((o.elevation ?? 30) * Math.PI) / 180;
  const margin = Math.max(0, Math.min(0.45, o.margin ?? 0.06));
  return { width, height, ss, margin, cosA: Math.cos(a), sinA: Math.sin(a), cosE: Math.cos(e), sinE: Math.sin(e) };
}

/**
 * World (Z up) to view: x right, y up, depth toward the camera (larger is
 * nearer). The camera looks from the front (-Y after the azimuth turn) and above.
 */
export class Projector {
  private scale = 1;
  private offX = 0;
  private offY = 0;
  private cx = 0;
  private cy = 0;
  private cz = 0;
  readonly pxWidth: number;
  readonly pxHeight: number;

  constructor(readonly view: ResolvedView) {
    this.pxWidth = view.width * view.ss;
    this.pxHeight = view.height * view.ss;
  }

  /** Fits the camera to an axis-aligned box (its 8 corners). */
  fitBox(min: readonly number[], max: readonly number[]): void {
    this.cx = (min[0] + max[0]) / 2;
    this.cy = (min[1] + max[1]) / 2;
    this.cz = (min[2] + max[2]) / 2;
    let sxMin = Infinity;
    let sxMax = -Infinity;
    let syMin = Infinity;
    let syMax = -Infinity;
    for (let i = 0; i < 8; i++) {
      const x = i & 1 ? max[0] : min[0];
      const y = i & 2 ? max[1] : min[1];
      const z = i & 4 ? max[2] : min[2];
      const [sx, sy] = this.viewXY(x, y, z);
      sxMin = Math.min(sxMin, sx);
      sxMax = Math.max(sxMax, sx);
      syMin = Math.min(syMin, sy);
      syMax = Math.max(syMax, sy);
    }
    this.fitScreenBounds(sxMin, sxMax, syMin, syMax);
  }

  /** Fits the camera to view-space bounds already measured (tighter than the box). */
  fitScreenBounds(sxMin: number, sxMax: number, syMin: number, syMax: number): void {
    const usableW = this.pxWidth * (1 - 2 * this.view.margin);
    const usableH = this.pxHeight * (1 - 2 * this.view.margin);
    const spanX = sxMax - sxMin;
    const spanY = syMax - syMin;
    const sx = spanX > 1e-12 ? usableW / spanX : Infinity;
    const sy = spanY > 1e-12 ? usableH / spanY : Infinity;
    this.scale = Math.min(sx, sy);
    if (!Number.isFinite(this.scale)) this.scale = 1;
    this.offX = this.pxWidth / 2 - ((sxMin + sxMax) / 2) * this.scale;
    this.offY = this.pxHeight / 2 + ((syMin + syMax) / 2) * this.scale;
  }

  setCentre(cx: number, cy: number, cz: number): void {
    this.cx = cx;
    this.cy = cy;
    this.cz = cz;
  }

  /** View-plane coordinates (model units, before fitting) of a world point. */
  viewXY(x: number, y: number, z: number): [number, number] {
    const v = this.view;
    const qx = x - this.cx;
    const qy = y - this.cy;
    const qz = z - this.cz;
    const x1 = qx * v.cosA - qy * v.sinA;
    const y1 = qx * v.sinA + qy * v.cosA;
    return [x1, y1 * v.sinE + qz * v.cosE];
  }

  /** Writes pixel x, pixel y (down) and depth of a world point into out[o..o+2]. */
  project(x: number, y: number, z: number, out: Float64Array, o: number): void {
    const v = this.view;
    const qx = x - this.cx;
    const qy = y - this.cy;
    const qz = z - this.cz;
    const x1 = qx * v.cosA - qy * v.sinA;
    const y1 = qx * v.sinA + qy * v.cosA;
    out[o] = this.offX + x1 * this.scale;
    out[o + 1] = this.offY - (y1 * v.sinE + qz * v.cosE) * this.scale;
    out[o + 2] = -y1 * v.cosE + qz * v.sinE;
  }

  /** Rotates a direction into view space (x right, y up, z toward the camera). */
  rotate(x: number, y: number, z: number): [number, number, number] {
    const v = this.view;
    const x1 = x * v.cosA - y * v.sinA;
    const y1 = x * v.sinA + y * v.cosA;
    return [x1, y1 * v.sinE + z * v.cosE, -y1 * v.cosE + z * v.sinE];
  }
}

/** RGBA + depth buffers at the supersampled size. */
export class Raster {
  readonly rgba: Uint8Array;
  readonly depth: Float32Array;
  /** Pixels visited by triangle() so far (their clipped bounding boxes). */
  visited = 0;
  constructor(
    readonly width: number,
    readonly height: number,
    /** Pixels triangle() may visit in total before it refuses (TOO_LARGE). */
    private readonly pixelBudget = Infinity,
  ) {
    this.rgba = new Uint8Array(width * height * 4);
    this.depth = new Float32Array(width * height).fill(-Infinity);
  }

  /** Fills a triangle given in pixel coordinates with depth, flat colour. */
  triangle(p: Float64Array, r: number, g: number, b: number): void {
    const x0 = p[0];
    const y0 = p[1];
    const d0 = p[2];
    const x1 = p[3];
    const y1 = p[4];
    const d1 = p[5];
    const x2 = p[6];
    const y2 = p[7];
    const d2 = p[8];
    const area = (x1 - x0) * (y2 - y0) - (x2 - x0) * (y1 - y0);
    if (!(Math.abs(area) > 1e-9)) return;
    const minX = Math.max(0, Math.floor(Math.min(x0, x1, x2)));
    const maxX = Math.min(this.width - 1, Math.ceil(Math.max(x0, x1, x2)));
    const minY = Math.max(0, Math.floor(Math.min(y0, y1, y2)));
    const maxY = Math.min(this.height - 1, Math.ceil(Math.max(y0, y1, y2)));
    if (minX > maxX || minY > maxY) return;
    this.visited += (maxX - minX + 1) * (maxY - minY + 1);
    if (this.visited > this.pixelBudget) {
      throw new PreviewError('TOO_LARGE', `the mesh covers more than ${Math.round(this.pixelBudget / (this.width * this.height))} times the picture (a render bomb?)`);
    }
    const inv = 1 / area;
    const W = this.width;
    const rgba = this.rgba;
    const depth = this.depth;
    for (let y = minY; y <= maxY; y++) {
      const py = y + 0.5;
      for (let x = minX; x <= maxX; x++) {
        const px = x + 0.5;
        const w0 = ((x1 - px) * (y2 - py) - (x2 - px) * (y1 - py)) * inv;
        if (w0 < 0) continue;
        const w1 = ((x2 - px) * (y0 - py) - (x0 - px) * (y2 - py)) * inv;
        if (w1 < 0) continue;
        const w2 = 1 - w0 - w1;
        if (w2 < 0) continue;
        const d = w0 * d0 + w1 * d1 + w2 * d2;
        const i = y * W + x;
        if (d <= depth[i]) continue;
        depth[i] = d;
        const o = i * 4;
        rgba[o] = r;
        rgba[o + 1] = g;
        rgba[o + 2] = b;
        rgba[o + 3] = 255;
      }
    }
  }

  /** A line in pixel coordinates with depth, `thickness` pixels wide (square brush). */
  line(x0: number, y0: number, d0: number, x1: number, y1: number, d1: number, r: number, g: number, b: number, thickness = 1): void {
    const dx = x1 - x0;
    const dy = y1 - y0;
    const steps = Math.max(1, Math.ceil(Math.max(Math.abs(dx), Math.abs(dy))));
    if (steps > 1 << 16) return; // a runaway coordinate; nothing sensible to draw
    const half = (thickness - 1) / 2;
    const W = this.width;
    const H = this.height;
    // Only the samples whose brush can touch the picture: a line far outside it costs nothing per step.
    const [from, to] = visibleSteps(x0, dx, W, thickness, steps, visibleSteps(y0, dy, H, thickness, steps, [0, steps]));
    for (let s = from; s <= to; s++) {
      const t = s / steps;
      const cx = Math.round(x0 + dx * t - half);
      const cy = Math.round(y0 + dy * t - half);
      const d = d0 + (d1 - d0) * t;
      for (let oy = 0; oy < thickness; oy++) {
        const y = cy + oy;
        if (y < 0 || y >= H) continue;
        for (let ox = 0; ox < thickness; ox++) {
          const x = cx + ox;
          if (x < 0 || x >= W) continue;
          const i = y * W + x;
          if (d < this.depth[i]) continue;
          this.depth[i] = d;
          const o = i * 4;
          this.rgba[o] = r;
          this.rgba[o + 1] = g;
          this.rgba[o + 2] = b;
          this.rgba[o + 3] = 255;
        }
      }
    }
  }

  /** Box-filters down by `factor` (alpha-weighted, so edges blend into transparency). */
  downsample(factor: number): RgbaImage {
    const w = Math.floor(this.width / factor);
    const h = Math.floor(this.height / factor);
    if (factor === 1) return { width: w, height: h, data: Buffer.from(this.rgba.buffer, this.rgba.byteOffset, this.rgba.byteLength) };
    const out = Buffer.alloc(w * h * 4);
    const n = factor * factor;
    for (let y = 0; y < h; y++) {
      for (let x = 0; x < w; x++) {
        let r = 0;
        let g = 0;
        let b = 0;
        let a = 0;
        for (let sy = 0; sy < factor; sy++) {
          let i = ((y * factor + sy) * this.width + x * factor) * 4;
          for (let sx = 0; sx < factor; sx++, i += 4) {
            const al = this.rgba[i + 3];
            r += this.rgba[i] * al;
            g += this.rgba[i + 1] * al;
            b += this.rgba[i + 2] * al;
            a += al;
          }
        }
        const o = (y * w + x) * 4;
        if (a > 0) {
          out[o] = Math.round(r / a);
          out[o + 1] = Math.round(g / a);
          out[o + 2] = Math.round(b / a);
          out[o + 3] = Math.round(a / n);
        }
      }
    }
    return { width: w, height: h, data: out };
  }
}

/** Renders a mesh to RGBA: shaded, z-buffered, transparent background. */
export function renderMesh(mesh: Mesh, options: MeshRenderOptions = {}): RgbaImage {
  const view = resolveView(options);
  const proj = new Projector(view);
  const pos = mesh.positions;
  proj.setCentre((mesh.min[0] + mesh.max[0]) / 2, (mesh.min[1] + mesh.max[1]) / 2, (mesh.min[2] + mesh.max[2]) / 2);
  // Fit to the projected vertices (tighter than the bounding box).
  let sxMin = Infinity;
  let sxMax = -Infinity;
  let syMin = Infinity;
  let syMax = -Infinity;
  for (let i = 0; i < pos.length; i += 3) {
    const [sx, sy] = proj.viewXY(pos[i], pos[i + 1], pos[i + 2]);
    if (sx < sxMin) sxMin = sx;
    if (sx > sxMax) sxMax = sx;
    if (sy < syMin) syMin = sy;
    if (sy > syMax) syMax = sy;
  }
  proj.fitScreenBounds(sxMin, sxMax, syMin, syMax);

  const raster = new Raster(proj.pxWidth, proj.pxHeight, proj.pxWidth * proj.pxHeight * (options.maxCoverage ?? DEFAULT_MAX_COVERAGE));
  const [br, bg, bb] = options.color ?? [70, 140, 215];
  // Light from the upper left, slightly toward the viewer (view space).
  const L = normalize(-0.45, 0.6, 0.65);
  const tri = new Float64Array(9);
  for (let t = 0; t < mesh.triangleCount; t++) {
    const o = t * 9;
    const ax = pos[o];
    const ay = pos[o + 1];
    const az = pos[o + 2];
    const ux = pos[o + 3] - ax;
    const uy = pos[o + 4] - ay;
    const uz = pos[o + 5] - az;
    const vx = pos[o + 6] - ax;
    const vy = pos[o + 7] - ay;
    const vz = pos[o + 8] - az;
    let nx = uy * vz - uz * vy;
    let ny = uz * vx - ux * vz;
    let nz = ux * vy - uy * vx;
    const len = Math.hypot(nx, ny, nz);
    if (!(len > 0)) continue;
    nx /= len;
    ny /= len;
    nz /= len;
    const [vnx, vny, vnz] = proj.rotate(nx, ny, nz);
    // Two-sided: meshes with flipped winding still shade.
    const lambert = Math.abs(vnx * L[0] + vny * L[1] + vnz * L[2]);
    const shade = 0.35 + 0.65 * lambert;
    proj.project(ax, ay, az, tri, 0);
    proj.project(pos[o + 3], pos[o + 4], pos[o + 5], tri, 3);
    proj.project(pos[o + 6], pos[o + 7], pos[o + 8], tri, 6);
    raster.triangle(tri, Math.min(255, Math.round(br * shade)), Math.min(255, Math.round(bg * shade)), Math.min(255, Math.round(bb * shade)));
  }
  return raster.downsample(view.ss);
}

export function renderMeshPng(mesh: Mesh, options: MeshRenderOptions = {}): Buffer {
  const img = renderMesh(mesh, options);
  return encodePng(img.data, img.width, img.height);
}

/** The steps s in [range] whose sample start + delta * s / steps (brush `size` wide) can fall inside 0..limit. */
function visibleSteps(start: number, delta: number, limit: number, size: number, steps: number, range: [number, number]): [number, number] {
  const lo = -size - 1;
  const hi = limit + size + 1;
  if (delta === 0) return start < lo || start > hi ? [1, 0] : range;
  const a = ((lo - start) / delta) * steps;
  const b = ((hi - start) / delta) * steps;
  return [Math.max(range[0], Math.floor(Math.min(a, b))), Math.min(range[1], Math.ceil(Math.max(a, b)))];
}

function normalize(x: number, y: number, z: number): [number, number, number] {
  const l = Math.hypot(x, y, z);
  return [x / l, y / l, z / l];
}

/** Height colour ramp: blue (low) through green and yellow to red (high); t in 0..1. */
export function heightColor(t: number): [number, number, number] {
  const h = (1 - Math.max(0, Math.min(1, t))) * 240;
  const s = 0.75;
  const l = 0.5;
  const f = (n: number) => {
    const k = (n + h / 30) % 12;
    return Math.round((l - s * Math.min(l, 1 - l) * Math.max(-1, Math.min(k - 3, 9 - k, 1))) * 255);
  };
  return [f(0), f(8), f(4)];
}
