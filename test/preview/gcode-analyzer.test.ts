import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { analyzeGcode, findPrintStart, GCODE_OPTIMIZATION_DEFAULTS, matchPrintStartMarker, renderGcodeToolpath } from '../../service/preview/gcode-analyzer';
import { decodePng } from '../../service/preview/png';
import { centreCoverage, curaStyleGcode, towerMoves } from './builders';

const lines = (n: number, make: (i: number) => string = (i) => `M117 filler ${i}`) => Array.from({ length: n }, (_, i) => make(i));

describe('print-start markers within optimization_max_lines', () => {
  test.each([
    [';LAYER:0', ';LAYER:0'],
    [';LAYER_CHANGE', ';LAYER_CHANGE'],
    [';TYPE:SKIRT', ';TYPE:SKIRT'],
    [';TYPE:Skirt/Brim', ';TYPE:SKIRT'],
    [';TYPE:WALL-OUTER', ';TYPE:WALL-OUTER'],
    ['START_PRINT BED_TEMP=60 EXTRUDER_TEMP=215', 'START_PRINT'],
    [';PRINT_START', ';PRINT_START'],
    ['; layer 0, Z = 0.2', ';layer 0'],
    [';layer_change', ';LAYER_CHANGE'],
    ['; CHANGE_LAYER', '; CHANGE_LAYER'],
  ])('"%s" starts the print (marker %s)', (line, marker) => {
    const g = [...lines(40), 'M109 S215', 'G28', line, ...towerMoves(3)];
    expect(findPrintStart(g)).toEqual({ print_start_line: 43, skipped_lines: 42, rendered_lines: g.length - 42, total_lines_scanned: g.length, method: 'marker', marker });
  });

  test('look-alikes are not markers', () => {
    for (const l of [';LAYER:01', ';LAYER:10', ';LAYER:0.2', '; layer 1', ';TYPE:WALL-INNER', 'G1 X1 ; START_PRINT', ';TYPE:Perimeter', 'M117 LAYER_CHANGE']) {
      expect([l, matchPrintStartMarker(l)]).toEqual([l, null]);
    }
  });

  test('the earliest marker wins; a marker past the window is not seen', () => {
    const g = [...lines(10), ';LAYER:0', ';TYPE:SKIRT', ...towerMoves(2)];
    expect(findPrintStart(g)).toMatchObject({ print_start_line: 11, marker: ';LAYER:0' });
    const late = [...lines(1200), ';LAYER_CHANGE', ...towerMoves(2)];
    const r = findPrintStart(late);
    expect(r).toMatchObject({ method: 'none', print_start_line: 1, skipped_lines: 0 });
    expect(findPrintStart(late, { optimization_max_lines: 2000 })).toMatchObject({ method: 'marker', print_start_line: 1201 });
  });
});

describe('movement analysis when there is no marker', () => {
  test('after heating, homing and G92 E0 the first substantial extrusion move starts the print', () => {
    const g = ['M104 S215', 'M140 S60', 'G28', 'M109 S215', 'G92 E0', 'G1 Z0.2 F720', 'G1 X10 Y10 F9000', 'G1 E2 F2400', 'G1 X10.3 Y10 E2.01', 'G1 X30 Y10 E3.0', 'G1 X30 Y30 E4.0'];
    // line 8 is a prime without XY, line 9 moves only 0.3 mm: neither is substantial.
    expect(findPrintStart(g)).toEqual({ print_start_line: 10, skipped_lines: 9, rendered_lines: 2, total_lines_scanned: 11, method: 'movement' });
  });

  test('an extrusion before a later heat-and-wait or levelling was a purge: the search starts again', () => {
    const g = ['M104 S170', 'G28', 'G1 X0 Y-4 E10 F500', 'G1 X60 Y-4 E20', 'M109 S230', 'G29', 'G92 E0', 'G1 X100 Y100 F9000', 'G1 X120 Y100 E1.5'];
    expect(findPrintStart(g)).toMatchObject({ print_start_line: 9, method: 'movement' });
  });

  test('relative extrusion (M83) and G91 moves are followed', () => {
    const g = ['M83', 'M109 S200', 'G91', 'G1 X5 Y0 E0', 'G1 X5 Y0 E0.5', 'G90'];
    expect(findPrintStart(g)).toMatchObject({ print_start_line: 5, method: 'movement' });
  });

  test('without any warm-up nothing is skipped (method none), nor without extrusion', () => {
    expect(findPrintStart(['G1 X10 Y10 E1', 'G1 X20 Y10 E2'])).toMatchObject({ print_start_line: 1, skipped_lines: 0, method: 'none' });
    expect(findPrintStart(['M109 S200', 'G28', 'G1 X10 Y10', 'G1 X20 Y10'])).toMatchObject({ print_start_line: 1, method: 'none' });
    expect(findPrintStart([])).toEqual({ print_start_line: 1, skipped_lines: 0, rendered_lines: 0, total_lines_scanned: 0, method: 'none' });
  });
});

