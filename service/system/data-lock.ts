/**
 * One service per data directory. Two services on one folder overwrite each
 * other's downloads, settings and jobs, so the service takes an exclusive lock
 * at start: `printfarm.lock` created with O_EXCL, holding the owner's pid, host
 * and start time. A lock whose process is gone (killed, crashed, a container
 * restarted with the same pid) is taken over; a live one refuses the start
 * with a message naming the directory and the other process.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConfigError } from '../config';

export const LOCK_FILENAME = 'printfarm.lock';

interface LockContent {
  pid: number;
  host: string;
  started_at: string;
  token: string;
}

/** Another live service holds the data directory (exit status 2 in the CLI, like any configuration error). */
export class DataDirLockedError extends ConfigError {
  readonly code = 'DATA_DIR_LOCKED';
  constructor(
    readonly dataDir: string,
    readonly holder: Partial<LockContent>,
  ) {
    const who = `pid ${holder.pid ?? '?'}${holder.host ? ` on ${holder.host}` : ''}${holder.started_at ? `, started ${holder.started_at}` : ''}`;
    super(
      `the data directory ${dataDir} is in use by another Printfarm service (${who}). ` +
        `Stop that service or give this one another data directory (--data-dir / DATA_DIR). ` +
        `If no such process runs, remove ${path.join(dataDir, LOCK_FILENAME)}.`,
    );
  }
}

/** The data directory cannot be used at all (missing rights, read-only file system): exit status 2 with what to do. */
export class DataDirUnusableError extends ConfigError {
  readonly code = 'DATA_DIR_UNUSABLE';
  constructor(
    readonly dataDir: string,
    cause: NodeJS.ErrnoException,
  ) {
    super(
      `the data directory ${dataDir} cannot be written (${cause.code ?? cause.message}). ` +
        `Give the service's user write access to it, or choose another directory with --data-dir / DATA_DIR.`,
    );
  }
}

/** Lock files this process holds: an own pid in a lock file is only live when it is listed here. */
const heldHere = new Set<string>();

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: the process exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function readLock(file: string): Partial<LockContent> | null {
  try {
    const parsed = JSON.parse(fs.readFileSync(file, 'utf8')) as Partial<LockContent>;
    return typeof parsed === 'object' && parsed !== null ? parsed : null;
  } catch {
    return null; // unreadable or half-written: treated as stale below
  }
}

/** Whether the holder of a lock file still runs (a lock from another host cannot be checked: it counts as live). */
function holderLive(file: string, holder: Partial<LockContent> | null): boolean {
  if (!holder || typeof holder.pid !== 'number') return false;
  if (holder.host && holder.host !== os.hostname()) return true;
  if (holder.pid === process.pid) return heldHere.has(file);
  return alive(holder.pid);
}

export interface DataDirLock {
  file: string;
  release(): void;
}

/** Takes the data directory's lock or throws DataDirLockedError. Creates the directory when it is missing. */
export function lockDataDir(dataDir: string): DataDirLock {
  try {
    fs.mkdirSync(dataDir, { recursive: true });
  } catch (err) {
    throw new DataDirUnusableError(dataDir, err as NodeJS.ErrnoException);
  }
  const file = path.join(dataDir, LOCK_FILENAME);
  const content: LockContent = { pid: process.pid, host: os.hostname(), started_at: new Date().toISOString(), token: randomUUID() };
  for (let attempt = 0; ; attempt++) {
    try {
      fs.writeFileSync(file, JSON.stringify(content) + '\n', { flag: 'wx', mode: 0o644 });
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw new DataDirUnusableError(dataDir, err as NodeJS.ErrnoException);
      const holder = readLock(file);
      if (holderLive(file, holder) || attempt >= 3) throw new DataDirLockedError(dataDir, holder ?? {});
      // A stale lock (its process is gone): remove it and race for a fresh one; O_EXCL lets one starter win.
      fs.rmSync(file, { force: true });
    }
  }
  heldHere.add(file);
  let released = false;
  return {
    file,
    release() {
      if (released) return;
      released = true;
      heldHere.delete(file);
      // Only our own lock is removed (a stale-lock takeover by someone else must survive our exit).
      if (readLock(file)?.token === content.token) fs.rmSync(file, { force: true });
    },
  };
}
