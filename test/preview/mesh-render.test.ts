import { parseMesh, parseObj, parseStl, isBinaryStl } from '../../service/preview/mesh';
import { decodePng } from '../../service/preview/png';
import { Raster, renderMesh, renderMeshPng } from '../../service/preview/render';
import { alphaAt, asciiStl, binaryStl, boxTriangles, centreCoverage } from './builders';

const cubeStl = () => binaryStl(boxTriangles(20, 20, 20));

describe('STL parsing', () => {
  test('binary STL, also when its 80-byte header starts with "solid"', () => {
    for (const header of ['binary STL from a CAD tool', 'solid part exported as binary', 'solid']) {
      const buf = binaryStl(boxTriangles(10, 20, 30, 5, 0, 0), header);
      expect(isBinaryStl(buf)).toBe(true);
      const m = parseStl(buf);
      expect(m).toMatchObject({ format: 'stl-binary', triangleCount: 12, min: [5, 0, 0], max: [15, 20, 30] });
    }
    expect(parseStl(cubeStl())).toMatchObject({ triangleCount: 12, max: [20, 20, 20] });
  });

  test('ASCII STL, with CRLF, odd spacing and exponents', () => {
    const text = asciiStl(boxTriangles(2, 2, 2)).replace(/\n/g, '\r\n').replace(/vertex 2 /g, 'vertex   2.0e0 ');
    const buf = Buffer.from(text);
    expect(isBinaryStl(buf)).toBe(false);
    expect(parseStl(buf)).toMatchObject({ format: 'stl-ascii', triangleCount: 12, min: [0, 0, 0], max: [2, 2, 2] });
  });

  test('refused: too many triangles (declared), cut-off data, NaN or infinite coordinates, broken ASCII', () => {
    const big = Buffer.alloc(84 + 50);
    big.writeUInt32LE(6_000_000, 80);
    expect(() => parseStl(big)).toThrow(expect.objectContaining({ code: 'TOO_LARGE' }));
    expect(() => parseStl(binaryStl(boxTriangles()), { maxTriangles: 10 })).toThrow(expect.objectContaining({ code: 'TOO_LARGE' }));
    const cut = binaryStl(boxTriangles()).subarray(0, 84 + 50 * 5 + 7);
    expect(() => parseStl(cut)).toThrow(expect.objectContaining({ code: 'TRUNCATED' }));
    const nan = binaryStl([[0, 0, 0, 1, 0, 0, NaN, 1, 0]]);
    expect(() => parseStl(nan)).toThrow(expect.objectContaining({ code: 'MALFORMED', message: expect.stringContaining('non-finite') }));
    const inf = binaryStl([[0, 0, 0, 1, 0, 0, Infinity, 1, 0]]);
    expect(() => parseStl(inf)).toThrow(expect.objectContaining({ code: 'MALFORMED' }));
    expect(() => parseStl(Buffer.from('solid x\n facet normal 0 0 1\n outer loop\n vertex 0 0 0\n vertex 1 0 0\n endloop\n endfacet\nendsolid x\n'))).toThrow(
      expect.objectContaining({ code: 'MALFORMED' }),
    );
    expect(() => parseStl(Buffer.from('solid x\n facet normal 0 0 1\n outer loop\n vertex 0 zero 0\n'))).toThrow(expect.objectContaining({ code: 'MALFORMED' }));
    expect(() => parseStl(Buffer.from('solid x\n facet normal 0 0 1\n outer loop\n vertex 0 0'))).toThrow(expect.objectContaining({ code: 'TRUNCATED' }));
    expect(() => parseStl(Buffer.from('solid empty\nendsolid empty\n'))).toThrow(expect.objectContaining({ code: 'MALFORMED', message: expect.stringContaining('no triangles') }));
    expect(() => parseStl(Buffer.from('hello'))).toThrow(expect.objectContaining({ code: 'MALFORMED' }));
  });
});

describe('OBJ parsing', () => {
  test('v / f with a/b/c forms, negative indices and polygons (fan-triangulated)', () => {
    const obj = ['# a pyramid', 'o pyramid', 'v 0 0 0', 'v 10 0 0', 'v 10 10 0', 'v 0 10 0', 'v 5 5 8', 'vt 0 0', 'vn 0 0 1', 'f 1 2 3 4', 'f -5 -4 -1', 'f 2/1 3/1 5/1', 'f 3//1 4//1 5//1', 'f 4/1/1 1/1/1 5/1/1', ''].join('\n');
    const m = parseObj(Buffer.from(obj));
    expect(m).toMatchObject({ format: 'obj', triangleCount: 6, min: [0, 0, 0], max: [10, 10, 8] });
    // The quad became (1,2,3) and (1,3,4).
    expect([...m.positions.subarray(9, 18)]).toEqual([0, 0, 0, 10, 10, 0, 0, 10, 0]);
  });

  test('refused: indices out of range or zero, faces with fewer than 3 vertices, non-numeric vertices, too many triangles', () => {
    const bad = (text: string) => () => parseObj(Buffer.from(text));
    expect(bad('v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 4\n')).toThrow(expect.objectContaining({ code: 'MALFORMED', message: expect.stringContaining('out of range') }));
    expect(bad('v 0 0 0\nv 1 0 0\nv 0 1 0\nf 0 1 2\n')).toThrow(expect.objectContaining({ code: 'MALFORMED' }));
    expect(bad('v 0 0 0\nv 1 0 0\nv 0 1 0\nf -4 1 2\n')).toThrow(expect.objectContaining({ code: 'MALFORMED' }));
    expect(bad('v 0 0 0\nv 1 0 0\nf 1 2\n')).toThrow(expect.objectContaining({ code: 'MALFORMED' }));
    expect(bad('v 0 nan 0\n')).toThrow(expect.objectContaining({ code: 'MALFORMED' }));
    expect(bad('v 0 0 0\n')).toThrow(expect.objectContaining({ code: 'MALFORMED', message: expect.stringContaining('no triangles') }));
    const many = 'v 0 0 0\nv 1 0 0\nv 0 1 0\n' + 'f 1 2 3\n'.repeat(50);
    expect(() => parseObj(Buffer.from(many), { maxTriangles: 20 })).toThrow(expect.objectContaining({ code: 'TOO_LARGE' }));
    expect(parseMesh(Buffer.from(many), 'obj').triangleCount).toBe(50);
  });
});

