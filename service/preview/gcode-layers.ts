/**
 * Layer counting for the G-code metadata reader: when no header states the layer count, the
 * middle of the file is searched (natively, chunk by chunk) for the slicer's layer-change
 * marker at a line start. Markers seen in the head are counted line by line as it is parsed.
 */
import type { GcodeFlavor } from './gcode-meta-types';

/** Layer-change markers by slicer, as whole lines (or line prefixes for Cura). */
export const LAYER_MARKERS = {
  prusa: ';LAYER_CHANGE',
  bambu: '; CHANGE_LAYER',
  cura: ';LAYER:',
} as const;
export type MarkerKind = keyof typeof LAYER_MARKERS;

export class LayerMarkerCounter {
  private readonly headMarkers: Record<MarkerKind, number> = { prusa: 0, bambu: 0, cura: 0 };
  private middlePatterns: { kind: MarkerKind; bytes: Buffer; wholeLine: boolean; pending: boolean }[] = [];
  private middleCounts: Record<MarkerKind, number> = { prusa: 0, bambu: 0, cura: 0 };
  /** The last bytes of the middle so far (a marker can straddle two chunks) and the byte before them. */
  private middleEdge: Buffer = Buffer.alloc(0);
  private middleEdgePrev = 10;

  /** True once {@link plan} chose markers to search the middle for. */
  get active(): boolean {
    return this.middlePatterns.length > 0;
  }

  /** A comment line of the head (CR already stripped). */
  headLine(line: string): void {
    if (line === LAYER_MARKERS.prusa) this.headMarkers.prusa++;
    else if (line === LAYER_MARKERS.bambu) this.headMarkers.bambu++;
    else if (line.startsWith(LAYER_MARKERS.cura)) this.headMarkers.cura++;
  }

  /** At the end of the head: which markers to search for (those seen in the head, else by flavor). */
  plan(flavor: GcodeFlavor): void {
    const seen = (Object.keys(this.headMarkers) as MarkerKind[]).filter((k) => this.headMarkers[k] > 0);
    let kinds: MarkerKind[];
    if (seen.length) kinds = [seen.reduce((a, b) => (this.headMarkers[a] >= this.headMarkers[b] ? a : b))];
    else {
      kinds = flavor === 'cura' ? ['cura'] : flavor === 'bambustudio' ? ['bambu'] : flavor === 'unknown' ? ['prusa', 'cura'] : ['prusa'];
    }
    this.middlePatterns = kinds.map((kind) => ({ kind, bytes: Buffer.from(LAYER_MARKERS[kind], 'latin1'), wholeLine: kind !== 'cura', pending: false }));
  }

  /** Middle bytes, in order. */
  count(chunk: Buffer): void {
    if (this.middlePatterns.length === 0 || chunk.length === 0) return;
    const edge = this.middleEdge;
    for (const pat of this.middlePatterns) {
      const { kind, bytes, wholeLine } = pat;
      let n = 0;
      // A whole-line marker that ended exactly at the previous chunk's end.
      if (pat.pending) {
        pat.pending = false;
        if (chunk[0] === 10 || chunk[0] === 13) n++;
      }
      // `end` is the index in `chunk` just after a match; the match counts if it ends its line.
      const ends = (end: number): void => {
        if (!wholeLine) n++;
        else if (end >= chunk.length) pat.pending = true;
        else if (chunk[end] === 10 || chunk[end] === 13) n++;
      };
      // Markers that start in the previous chunk's last bytes and end in this one.
      if (edge.length) {
        const joined = Buffer.concat([edge, chunk.subarray(0, bytes.length - 1)]);
        for (let i = joined.indexOf(bytes); i !== -1 && i < edge.length; i = joined.indexOf(bytes, i + 1)) {
          const prev = i === 0 ? this.middleEdgePrev : joined[i - 1];
          if (i + bytes.length > edge.length && prev === 10) ends(i + bytes.length - edge.length);
        }
      }
      // Markers inside the chunk, at a line start.
      for (let i = chunk.indexOf(bytes); i !== -1; i = chunk.indexOf(bytes, i + bytes.length)) {
        const prev = i === 0 ? (edge.length ? edge[edge.length - 1] : this.middleEdgePrev) : chunk[i - 1];
        if (prev === 10) ends(i + bytes.length);
      }
      this.middleCounts[kind] += n;
    }
    const keep = Math.max(...this.middlePatterns.map((p) => p.bytes.length)) - 1;
    if (chunk.length > keep) {
      this.middleEdge = Buffer.from(chunk.subarray(chunk.length - keep));
      this.middleEdgePrev = chunk[chunk.length - keep - 1];
    } else {
      const all = Buffer.concat([edge, chunk]);
      const cut = Math.max(0, all.length - keep);
      if (cut > 0) this.middleEdgePrev = all[cut - 1];
      this.middleEdge = Buffer.from(all.subarray(cut));
    }
  }

  /** The layer count found (the most frequent marker kind, head and middle), or null; call once at the end. */
  finish(): number | null {
    for (const pat of this.middlePatterns) {
      // A whole-line marker at the very end of the file.
      if (pat.pending) this.middleCounts[pat.kind]++;
      pat.pending = false;
    }
    if (this.middlePatterns.length === 0) return null;
    let best = 0;
    for (const kind of Object.keys(LAYER_MARKERS) as MarkerKind[]) {
      best = Math.max(best, this.headMarkers[kind] + this.middleCounts[kind]);
    }
    return best > 0 ? best : null;
  }
}
