/**
 * An item's variants: one sliced file per printer model ("a Benchy on
 * whatever is free"). An item stored with one file_id/plate has one variant.
 * Each copy goes to the next free printer that fits any variant; a dispatch
 * records the variant it printed.
 */
import fs from 'node:fs';
import type { Store } from '../db';
import type { FileRecord } from '../db/repositories/files';
import type { DispatchRecord, QueueItemRecord, QueueVariant } from '../db/repositories/queue';
import { checkPrinter, type Mismatch, type PrinterFacts } from './compatibility';
import type { FactsCache } from './facts-cache';
import type { FileFacts } from './file-facts';

export type LocalFile = FileRecord & { local_path: string };

export interface LoadedVariant {
  variant: QueueVariant;
  file: LocalFile;
  facts: FileFacts;
}

export function variantsOf(item: Pick<QueueItemRecord, 'files' | 'file_id' | 'plate'>): QueueVariant[] {
  return item.files?.length ? item.files : [{ file_id: item.file_id, plate: item.plate }];
}

/** The variant a dispatch printed (older dispatches: the item's file). */
export function variantOf(item: QueueItemRecord, d: DispatchRecord): QueueVariant {
  return { file_id: d.file_id ?? item.file_id, plate: d.plate ?? item.plate };
}

/** Reads a variant's file and facts; a reason in words when it cannot be printed. */
export async function loadVariant(store: Store, cache: FactsCache, variant: QueueVariant): Promise<LoadedVariant | { error: string }> {
  return variantFrom(await store.files.get(variant.file_id), cache, variant);
}

async function variantFrom(file: FileRecord | undefined, cache: FactsCache, variant: QueueVariant): Promise<LoadedVariant | { error: string }> {
  if (!file?.local_path || !fs.existsSync(file.local_path)) return { error: 'the file is no longer available on the service' };
  try {
    return { variant, file: file as LocalFile, facts: await cache.get(file as LocalFile, variant.plate) };
  } catch (err) {
    return { error: `the file cannot be read: ${(err as Error).message}` };
  }
}

/**
 * Variants read once per dispatcher pass or schedule: the file records of all the items come in one query
 * (one per item made a queue of 1000 items 1000 statements), and many items of one file cost one read of it.
 * A variant's file is still checked on disk and parsed only when an item asks for it.
 */
export interface VariantMemo {
  /** Every file asked for, undefined when it is gone. */
  files: ReadonlyMap<string, FileRecord | undefined>;
  loaded: Map<string, Promise<LoadedVariant | { error: string }>>;
}

/** A memo for `items` (and further `variants`, such as the ones dispatches printed), their file records read at once. */
export async function variantMemo(store: Store, items: readonly QueueItemRecord[], variants: readonly QueueVariant[] = []): Promise<VariantMemo> {
  const ids = [...new Set([...items.flatMap(variantsOf), ...variants].map((v) => v.file_id))];
  const found = await store.files.getMany(ids);
  return { files: new Map(ids.map((id) => [id, found.get(id)])), loaded: new Map() };
}

/** A variant read through `memo`: each (file, plate) once. */
export function loadMemoized(store: Store, cache: FactsCache, v: QueueVariant, memo: VariantMemo): Promise<LoadedVariant | { error: string }> {
  const key = `${v.file_id}\u0000${v.plate}`;
  let pending = memo.loaded.get(key);
  if (!pending) {
    // A file the memo was not made for falls back to a read of its own.
    pending = memo.files.has(v.file_id) ? variantFrom(memo.files.get(v.file_id), cache, v) : loadVariant(store, cache, v);
    memo.loaded.set(key, pending);
  }
  return pending;
}

/** Every variant of an item that can be read, and the reason when none can. */
export async function loadVariants(store: Store, cache: FactsCache, item: QueueItemRecord, memo?: VariantMemo): Promise<{ loaded: LoadedVariant[]; error: string | null }> {
  const loaded: LoadedVariant[] = [];
  let error: string | null = null;
  for (const v of variantsOf(item)) {
    const r = await (memo ? loadMemoized(store, cache, v, memo) : loadVariant(store, cache, v));
    if ('error' in r) error ??= r.error;
    else loaded.push(r);
  }
  return { loaded, error: loaded.length ? null : error };
}

/** The first variant the printer can print now, with its tray mapping; the mismatches are noted (per variant) for the waiting reason. */
export function firstFit(variants: LoadedVariant[], item: QueueItemRecord, pf: PrinterFacts, mismatches: Map<LoadedVariant, { printer: PrinterFacts; mismatch: Mismatch }[]>) {
  for (const v of variants) {
    const c = checkPrinter(v.facts, item, pf);
    if (c.ok) return { variant: v, mapping: c.ams_mapping };
    const noted = mismatches.get(v);
    if (noted) noted.push({ printer: pf, mismatch: c.mismatch });
    else mismatches.set(v, [{ printer: pf, mismatch: c.mismatch }]);
  }
  return null;
}
