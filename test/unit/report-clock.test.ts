/**
 * The simulators' report clock (service/simulators/report-clock.ts): with a phase, every report falls on
 * the simulator's own place in the interval, however many simulators share the process, and a late one
 * does not make up for the ones it missed.
 */
import { nextAfter, startReportClock } from '../../service/simulators/report-clock';

afterEach(() => jest.useRealTimers());

test('with a phase, every tick falls on the grid of the monotonic clock', () => {
  jest.useFakeTimers();
  const ticks: Record<string, number[]> = { a: [], b: [] };
  const a = startReportClock(1000, 250, () => ticks.a.push(performance.now()));
  const b = startReportClock(1000, 251, () => ticks.b.push(performance.now()));
  jest.advanceTimersByTime(5000);
  a.stop();
  b.stop();
  expect(ticks.a).toHaveLength(5);
  expect(ticks.b).toHaveLength(5);
  // Each clock on its own phase, one millisecond apart, in every interval: never in step.
  for (const t of ticks.a) expect(((t % 1000) + 1000) % 1000).toBeCloseTo(250, 0);
  ticks.a.forEach((t, i) => expect(ticks.b[i] - t).toBeCloseTo(1, 0));
});

test('stop ends the ticks; without a phase the clock ticks every interval from its start', () => {
  jest.useFakeTimers();
  const start = performance.now();
  const ticks: number[] = [];
  const clock = startReportClock(300, undefined, () => ticks.push(performance.now() - start));
  jest.advanceTimersByTime(1000);
  clock.stop();
  jest.advanceTimersByTime(1000);
  expect(ticks.map(Math.round)).toEqual([300, 600, 900]);
});

test('a tick that comes late is followed by the next time on the grid, not by the ones it missed', () => {
  expect(nextAfter(1250, 1000, 1000)).toBe(1250); // not yet due
  expect(nextAfter(1250, 1000, 1250)).toBe(1250);
  expect(nextAfter(1250, 1000, 1251)).toBe(2250); // just missed: the next one
  expect(nextAfter(1250, 1000, 4800)).toBe(5250); // three missed: skipped, no burst
});