describe('options', () => {
  const file = [...lines(50), 'M109 S215', ';LAYER_CHANGE', ...towerMoves(400)];

  test('defaults are the spec values', () => {
    expect(GCODE_OPTIMIZATION_DEFAULTS).toEqual({ optimize_print_only: true, optimization_max_lines: 1000, render_max_lines: 10000 });
  });

  test('optimize_print_only false: nothing skipped, rendering starts at line 1 (render_max_lines still applies)', () => {
    expect(findPrintStart(file, { optimize_print_only: false })).toEqual({
      print_start_line: 1,
      skipped_lines: 0,
      rendered_lines: file.length,
      total_lines_scanned: file.length,
      method: 'disabled',
    });
    expect(findPrintStart(file, { optimize_print_only: false, render_max_lines: 100 })).toMatchObject({ rendered_lines: 100, total_lines_scanned: 100 });
  });

  test('render_max_lines caps the rendered range and reading stops there', () => {
    expect(findPrintStart(file, { render_max_lines: 500 })).toEqual({
      print_start_line: 52,
      skipped_lines: 51,
      rendered_lines: 500,
      total_lines_scanned: 551,
      method: 'marker',
      marker: ';LAYER_CHANGE',
    });
  });

  test('without a start, the whole window is read before deciding and the render range starts at line 1', () => {
    const g = lines(3000);
    expect(findPrintStart(g, { optimization_max_lines: 2000, render_max_lines: 100 })).toMatchObject({ print_start_line: 1, rendered_lines: 100, total_lines_scanned: 2000, method: 'none' });
  });

  test('optimization_max_lines 0 examines nothing; nonsense options fall back to the defaults', () => {
    expect(findPrintStart(file, { optimization_max_lines: 0 })).toMatchObject({ print_start_line: 1, method: 'none' });
    expect(findPrintStart(file, { optimization_max_lines: Number.NaN, render_max_lines: -5 } as never)).toMatchObject({ print_start_line: 52, method: 'marker', rendered_lines: file.length - 51 });
  });
});

describe('streaming', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'pf-analyzer-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test('a file, a buffer and a stream in 13-byte chunks give the same analysis (CRLF line ends too)', async () => {
    const text = curaStyleGcode({ layers: 30 }).replace(/\n/g, '\r\n');
    const file = path.join(dir, 'cura.gcode');
    writeFileSync(file, text);
    const buf = Buffer.from(text);
    const stream = Readable.from((function* () { for (let i = 0; i < buf.length; i += 13) yield buf.subarray(i, i + 13); })());
    const results = await Promise.all([analyzeGcode(file), analyzeGcode(buf), analyzeGcode(stream)]);
    for (const r of results) expect(r).toMatchObject({ method: 'marker', marker: ';LAYER:0', print_start_line: 16 });
    expect(results[1]).toEqual(results[0]);
    expect(results[2]).toEqual(results[0]);
  });

  test('reading stops after the render range: a stream is not consumed to its end', async () => {
    let produced = 0;
    const stream = Readable.from(
      (function* () {
        yield Buffer.from('M109 S200\n;LAYER_CHANGE\n');
        for (let i = 0; i < 100_000; i++) {
          produced++;
          yield Buffer.from(`G1 X${i % 50} Y${i % 30} E${i}\n`);
        }
      })(),
    );
    const r = await analyzeGcode(stream, { render_max_lines: 1000 });
    expect(r).toMatchObject({ print_start_line: 2, rendered_lines: 1000, total_lines_scanned: 1001 });
    expect(produced).toBeLessThan(5000);
  });
});

