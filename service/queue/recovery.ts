/**
 * The dispatches a stop interrupted, taken up again by the dispatcher:
 *  - at start, the starts sent (starting) and the prints under way (printing) are watched again, each from
 *    its job's last progress;
 *  - on each pass, claims and uploads cut by the stop (claimed, uploading) are retried once their printer is
 *    free and dropped when their file went; a copy whose printer was removed goes back to the queue.
 * Their jobs, items and files are each read in one statement for all of them (a statement per IN_BATCH ids),
 * not one per dispatch: a farm restarted with many copies under way asked for a job, an item and a file each.
 */
import type { Logger } from 'pino';
import type { Store } from '../db';
import type { DispatchRecord } from '../db/repositories/queue';
import { nowIso } from '../util/time';
import { checkPrinter, type PrinterFacts } from './compatibility';
import type { DispatchRunner } from './dispatch-run';
import type { FactsCache } from './facts-cache';
import { queuedStart } from './queued-start';
import { loadMemoized, variantMemo, variantOf } from './variants';

/** What recovery needs of the dispatcher. */
export interface RecoveryHost {
  store: Store;
  facts: FactsCache;
  log: Logger;
  runner: Pick<DispatchRunner, 'recover' | 'forget' | 'owns' | 'drop' | 'launch'>;
  /** The printer's facts while it is configured; undefined once it was removed. */
  printerFacts(printerId: string): PrinterFacts | undefined;
  /** Whether a start may go to the printer now. */
  isFree(printerId: string): boolean;
  /** The item's status after one of its dispatches ended (not a failure). */
  settle(itemId: string): Promise<void>;
}

/** At start: the runner watches the starting and printing dispatches of `open` again (it ignores the others). */
export async function watchAgain(host: RecoveryHost, open: readonly DispatchRecord[]): Promise<void> {
  const progress = await host.store.jobs.progressOf(open.flatMap((d) => (d.job_id !== null ? [d.job_id] : [])));
  for (const d of open) host.runner.recover(d, (d.job_id !== null ? progress.get(d.job_id) : undefined) ?? 0);
}

/** On a pass: the dispatches of `open` left claimed or uploading by an interrupted run, retried or let go. */
export async function resumeInterrupted(host: RecoveryHost, open: readonly DispatchRecord[]): Promise<void> {
  const { store, runner } = host;
  const retry: DispatchRecord[] = [];
  for (const d of open) {
    if (!host.printerFacts(d.printer_id)) {
      // The printer was removed: its copy goes back to the queue (not counted as a failure).
      runner.forget(d.printer_id);
      const ended = await store.queue.transitionDispatch(d.id, [d.state], { state: 'cancelled', error: 'the printer was removed', updated_at: nowIso() });
      if (ended) void host.settle(d.item_id);
      continue;
    }
    if ((d.state === 'claimed' || d.state === 'uploading') && !runner.owns(d.id) && host.isFree(d.printer_id)) retry.push(d);
  }
  if (!retry.length) return;
  const items = await store.queue.getItems(retry.map((d) => d.item_id));
  const memo = await variantMemo(store, [], retry.flatMap((d) => (items.has(d.item_id) ? [variantOf(items.get(d.item_id)!, d)] : [])));
  for (const d of retry) {
    const item = items.get(d.item_id);
    // Asked again: a report may have taken the printer while the reads above ran.
    if (!item || !host.isFree(d.printer_id)) continue;
    const loaded = await loadMemoized(store, host.facts, variantOf(item, d), memo);
    // A file gone meanwhile (deleted): skipped, the dispatch stayed `uploading`, its printer claimed, for ever.
    if ('error' in loaded) {
      await runner.drop(d, loaded.error);
      continue;
    }
    const printer = host.printerFacts(d.printer_id);
    if (!printer) continue;
    const fit = checkPrinter(loaded.facts, item, printer);
    host.log.info({ dispatch_id: d.id, printer_id: d.printer_id }, 'retrying a dispatch interrupted while uploading');
    runner.launch(d, queuedStart(item, d, loaded.file, fit.ok ? fit.ams_mapping : []));
  }
}
