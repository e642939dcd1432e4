/** The bounded store of extrusion segments the toolpath scanner collects for rendering. */

/** Extrusion segments x0 y0 z0 x1 y1 z1 with their line numbers; halves itself when full. */
export class SegmentStore {
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
