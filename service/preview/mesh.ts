/**
 * STL (binary and ASCII) and OBJ parsing into a flat triangle list, with
 * limits: absurd inputs (too many triangles, non-finite coordinates, broken
 * structure) are refused with a PreviewError instead of exhausting memory.
 */
import { open, stat } from 'node:fs/promises';
import { PreviewError } from './errors';

export interface Mesh {
  /** 9 floats per triangle: ax ay az bx by bz cx cy cz. */
  positions: Float32Array;
  triangleCount: number;
  min: [number, number, number];
  max: [number, number, number];
  format: 'stl-binary' | 'stl-ascii' | 'obj';
}

export interface MeshLimits {
  /** Default 5 000 000. */
  maxTriangles?: number;
  /** OBJ vertices at most (default 3 x maxTriangles). */
  maxVertices?: number;
}

export const MESH_MAX_TRIANGLES = 5_000_000;
/** Largest STL/OBJ file loaded for rendering (512 MiB). */
export const MESH_MAX_FILE_BYTES = 512 * 1024 * 1024;

/** The bytes of a mesh file (or the buffer itself), refusing one over MESH_MAX_FILE_BYTES. */
export async function loadMeshFile(input: string | Buffer): Promise<Buffer> {
  if (Buffer.isBuffer(input)) {
    if (input.length > MESH_MAX_FILE_BYTES) throw new PreviewError('TOO_LARGE', `mesh of ${input.length} bytes (limit ${MESH_MAX_FILE_BYTES})`);
    return input;
  }
  const { size } = await stat(input);
  if (size > MESH_MAX_FILE_BYTES) throw new PreviewError('TOO_LARGE', `mesh file of ${size} bytes (limit ${MESH_MAX_FILE_BYTES})`);
  const handle = await open(input, 'r');
  try {
    const buf = Buffer.alloc(size);
    let got = 0;
    while (got < size) {
      const { bytesRead } = await handle.read(buf, got, size - got, got);
      if (bytesRead === 0) break;
      got += bytesRead;
    }
    return buf.subarray(0, got);
  } finally {
    await handle.close();
  }
}

const limitsOf = (l: MeshLimits = {}) => {
  const maxTriangles = l.maxTriangles ?? MESH_MAX_TRIANGLES;
  return { maxTriangles, maxVertices: l.maxVertices ?? maxTriangles * 3 };
};

/** Grows a Float32Array as values arrive, refusing beyond `max` values. */
class FloatList {
  data: Float32Array;
  length = 0;
  constructor(
    initial: number,
    private readonly max: number,
    private readonly what: string,
    private readonly unit: number,
  ) {
    this.data = new Float32Array(Math.max(16, Math.min(initial, max)));
  }
  push3(a: number, b: number, c: number): void {
    if (this.length + 3 > this.data.length) {
      if (this.length + 3 > this.max) throw new PreviewError('TOO_LARGE', `${this.what} exceed the limit of ${Math.floor(this.max / this.unit)}`);
      const next = new Float32Array(Math.min(this.max, Math.max(this.data.length * 2, this.length + 3)));
      next.set(this.data.subarray(0, this.length));
      this.data = next;
    }
    this.data[this.length++] = a;
    this.data[this.length++] = b;
    this.data[this.length++] = c;
  }
  trimmed(): Float32Array {
    return this.length === this.data.length ? this.data : this.data.slice(0, this.length);
  }
}

function finish(positions: Float32Array, format: Mesh['format']): Mesh {
  const triangleCount = positions.length / 9;
  if (triangleCount === 0) throw new PreviewError('MALFORMED', `${format} mesh has no triangles`);
  const min: [number, number, number] = [Infinity, Infinity, Infinity];
  const max: [number, number, number] = [-Infinity, -Infinity, -Infinity];
  for (let i = 0; i < positions.length; i += 3) {
    for (let k = 0; k < 3; k++) {
      const v = positions[i + k];
      if (!Number.isFinite(v)) throw new PreviewError('MALFORMED', `${format} mesh has a non-finite coordinate (${v}) in triangle ${Math.floor(i / 9)}`);
      if (v < min[k]) min[k] = v;
      if (v > max[k]) max[k] = v;
    }
  }
  return { positions, triangleCount, min, max, format };
}

