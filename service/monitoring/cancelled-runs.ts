/**
 * What a printer's driver is started with about the printer's last print: when the service's newest tracked job
 * of the printer ended `cancelled`, a test that tells whether a report's print is that run (the job tracker's
 * rule, print-identity.ts). A Bambu printer says "cancelled" (print_error 50348044) only for a few seconds and
 * then shows the run FAILED until its next print: a new driver (a restart, a crash, a connection test) knew
 * only FAILED and showed the cancelled print as a failure, while the job said cancelled. Read once per driver
 * start, never per report.
 */
import type { Logger } from 'pino';
import type { Store } from '../db';
import type { PrintProgress } from '../printers/driver';
import { isSameRun, runOfJob } from './print-identity';

/** Whether the print a printer reports is the run its last job, a cancelled one, recorded. */
export type CancelledRun = (print: PrintProgress | null) => boolean;

/** For each of `printerIds` whose newest tracked job ended cancelled: the test of its run (one statement per 1000 printers). */
export async function cancelledRuns(store: Store, printerIds: readonly string[]): Promise<Map<string, CancelledRun>> {
  const out = new Map<string, CancelledRun>();
  if (!printerIds.length) return out;
  for (const [printerId, job] of await store.jobs.lastTrackedByPrinter(printerIds)) {
    if (job.status !== 'cancelled') continue;
    const run = runOfJob(job);
    // A print that says nothing of itself is no evidence that it is the cancelled run.
    out.set(printerId, (print) => print !== null && isSameRun(run, print));
  }
  return out;
}

/**
 * The same for one printer (a driver started again: an edited connection, a connection test). A read that fails
 * is logged and starts the driver without it: a printer is monitored all the same.
 */
export async function cancelledRunOf(store: Store, printerId: string, log: Logger): Promise<CancelledRun | undefined> {
  try {
    return (await cancelledRuns(store, [printerId])).get(printerId);
  } catch (err) {
    log.warn({ err, printer_id: printerId }, 'could not read the printer\'s last job; a cancelled print it still shows may show as failed');
    return undefined;
  }
}
