/**
 * bench/fleet-latencies.ts: pairs the two sides' reports of a --latencies run and splits off the reports that
 * were late on both sides alike.
 */
import { describeLatencies } from '../../bench/fleet-latencies';

type Row = [number, number, string];

describe('fleet latencies', () => {
  test('pairs reports by printer and send time, counts those late on both sides, and gives each side its p99 without them', () => {
    const service: Row[] = [];
    const relay: Row[] = [];
    for (let i = 0; i < 300; i++) {
      const id = `bench-${String((i % 3) + 1).padStart(4, '0')}`;
      // Reports 0-9 were held up before either side had them; report 20 only at the service.
      const shared = i < 10 ? 3 : 0;
      service.push([i, shared + (i === 20 ? 2 : 0.3), id]);
      relay.push([i, shared + 0.2, id]);
    }
    // A report framed by one side only is not paired.
    service.push([1000, 9, 'bench-0001']);
    const text = describeLatencies({ report: 'mixed', reports: service }, { report: 'mixed', reports: relay }, 1.5);
    const lines = text.split('\n');
    expect(lines[0]).toBe('all (300 reports), service / relay ms: p50 0.300 / 0.200, p90 0.300 / 0.200, p99 3.300 / 3.200');
    expect(lines[1]).toBe('late on both sides (both over 1.5 ms): 10 (3.33 %); service later in 10, service - relay median 100 µs');
    // Without them, 290 reports: the p99 is the 288th, so the service's one late report of its own (2 ms) is beyond it.
    expect(lines[2]).toBe('without them: p99 0.300 / 0.200 ms (1.50x)');
    expect(lines.slice(3)).toEqual([
      'X1C (100 reports), service / relay ms: p50 0.300 / 0.200, p90 0.300 / 0.200, p99 3.300 / 3.200',
      'P1S (100 reports), service / relay ms: p50 0.300 / 0.200, p90 0.300 / 0.200, p99 3.300 / 3.200',
      'A1 (100 reports), service / relay ms: p50 0.300 / 0.200, p90 0.300 / 0.200, p99 3.300 / 3.200',
    ]);
  });

  test('a calibration run names its sides', () => {
    const rows: Row[] = [[0, 2, 'bench-0001']];
    expect(describeLatencies({ reports: rows }, { reports: rows }, 1.5, ['relay-b', 'relay'])).toContain('relay-b later in 0, relay-b - relay median 0 µs');
  });

  test('printers of another kind are grouped by their id prefix', () => {
    const rows: Row[] = [
      [0, 0.5, 'bench-k-0001'],
      [1, 0.7, 'bench-k-0002'],
    ];
    expect(describeLatencies({ reports: rows }, { reports: rows }, 1.5).split('\n').slice(3)).toEqual(['bench-k-* (2 reports), service / relay ms: p50 0.500 / 0.500, p90 0.700 / 0.700, p99 0.700 / 0.700']);
  });

  test('full reports: every printer is an X1C', () => {
    const rows: Row[] = [[0, 0.5, 'bench-0002']];
    expect(describeLatencies({ report: 'full', reports: rows }, { report: 'full', reports: rows }, 1.5)).toContain('X1C (1 reports)');
  });
});
