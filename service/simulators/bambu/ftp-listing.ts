/** vsftpd's ways of listing files and writing their dates, as a real printer's FTPS server does. */
import { basename, type SimStorage } from './files';

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const pad = (n: number, w = 2) => String(n).padStart(w, '0');

/** vsftpd's `ls -l` date: "Jun 18 00:27" within six months, else "Jun 17  2025" (UTC, vsftpd's default). */
export function listDate(date: Date, now = new Date()): string {
  const recent = Math.abs(now.getTime() - date.getTime()) < 182 * 24 * 3600 * 1000;
  const head = `${MONTHS[date.getUTCMonth()]} ${pad(date.getUTCDate())}`;
  return recent ? `${head} ${pad(date.getUTCHours())}:${pad(date.getUTCMinutes())}` : `${head}  ${date.getUTCFullYear()}`;
}

export function listLine(entry: { name: string; dir: boolean; size: number; mtime: Date }): string {
  const mode = entry.dir ? 'drwxr-xr-x' : '-rw-r--r--';
  return `${mode}    ${entry.dir ? 2 : 1} 1000     1000     ${String(entry.size).padStart(8)} ${listDate(entry.mtime)} ${entry.name}`;
}

export function mdtm(date: Date): string {
  return `${date.getUTCFullYear()}${pad(date.getUTCMonth() + 1)}${pad(date.getUTCDate())}${pad(date.getUTCHours())}${pad(date.getUTCMinutes())}${pad(date.getUTCSeconds())}`;
}

/** The LIST (ls -l lines) or NLST (names) answer for `path`: a folder's entries, one file, or nothing (found false). */
export function listingOf(storage: SimStorage, path: string | null, cmd: 'LIST' | 'NLST'): { payload: Buffer; found: boolean } {
  let lines: string[] | null = null;
  const file = path ? storage.get(path) : null;
  if (path && storage.isDir(path)) {
    const entries = storage.list(path);
    lines = cmd === 'LIST' ? entries.map(listLine) : entries.map((e) => e.name);
  } else if (file) {
    lines = cmd === 'LIST' ? [listLine({ name: basename(file.path), dir: false, size: file.data.length, mtime: file.mtime })] : [basename(file.path)];
  }
  return { payload: Buffer.from((lines ?? []).map((l) => `${l}\r\n`).join('')), found: lines !== null };
}
