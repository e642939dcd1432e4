/**
 * Where files live on disk: DATA_DIR/files/printers/<file id>/<name> for copies
 * of printer files (the file id is unique per printer and path, so two files of
 * the same name never share a copy, and no printer id can reach the uploads),
 * DATA_DIR/files/local/<id>-<name> for uploads. Names come from printers and
 * users, so every name is reduced to one safe path segment and every path is
 * checked to stay inside DATA_DIR/files. Copies of earlier versions lived at
 * files/<printer id>/<name>; `moveToLayout` brings them over at start.
 * Thumbnails are DATA_DIR/thumbnails/<file id>.png.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { DomainError } from '../errors';

/** The extension the API shows: ".3mf" for "x.gcode.3mf", ".gcode", ".stl"... (lower case, with the dot). */
export function fileTypeOf(name: string): string {
  const ext = path.extname(name).toLowerCase();
  return ext || '.bin';
}

/** One safe path segment from any name: no folders, no "..", no control or reserved characters, at most 180 bytes. */
export function safeSegment(name: string): string {
  const base = name.replace(/\\/g, '/').split('/').pop() ?? '';
  let safe = base.normalize('NFC').replace(/[\u0000-\u001f\u007f<>:"|?*]/g, '_').replace(/^\.+/, '_').trim();
  while (Buffer.byteLength(safe) > 180) safe = safe.slice(0, -1);
  return safe || 'file';
}

/** A stable id for a file on a printer (the same path on the same printer keeps its id across refreshes). */
export function printerFileId(printerId: string, printerPath: string): string {
  return createHash('sha256').update(`${printerId}\u0000${printerPath}`).digest('hex').slice(0, 20);
}

/** How localFile names an upload: its 20-hex id, a dash, the name. */
const UPLOAD_NAME = /^[0-9a-f]{20}-./;

/** The folder of printer-file copies; uploads live in `local`. */
const PRINTER_COPIES = 'printers';

export class FileStorage {
  readonly root: string;

  constructor(private readonly dataDir: string) {
    this.root = path.join(dataDir, 'files');
  }

  /** How a stored path is shown to clients: relative to the data dir ("files/local/…"), never the server's absolute path. */
  shown(file: string | null): string | null {
    if (file === null) return null;
    const relative = path.relative(this.dataDir, path.resolve(file));
    return relative.split(path.sep).join('/');
  }

  /** Resolves `parts` under the root; refuses anything that would land outside it. */
  private inside(...parts: string[]): string {
    const resolved = path.resolve(this.root, ...parts);
    if (resolved !== this.root && !resolved.startsWith(this.root + path.sep)) {
      throw new DomainError(400, 'VALIDATION_ERROR', 'File name leaves the storage folder', { location: 'body' });
    }
    return resolved;
  }

  /** The copy of a printer file: under its own id, so it collides with nothing. */
  printerCopy(fileId: string, name: string): string {
    return this.inside(PRINTER_COPIES, safeSegment(fileId), safeSegment(name));
  }

  /** Whether `file` is already where printerCopy puts copies. */
  inCopyLayout(file: string): boolean {
    return path.resolve(file).startsWith(path.join(this.root, PRINTER_COPIES) + path.sep);
  }

  /** Removes a copy and its folder when that is empty now. */
  removeCopy(file: string): void {
    if (!this.owns(file)) return;
    fs.rmSync(file, { force: true });
    const dir = path.dirname(file);
    if (!this.inCopyLayout(file)) return;
    try {
      fs.rmdirSync(dir);
    } catch {
      // Not empty (a download of the same file is writing its temp file) or gone: either is fine.
    }
  }

  localFile(id: string, name: string): string {
    return this.inside('local', `${id}-${safeSegment(name)}`);
  }

  /** A temp file next to `target`: written, checksummed, then renamed over the target, so no half file is ever visible. */
  tempFor(target: string): string {
    fs.mkdirSync(path.dirname(target), { recursive: true });
    return `${target}.part-${process.pid}-${Date.now().toString(36)}`;
  }

  /** True when `file` is one of ours (a path from the database, checked again before it is deleted or served). */
  owns(file: string): boolean {
    const resolved = path.resolve(file);
    return resolved.startsWith(this.root + path.sep);
  }

  /**
   * Uploads no row names, written before `before` (a kill between an upload's rename and its database row): removed.
   * Only files older than this run's start, so an upload renamed in place a moment before its row is never taken.
   */
  sweepUnlistedUploads(listed: readonly string[], before: number): number {
    const dir = this.inside('local');
    if (!fs.existsSync(dir)) return 0;
    const names = new Set(listed.map((p) => path.basename(p)));
    let removed = 0;
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, entry.name);
      // Only names this service gives uploads (localFile: a 20-hex id first): anything else put there is left alone.
      if (!entry.isFile() || !UPLOAD_NAME.test(entry.name) || names.has(entry.name) || fs.statSync(p).mtimeMs >= before) continue;
      fs.rmSync(p, { force: true });
      removed++;
    }
    return removed;
  }

  thumbnailPath(fileId: string): string {
    return path.join(this.dataDir, 'thumbnails', `${fileId.replace(/[^A-Za-z0-9_-]/g, '_')}.png`);
  }

  /**
   * Copies and thumbnails of files no row names any more (a printer removed with its files, a file gone from its
   * printer, a local file deleted), last written before `before`: removed. Only the folders and names this
   * storage gives them; what a download or a preview writes now is younger than `before` and stays.
   */
  sweepOrphans(fileIds: readonly string[], before: number): { copies: number; thumbnails: number } {
    const copies = new Set(fileIds.map(safeSegment));
    const thumbnails = new Set(fileIds.map((id) => path.basename(this.thumbnailPath(id))));
    // Gone meanwhile (a download's temp renamed, a delete): not ours to judge.
    const old = (p: string) => {
      try {
        return fs.statSync(p).mtimeMs < before;
      } catch {
        return false;
      }
    };
    const swept = { copies: 0, thumbnails: 0 };
    const copiesDir = this.inside(PRINTER_COPIES);
    for (const entry of fs.existsSync(copiesDir) ? fs.readdirSync(copiesDir, { withFileTypes: true }) : []) {
      const dir = path.join(copiesDir, entry.name);
      if (!entry.isDirectory() || copies.has(entry.name) || !fs.readdirSync(dir).every((name) => old(path.join(dir, name)))) continue;
      fs.rmSync(dir, { recursive: true, force: true });
      swept.copies++;
    }
    const thumbnailsDir = path.dirname(this.thumbnailPath('x'));
    for (const entry of fs.existsSync(thumbnailsDir) ? fs.readdirSync(thumbnailsDir, { withFileTypes: true }) : []) {
      const file = path.join(thumbnailsDir, entry.name);
      // Pictures (and the temp files of a preview cut short) whose file is gone.
      const stem = entry.name.replace(/\.part-\d+$/, '');
      if (!entry.isFile() || !/^[A-Za-z0-9_-]+\.png$/.test(stem) || (thumbnails.has(stem) && stem === entry.name) || !old(file)) continue;
      fs.rmSync(file, { force: true });
      swept.thumbnails++;
    }
    return swept;
  }

  /** Temp files left by a crash mid-transfer. */
  sweepPartials(): number {
    let removed = 0;
    const walk = (dir: string) => {
      if (!fs.existsSync(dir)) return;
      for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
        const p = path.join(dir, entry.name);
        if (entry.isDirectory()) walk(p);
        else if (/\.part-\d+-[a-z0-9]+$/.test(entry.name)) {
          fs.rmSync(p, { force: true });
          removed++;
        }
      }
    };
    walk(this.root);
    return removed;
  }
}

export async function sha256File(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of fs.createReadStream(file)) hash.update(chunk as Buffer);
  return `sha256:${hash.digest('hex')}`;
}