// ---------------------------------------------------------------------------
// STL

/**
 * Binary when the size matches 84 + 50 x count, even if the 80-byte header
 * starts with "solid" (many exporters write that); ASCII when the text starts
 * with "solid" and has facets; binary again when the count fits in the data.
 */
export function isBinaryStl(buf: Uint8Array): boolean {
  if (buf.length >= 84) {
    const count = new DataView(buf.buffer, buf.byteOffset, buf.byteLength).getUint32(80, true);
    if (84 + count * 50 === buf.length) return true;
  }
  if (looksLikeAsciiStl(buf)) return false;
  return buf.length >= 84;
}

function looksLikeAsciiStl(buf: Uint8Array): boolean {
  let i = 0;
  while (i < buf.length && (buf[i] === 32 || buf[i] === 9 || buf[i] === 10 || buf[i] === 13)) i++;
  const head = Buffer.from(buf.buffer, buf.byteOffset + i, Math.min(buf.length - i, 1024)).toString('latin1');
  if (!/^solid\b/i.test(head)) return false;
  // A binary file whose header says "solid" has no text structure after it.
  return /\b(facet|endsolid)\b/i.test(head) || buf.length - i < 84;
}

export function parseStl(buf: Uint8Array, limits?: MeshLimits): Mesh {
  return isBinaryStl(buf) ? parseBinaryStl(buf, limits) : parseAsciiStl(buf, limits);
}

export function parseBinaryStl(buf: Uint8Array, limits?: MeshLimits): Mesh {
  const { maxTriangles } = limitsOf(limits);
  if (buf.length < 84) throw new PreviewError('TRUNCATED', `binary STL of ${buf.length} bytes is shorter than its 84-byte header`);
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const count = view.getUint32(80, true);
  if (count > maxTriangles) throw new PreviewError('TOO_LARGE', `binary STL declares ${count} triangles (limit ${maxTriangles})`);
  if (84 + count * 50 > buf.length) {
    throw new PreviewError('TRUNCATED', `binary STL declares ${count} triangles (${84 + count * 50} bytes) but has ${buf.length} bytes`);
  }
  const positions = new Float32Array(count * 9);
  for (let t = 0; t < count; t++) {
    const off = 84 + t * 50 + 12; // skip the facet normal: it is recomputed
    for (let k = 0; k < 9; k++) positions[t * 9 + k] = view.getFloat32(off + k * 4, true);
  }
  return finish(positions, 'stl-binary');
}

const isSpace = (c: number) => c === 32 || c === 9 || c === 10 || c === 13 || c === 12 || c === 11;

export function parseAsciiStl(buf: Uint8Array, limits?: MeshLimits): Mesh {
  const { maxTriangles } = limitsOf(limits);
  const b = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  const list = new FloatList(Math.min(b.length / 20, 3 << 20), maxTriangles * 9, 'ASCII STL triangles', 9);
  let pos = 0;
  const n = b.length;
  const nextToken = (): [number, number] | null => {
    while (pos < n && isSpace(b[pos])) pos++;
    if (pos >= n) return null;
    const start = pos;
    while (pos < n && !isSpace(b[pos])) pos++;
    return [start, pos];
  };
  const isVertex = (s: number, e: number) =>
    e - s === 6 && (b[s] | 32) === 118 && (b[s + 1] | 32) === 101 && (b[s + 2] | 32) === 114 && (b[s + 3] | 32) === 116 && (b[s + 4] | 32) === 101 && (b[s + 5] | 32) === 120;
  let vertices = 0;
  for (let tok = nextToken(); tok; tok = nextToken()) {
    if (!isVertex(tok[0], tok[1])) continue;
    const xyz: number[] = [];
    for (let k = 0; k < 3; k++) {
      const t = nextToken();
      if (!t) throw new PreviewError('TRUNCATED', `ASCII STL ends inside vertex ${vertices + 1}`);
      const v = Number(b.toString('latin1', t[0], t[1]));
      if (!Number.isFinite(v)) throw new PreviewError('MALFORMED', `ASCII STL vertex ${vertices + 1} has a non-numeric coordinate "${b.toString('latin1', t[0], Math.min(t[1], t[0] + 32))}"`);
      xyz.push(v);
    }
    list.push3(xyz[0], xyz[1], xyz[2]);
    vertices++;
  }
  if (vertices % 3 !== 0) throw new PreviewError('MALFORMED', `ASCII STL has ${vertices} vertices, not a multiple of 3`);
  return finish(list.trimmed(), 'stl-ascii');
}

