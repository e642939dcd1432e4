/**
 * How a print ended, judged from the printer's state once it is no longer
 * running. One rule for the job tracker (jobs) and the queue's dispatch run
 * (queued copies), so that a job and its queue copy never disagree.
 */
import type { EndedPrint, MachineState, PrinterState } from '../printers/driver';
import { normaliseFileName } from './print-identity';

export type PrintOutcome = 'completed' | 'failed' | 'cancelled';

/**
 * The end of a print: the printer's end state; when it went without one, the printer's own record of the run
 * (`recorded`, see recordedEnd); else how far it got.
 */
export function printOutcome(state: MachineState, progress: number, recorded: EndedPrint | null = null): PrintOutcome {
  switch (state) {
    case 'finished':
      return 'completed';
    case 'failed':
    case 'error':
      return 'failed';
    case 'stopped':
      return 'cancelled';
    default:
      // A printer that keeps a history says how the run ended (Klipper: lost to a shutdown, a crash or a power
      // loss is failed, not cancelled).
      if (recorded) return recorded.outcome;
      // The print vanished without an end state (missed while offline, idle, another print, or a
      // printer that goes straight to idle): judged by how far it got.
      return progress >= 99 ? 'completed' : 'cancelled';
  }
}

/** How far apart the printer's start of a run and the start its history records may be (clocks, rounding). */
const START_SLACK_MS = 120_000;

/**
 * The printer's record of a run's end, when the state carries one for that run: the same file in any spelling,
 * started when the run started (or, with no start known, ended after it): an older print of the same file is
 * not this run.
 */
export function recordedEnd(state: PrinterState, run: { name: string; startTime: string | null }): EndedPrint | null {
  const ended = state.ended_print;
  if (!ended || normaliseFileName(ended.file) !== normaliseFileName(run.name)) return null;
  const start = run.startTime ? Date.parse(run.startTime) : Number.NaN;
  if (!Number.isFinite(start)) return ended;
  const recordedStart = ended.started_at ? Date.parse(ended.started_at) : Number.NaN;
  if (Number.isFinite(recordedStart)) return Math.abs(recordedStart - start) <= START_SLACK_MS ? ended : null;
  const end = ended.ended_at ? Date.parse(ended.ended_at) : Number.NaN;
  return !Number.isFinite(end) || end >= start - START_SLACK_MS ? ended : null;
}
