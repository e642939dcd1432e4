/** File facts are read once per (file, content, plate) and kept in a small bounded cache. */
import type { FileRecord } from '../db/repositories/files';
import { readFileFacts, type FileFacts } from './file-facts';

const MAX_ENTRIES = 256;

export class FactsCache {
  private readonly entries = new Map<string, Promise<FileFacts>>();

  /** The facts of a file with a local copy; rejects (PreviewError) for a malformed file. */
  get(file: FileRecord & { local_path: string }, plate: number): Promise<FileFacts> {
    const key = `${file.id}\u0000${file.checksum ?? file.updated_at}\u0000${plate}`;
    let facts = this.entries.get(key);
    if (facts) {
      // Most recently used last: the oldest entry is the first to go.
      this.entries.delete(key);
      this.entries.set(key, facts);
      return facts;
    }
    facts = readFileFacts(file.local_path, file.filename, plate);
    facts.catch(() => this.entries.delete(key));
    this.entries.set(key, facts);
    while (this.entries.size > MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value!);
    return facts;
  }
}