// ---------------------------------------------------------------------------
// OBJ

/** `v x y z`, `f a b c ...` with `a`, `a/t`, `a//n`, `a/t/n` and negative (relative) indices; polygons are fan-triangulated. */
export function parseObj(buf: Uint8Array, limits?: MeshLimits): Mesh {
  const { maxTriangles, maxVertices } = limitsOf(limits);
  const b = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  const verts = new FloatList(1 << 12, maxVertices * 3, 'OBJ vertices', 3);
  const tris = new FloatList(1 << 12, maxTriangles * 9, 'OBJ triangles', 9);
  const n = b.length;
  let pos = 0;
  let lineNo = 0;
  const face: number[] = [];
  while (pos < n) {
    let end = b.indexOf(10, pos);
    if (end === -1) end = n;
    lineNo++;
    // Skip leading whitespace; only "v " and "f " lines matter.
    let s = pos;
    while (s < end && (b[s] === 32 || b[s] === 9)) s++;
    const c0 = b[s];
    const c1 = b[s + 1];
    if (s + 1 < end && (c1 === 32 || c1 === 9) && (c0 === 118 /* v */ || c0 === 102 /* f */)) {
      const fields = b.toString('latin1', s + 2, end).trim().split(/\s+/);
      if (c0 === 118) {
        if (fields.length < 3) throw new PreviewError('MALFORMED', `OBJ line ${lineNo}: a vertex needs 3 coordinates`);
        const x = Number(fields[0]);
        const y = Number(fields[1]);
        const z = Number(fields[2]);
        if (!Number.isFinite(x) || !Number.isFinite(y) || !Number.isFinite(z)) throw new PreviewError('MALFORMED', `OBJ line ${lineNo}: non-numeric vertex`);
        verts.push3(x, y, z);
      } else {
        const count = verts.length / 3;
        face.length = 0;
        for (const f of fields) {
          if (!f) continue;
          const slash = f.indexOf('/');
          const idx = Number(slash === -1 ? f : f.slice(0, slash));
          if (!Number.isInteger(idx) || idx === 0) throw new PreviewError('MALFORMED', `OBJ line ${lineNo}: bad vertex index "${f.slice(0, 32)}"`);
          const abs = idx > 0 ? idx - 1 : count + idx;
          if (abs < 0 || abs >= count) throw new PreviewError('MALFORMED', `OBJ line ${lineNo}: vertex index ${idx} out of range (${count} vertices so far)`);
          face.push(abs);
        }
        if (face.length < 3) throw new PreviewError('MALFORMED', `OBJ line ${lineNo}: a face needs at least 3 vertices`);
        const v = verts.data;
        for (let k = 1; k + 1 < face.length; k++) {
          const a = face[0] * 3;
          const p = face[k] * 3;
          const q = face[k + 1] * 3;
          tris.push3(v[a], v[a + 1], v[a + 2]);
          tris.push3(v[p], v[p + 1], v[p + 2]);
          tris.push3(v[q], v[q + 1], v[q + 2]);
        }
      }
    }
    pos = end + 1;
  }
  return finish(tris.trimmed(), 'obj');
}

export function parseMesh(buf: Uint8Array, type: 'stl' | 'obj', limits?: MeshLimits): Mesh {
  return type === 'obj' ? parseObj(buf, limits) : parseStl(buf, limits);
}
