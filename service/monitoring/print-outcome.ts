/**
 * How a print ended, judged from the printer's state once it is no longer
 * running. One rule for the job tracker (jobs) and the queue's dispatch run
 * (queued copies), so that a job and its queue copy never disagree.
 */
import type { MachineState } from '../printers/driver';

export type PrintOutcome = 'completed' | 'failed' | 'cancelled';

/** The end of a print: the printer's end state, or, when it went without one, how far it got. */
export function printOutcome(state: MachineState, progress: number): PrintOutcome {
  switch (state) {
    case 'finished':
      return 'completed';
    case 'failed':
    case 'error':
      return 'failed';
    case 'stopped':
      return 'cancelled';
    default:
      // The print vanished without an end state (missed while offline, idle, another print, or a
      // printer that goes straight to idle): judged by how far it got.
      return progress >= 99 ? 'completed' : 'cancelled';
  }
}
