/**
 * The simulated printer's USB stick: a FAT-like tree where every entry has a
 * long name (what the slicer wrote) and an 8.3 short name made the way FAT
 * makes them ("Shape-Box_0.4n_0.2mm_PLA_MK4S_4m.bgcode" -> "SHAPE-~1.BGC").
 * Buddy's API speaks short names: paths, `name` fields and download refs.
 */

export type EntryType = 'FOLDER' | 'PRINT_FILE' | 'FILE';

export interface FsEntry {
  /** 8.3 short name. */
  sfn: string;
  /** Long name. */
  lfn: string;
  type: EntryType;
  /** Seconds since the epoch. */
  mtime: number;
  data: Buffer | null;
  children: FsEntry[] | null;
  parent: FsEntry | null;
}

const PRINTABLE = /\.(gcode|gco|g|bgcode|bgc)$/i;
const SFN_CHARS = /[^A-Z0-9!#$%&'()@^_`{}~-]/g;

function clean(part: string): string {
  return part.toUpperCase().replace(/[\s.]/g, '').replace(SFN_CHARS, '_');
}

/** The FAT short name for `lfn`, unique among `taken` (upper-case names already in the folder). */
export function shortName(lfn: string, taken: (sfn: string) => boolean): string {
  const dot = lfn.lastIndexOf('.');
  const base = dot > 0 ? lfn.slice(0, dot) : lfn;
  const ext = dot > 0 ? lfn.slice(dot + 1) : '';
  const b = clean(base);
  const e = clean(ext);
  // A name that already is a valid upper-case 8.3 name is its own short name.
  if (b.length > 0 && b.length <= 8 && e.length <= 3 && b === base && e === ext && !taken(lfn.toUpperCase())) return lfn;
  const suffix = e ? `.${e.slice(0, 3)}` : '';
  for (let n = 1; n < 1_000_000; n++) {
    const tail = `~${n}`;
    const candidate = `${(b || '_').slice(0, 8 - tail.length)}${tail}${suffix}`;
    if (!taken(candidate)) return candidate;
  }
  throw new Error('folder full');
}

export function typeOf(lfn: string): EntryType {
  return PRINTABLE.test(lfn) ? 'PRINT_FILE' : 'FILE';
}

const nowSeconds = () => Math.floor(Date.now() / 1000);

export class SimStorage {
  readonly root: FsEntry;

  constructor(
    /** Storage name, "usb" on Buddy. */
    readonly name = 'usb',
    readonly totalSpace = 32 * 1024 ** 3,
  ) {
    this.root = { sfn: name, lfn: name, type: 'FOLDER', mtime: nowSeconds(), data: null, children: [], parent: null };
  }

  /** Resolves path segments under the root, matching short names (any case) or long names. */
  resolve(segments: string[]): FsEntry | null {
    let node: FsEntry = this.root;
    for (const seg of segments) {
      const found = this.child(node, seg);
      if (!found) return null;
      node = found;
    }
    return node;
  }

  child(folder: FsEntry, name: string): FsEntry | null {
    const kids = folder.children ?? [];
    return kids.find((c) => c.lfn === name) ?? kids.find((c) => c.sfn.toUpperCase() === name.toUpperCase()) ?? null;
  }

  /** Stores a file (creating missing folders). Returns null when a file stands where a folder is needed. */
  write(segments: string[], data: Buffer): FsEntry | null {
    const folder = this.mkdirs(segments.slice(0, -1));
    if (!folder) return null;
    const name = segments[segments.length - 1];
    const existing = this.child(folder, name);
    if (existing) {
      if (existing.type === 'FOLDER') return null;
      existing.data = data;
      existing.mtime = nowSeconds();
      return existing;
    }
    return this.add(folder, name, typeOf(name), data);
  }

  mkdirs(segments: string[]): FsEntry | null {
    let node = this.root;
    for (const seg of segments) {
      const next = this.child(node, seg);
      if (next && next.type !== 'FOLDER') return null;
      node = next ?? this.add(node, seg, 'FOLDER', null);
    }
    return node;
  }

  remove(entry: FsEntry): void {
    const kids = entry.parent?.children;
    if (kids) kids.splice(kids.indexOf(entry), 1);
    entry.parent = null;
  }

  /** "/usb/FOLDER~1/SHAPE-~1.BGC": the short-name path, as Buddy gives it. */
  pathOf(entry: FsEntry): string {
    const parts: string[] = [];
    for (let e: FsEntry | null = entry; e && e !== this.root; e = e.parent) parts.unshift(e.sfn);
    return `/${this.name}${parts.length ? '/' + parts.join('/') : ''}`;
  }

  /** "folder/Long name.gcode": the long-name path relative to the root. */
  longPathOf(entry: FsEntry): string {
    const parts: string[] = [];
    for (let e: FsEntry | null = entry; e && e !== this.root; e = e.parent) parts.unshift(e.lfn);
    return parts.join('/');
  }

  /** Every file (not folder), depth first. */
  files(folder: FsEntry = this.root): FsEntry[] {
    return (folder.children ?? []).flatMap((c) => (c.type === 'FOLDER' ? this.files(c) : [c]));
  }

  /** Finds a file by long name, short name, long or short relative path, or "/usb/..." path. */
  find(name: string): FsEntry | null {
    const trimmed = name.trim();
    const segments = trimmed.split('/').filter(Boolean);
    if (segments[0] === this.name && segments.length > 1) {
      const hit = this.resolve(segments.slice(1));
      if (hit) return hit;
    }
    const direct = this.resolve(segments);
    if (direct) return direct;
    const all = this.files();
    return all.find((f) => f.lfn === trimmed) ?? all.find((f) => f.sfn.toUpperCase() === trimmed.toUpperCase()) ?? null;
  }

  usedBytes(): number {
    return this.files().reduce((n, f) => n + (f.data?.length ?? 0), 0);
  }

  private add(folder: FsEntry, lfn: string, type: EntryType, data: Buffer | null): FsEntry {
    const kids = folder.children!;
    const sfn = shortName(lfn, (s) => kids.some((c) => c.sfn.toUpperCase() === s.toUpperCase()));
    const entry: FsEntry = { sfn, lfn, type, mtime: nowSeconds(), data, children: type === 'FOLDER' ? [] : null, parent: folder };
    kids.push(entry);
    return entry;
  }
}
