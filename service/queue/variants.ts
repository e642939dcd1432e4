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
  const file = await store.files.get(variant.file_id);
  if (!file?.local_path || !fs.existsSync(file.local_path)) return { error: 'the file is no longer available on the service' };
  try {
    return { variant, file: file as LocalFile, facts: await cache.get(file as LocalFile, variant.plate) };
  } catch (err) {
    return { error: `the file cannot be read: ${(err as Error).message}` };
  }
}

/** Every variant of an item that can be read, and the reason when none can. */
export async function loadVariants(store: Store, cache: FactsCache, item: QueueItemRecord): Promise<{ loaded: LoadedVariant[]; error: string | null }> {
  const loaded: LoadedVariant[] = [];
  let error: string | null = null;
  for (const v of variantsOf(item)) {
    const r = await loadVariant(store, cache, v);
    if ('error' in r) error ??= r.error;
    else loaded.push(r);
  }
  return { loaded, error: loaded.length ? null : error };
}