describe('software rendering', () => {
  test.each([
    ['binary STL', () => parseStl(binaryStl(boxTriangles(20, 20, 20)))],
    ['ASCII STL', () => parseStl(Buffer.from(asciiStl(boxTriangles(30, 10, 5))))],
    ['OBJ', () => parseObj(Buffer.from('v 0 0 0\nv 10 0 0\nv 10 10 0\nv 0 10 0\nv 5 5 8\nf 1 4 3 2\nf 1 2 5\nf 2 3 5\nf 3 4 5\nf 4 1 5\n'))],
  ])('%s renders to a 512x512 PNG, shaded in the middle, transparent at the corners', (_name, load) => {
    const png = renderMeshPng(load());
    const { width, height, coverage } = centreCoverage(png);
    expect([width, height]).toEqual([512, 512]);
    expect(coverage).toBeGreaterThan(0.5);
    expect(alphaAt(png, 0, 0)).toBe(0);
    expect(alphaAt(png, 511, 511)).toBe(0);
    expect(alphaAt(png, 256, 256)).toBe(255);
  });

  test('the size is configurable and the model fills it; faces facing different ways get different shades', () => {
    const img = renderMesh(parseStl(binaryStl(boxTriangles(20, 20, 20))), { width: 200, height: 120, supersample: 1 });
    expect([img.width, img.height]).toEqual([200, 120]);
    let minX = Infinity;
    let maxX = -Infinity;
    const shades = new Set<number>();
    for (let y = 0; y < 120; y++) {
      for (let x = 0; x < 200; x++) {
        const o = (y * 200 + x) * 4;
        if (img.data[o + 3] === 255) {
          minX = Math.min(minX, x);
          maxX = Math.max(maxX, x);
          shades.add(img.data[o + 2]);
        }
      }
    }
    // Height-limited: the cube spans most of the 120 px height and is centred.
    expect(Math.abs((minX + maxX) / 2 - 100)).toBeLessThan(3);
    expect(shades.size).toBe(3); // top, left and right faces
    expect(decodePng(renderMeshPng(parseStl(cubeStl()), { width: 64 }))).toMatchObject({ width: 64, height: 64 });
    expect(() => renderMeshPng(parseStl(cubeStl()), { width: 100000 })).toThrow(expect.objectContaining({ code: 'TOO_LARGE' }));
  });

  test('a flat or degenerate mesh still renders without dividing by zero', () => {
    const flat = parseStl(binaryStl([[0, 0, 0, 10, 0, 0, 0, 10, 0], [1, 1, 1, 1, 1, 1, 1, 1, 1]]));
    const png = renderMeshPng(flat, { width: 64 });
    expect(decodePng(png)).toMatchObject({ width: 64, height: 64 });
  });
});

describe('toolpath lines', () => {
  const alphaRows = (r: Raster) => Array.from({ length: r.height }, (_, y) => Array.from({ length: r.width }, (_, x) => r.rgba[(y * r.width + x) * 4 + 3]).filter((a) => a > 0).length);

  test('a line reaching far beyond the picture draws the part inside it, stepping only there', () => {
    const r = new Raster(64, 64);
    r.line(-30000, 5, 0, 30000, 5, 0, 255, 0, 0, 1);
    r.line(31, -30000, 0, 31, 30000, 0, 0, 255, 0, 3);
    const rows = alphaRows(r);
    expect(rows[5]).toBe(64);
    expect(rows.filter((n, y) => y !== 5 && y !== 4 && y !== 6).every((n) => n === 3)).toBe(true);
  });

  test('a line wholly outside draws nothing', () => {
    const r = new Raster(32, 32);
    r.line(-5000, -10, 0, 5000, -10, 0, 255, 0, 0, 2);
    r.line(100, -500, 0, 100, 500, 0, 255, 0, 0, 2);
    expect(alphaRows(r).every((n) => n === 0)).toBe(true);
  });
});
