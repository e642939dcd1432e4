/** The waiting reasons of an item that found no free printer, in words (QUEUE.md: never blocked without a reason). */
import type { PrinterRecord } from '../db/repositories/printers';
import { mismatchReason, type Mismatch, type PrinterFacts } from './compatibility';
import { NOT_READY } from './dispatch-run';
import type { LoadedVariant } from './variants';

export type Availability = 'free' | 'offline' | 'busy' | 'plate' | 'not_ready';

const list = (n: string[]) => n.slice(0, 3).join(', ') + (n.length > 3 ? ` and ${n.length - 3} more` : '');

/** Compatible printers exist but none is free: why. */
export function availabilityReason(waiting: { printer: PrinterRecord; why: Availability }[]): string {
  const names = (why: Availability) => waiting.filter((w) => w.why === why).map((w) => w.printer.name);
  const plate = names('plate');
  if (plate.length) return `plate needs clearing on ${list(plate)}`;
  const notReady = names('not_ready');
  if (notReady.length) return `${NOT_READY} (${list(notReady)})`;
  if (waiting.every((w) => w.why === 'offline')) return 'all compatible printers offline';
  return 'all compatible printers busy';
}

/** No printer fits any variant: each variant's reason, once. */
export function variantsReason(variants: LoadedVariant[], mismatches: Map<LoadedVariant, { printer: PrinterFacts; mismatch: Mismatch }[]>, farmSize: number): string {
  const reasons = variants.filter((v) => mismatches.get(v)?.length || farmSize === 0).map((v) => mismatchReason(v.facts, mismatches.get(v) ?? [], farmSize));
  return reasons.length ? [...new Set(reasons)].join('; ') : 'no compatible printer';
}
