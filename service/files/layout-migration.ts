/**
 * Earlier versions kept printer-file copies at files/<printer id>/<name>: two files of one name in
 * different folders shared one copy (one row's checksum, the other's bytes), and a printer with the
 * id `local` wrote into the uploads. At start, each such copy moves to files/printers/<file id>/<name>.
 * A copy several rows point to stays with the row whose checksum matches its bytes; the others lose
 * their copy (back to `available`, to be downloaded again). Renames are within one file system, so
 * the move is cheap; only shared copies are read (checksummed).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import type { Store } from '../db';
import { nowIso } from '../util/time';
import { sha256File, type FileStorage } from './storage';

export async function moveCopiesToLayout(store: Store, storage: FileStorage, log: Logger): Promise<{ moved: number; dropped: number }> {
  const byPath = new Map<string, { id: string; checksum: string | null }[]>();
  for (const row of await store.files.printerCopies()) {
    if (storage.inCopyLayout(row.local_path) || !storage.owns(row.local_path)) continue;
    const key = path.resolve(row.local_path);
    byPath.set(key, [...(byPath.get(key) ?? []), row]);
  }
  let moved = 0;
  let dropped = 0;
  const drop = async (id: string) => {
    await store.files.update(id, { status: 'available', local_path: null, checksum: null, downloaded_at: null, updated_at: nowIso() });
    dropped++;
  };
  for (const [oldPath, rows] of byPath) {
    const name = path.basename(oldPath);
    if (!fs.existsSync(oldPath)) {
      // A move that was cut off after the rename: the copy is already in place.
      for (const row of rows) {
        const target = storage.printerCopy(row.id, name);
        if (fs.existsSync(target)) await store.files.update(row.id, { local_path: target });
      }
      continue;
    }
    let keeper: (typeof rows)[number] | undefined = rows[0];
    if (rows.length > 1) {
      const sum = await sha256File(oldPath);
      keeper = rows.find((r) => r.checksum === sum);
    }
    for (const row of rows) if (row !== keeper) await drop(row.id);
    if (!keeper) {
      fs.rmSync(oldPath, { force: true });
      continue;
    }
    const target = storage.printerCopy(keeper.id, name);
    fs.mkdirSync(path.dirname(target), { recursive: true });
    fs.renameSync(oldPath, target);
    await store.files.update(keeper.id, { local_path: target });
    moved++;
  }
  if (moved || dropped) log.info({ moved, dropped }, 'moved local copies of printer files to files/printers/<file id>/');
  return { moved, dropped };
}
