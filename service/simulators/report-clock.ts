/**
 * When a simulator sends its periodic reports.
 *
 * Without a phase: every interval from now on (setInterval). With one (benchmarks: many simulators in one
 * process): at the times of the process's monotonic clock whose remainder modulo the interval is the phase.
 * Node re-arms a repeating timer from the moment its callback ran, so in a busy process the timers drift
 * late, and the ones that run late in the same turn are re-armed together and fire together from then on:
 * a thousand simulators spread evenly over the second drifted into bursts (bench/fleet: up to 41 reports in
 * 10 ms against 10 on average, and a phase histogram of 0 to 227 reports per 10 ms over a 10 s window).
 * Real printers run on clocks of their own and never fall into step; the grid keeps each simulator on its
 * own phase. A report that comes late does not make up for the ones it missed.
 */
export interface ReportClock {
  stop(): void;
}

export function startReportClock(intervalMs: number, phaseMs: number | undefined, onTick: () => void): ReportClock {
  if (phaseMs === undefined) {
    const timer = setInterval(onTick, intervalMs);
    return { stop: () => clearInterval(timer) };
  }
  let timer: NodeJS.Timeout | null = null;
  const arm = (at: number) => {
    // A timer may fire up to a millisecond early (Node keeps whole milliseconds): the next time is counted
    // from the one it was set for, not from now, so it is neither fired twice nor skipped.
    timer = setTimeout(() => {
      arm(nextAfter(at + intervalMs, intervalMs, performance.now()));
      onTick();
    }, Math.max(0, Math.round(at - performance.now())));
  };
  arm(nextAfter(phaseMs, intervalMs, performance.now()));
  return {
    stop: () => {
      if (timer) clearTimeout(timer);
      timer = null;
    },
  };
}

/** `at`, or the first time on its grid (a multiple of `intervalMs` later) that is not yet past. */
export function nextAfter(at: number, intervalMs: number, now: number): number {
  return at >= now ? at : at + Math.ceil((now - at) / intervalMs) * intervalMs;
}