describe('toolpath rendering', () => {
  const gcode = Buffer.from(['M109 S215', 'G28', 'G1 X0 Y-4 F9000', 'G1 X60 Y-4 E5 F500', ';LAYER_CHANGE', 'G92 E0', ...towerMoves(20), 'G2 X130 Y110 I10 J0 E100', 'M84'].join('\n'));

  test('an iso preview of the print only: right size, drawn in the middle, transparent at the corners', async () => {
    const r = await renderGcodeToolpath(gcode, { width: 256, height: 192 });
    const { width, height, coverage } = centreCoverage(r.png);
    expect([width, height]).toEqual([256, 192]);
    expect(coverage).toBeGreaterThan(0.02);
    const img = decodePng(r.png);
    expect(img.data[3]).toBe(0);
    expect(r.analysis).toMatchObject({ method: 'marker', print_start_line: 5 });
    // The purge line at Y-4 is before the print start: the bounds are the tower's (plus the arc).
    expect(r.bounds.min[0]).toBeGreaterThanOrEqual(100);
    expect(r.bounds.max[2]).toBeCloseTo(4, 3);
    expect(r.segments).toBeGreaterThan(80);
  });

  test('optimize_print_only false renders from line 1, purge line included', async () => {
    const r = await renderGcodeToolpath(gcode, { view: 'top', width: 128, optimize_print_only: false });
    expect(r.analysis.method).toBe('disabled');
    expect(r.bounds.min[1]).toBe(-4);
  });

  test('a top view of a stepped pyramid shows its layers in different colours', async () => {
    const steps: string[] = ['M109 S215', ';LAYER_CHANGE'];
    let e = 0;
    for (let l = 0; l < 10; l++) {
      const lo = 100 + l * 4;
      const hi = 180 - l * 4;
      steps.push(`G1 Z${(l + 1) * 0.5} F600`, `G1 X${lo} Y${lo} F9000`);
      for (const [x, y] of [[hi, lo], [hi, hi], [lo, hi], [lo, lo]]) steps.push(`G1 X${x} Y${y} E${(e += 3)}`);
    }
    const r = await renderGcodeToolpath(Buffer.from(steps.join('\n')), { view: 'top', width: 128, lineWidth: 2 });
    const img = decodePng(r.png);
    expect([img.width, img.height]).toEqual([128, 128]);
    const colours = new Set<string>();
    for (let i = 0; i < img.data.length; i += 4) if (img.data[i + 3] > 200) colours.add(`${img.data[i] >> 5},${img.data[i + 1] >> 5},${img.data[i + 2] >> 5}`);
    expect(colours.size).toBeGreaterThan(3);
  });

  test('a range without extrusion is NO_THUMBNAIL', async () => {
    await expect(renderGcodeToolpath(Buffer.from('G28\nG1 X10 Y10\nM84\n'))).rejects.toMatchObject({ code: 'NO_THUMBNAIL' });
  });

  test('segment storage stays bounded on a long render range', async () => {
    const many = Buffer.from(['M109 S200', ';LAYER_CHANGE', ...Array.from({ length: 40_000 }, (_, i) => `G1 X${(i * 7) % 200} Y${(i * 13) % 200} Z${(i / 4000).toFixed(1)} E${i + 1}`)].join('\n'));
    const r = await renderGcodeToolpath(many, { width: 64, render_max_lines: 100_000, maxSegments: 5000 });
    expect(r.segments).toBeLessThanOrEqual(5000);
    expect(r.analysis.rendered_lines).toBe(40_001);
  });
});
