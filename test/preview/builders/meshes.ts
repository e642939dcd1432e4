/** Meshes made in memory for the renderer tests: binary and ASCII STL of boxes. */

export function binaryStl(triangles: number[][], header = 'binary STL'): Buffer {
  const buf = Buffer.alloc(84 + triangles.length * 50);
  buf.write(header, 0, 'latin1');
  buf.writeUInt32LE(triangles.length, 80);
  triangles.forEach((t, i) => {
    let off = 84 + i * 50 + 12;
    for (const c of t) off = buf.writeFloatLE(c, off);
  });
  return buf;
}

/** The 12 triangles of an axis-aligned box. */
export function boxTriangles(sx = 20, sy = 20, sz = 20, ox = 0, oy = 0, oz = 0): number[][] {
  const v = (x: number, y: number, z: number) => [ox + x * sx, oy + y * sy, oz + z * sz];
  const quads = [
    [v(0, 0, 0), v(0, 1, 0), v(1, 1, 0), v(1, 0, 0)],
    [v(0, 0, 1), v(1, 0, 1), v(1, 1, 1), v(0, 1, 1)],
    [v(0, 0, 0), v(1, 0, 0), v(1, 0, 1), v(0, 0, 1)],
    [v(0, 1, 0), v(0, 1, 1), v(1, 1, 1), v(1, 1, 0)],
    [v(0, 0, 0), v(0, 0, 1), v(0, 1, 1), v(0, 1, 0)],
    [v(1, 0, 0), v(1, 1, 0), v(1, 1, 1), v(1, 0, 1)],
  ];
  return quads.flatMap(([a, b, c, d]) => [
    [...a, ...b, ...c],
    [...a, ...c, ...d],
  ]);
}

export function asciiStl(triangles: number[][], name = 'box'): string {
  const lines = [`solid ${name}`];
  for (const t of triangles) {
    lines.push('  facet normal 0 0 0', '    outer loop');
    for (let k = 0; k < 9; k += 3) lines.push(`      vertex ${t[k]} ${t[k + 1]} ${t[k + 2]}`);
    lines.push('    endloop', '  endfacet');
  }
  lines.push(`endsolid ${name}`);
  return lines.join('\n') + '\n';
}
