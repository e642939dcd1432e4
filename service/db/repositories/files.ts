import { sql, type Selectable } from 'kysely';
import type { Db } from '../connection';
import { flavourOf, readSnapshot } from '../dialect';
import type { FilesTable } from '../schema';

export type FileStatus = 'available' | 'downloading' | 'downloaded' | 'local' | 'error';

export interface FileRecord extends Omit<Selectable<FilesTable>, 'metadata' | 'status'> {
  status: FileStatus;
  metadata: Record<string, unknown> | null;
  /** The printer's current name (null for local files). */
  printer_name: string | null;
}

export type FilePatch = Partial<Omit<FileRecord, 'id' | 'printer_name' | 'created_at'>>;

/** A file as a printer lists it. */
export interface PrinterFileEntry {
  id: string;
  path: string;
  name: string;
  file_type: string;
  size: number;
  modified: string | null;
}

export interface FileQuery {
  printer_id?: string;
  status?: FileStatus;
  file_type?: string;
  search?: string;
  page: number;
  limit: number;
}

function toRow(patch: FilePatch): Partial<FilesTable> {
  const { metadata, printer_name: _name, ...rest } = patch as FilePatch & { printer_name?: unknown };
  return { ...rest, ...(metadata === undefined ? {} : { metadata: metadata === null ? null : JSON.stringify(metadata) }) };
}

function toRecord(row: Selectable<FilesTable> & { printer_name: string | null }): FileRecord {
  return { ...row, status: row.status as FileStatus, metadata: row.metadata ? (JSON.parse(row.metadata) as Record<string, unknown>) : null };
}

/** `%` and `_` in a search are text, not wildcards. */
const likeEscape = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`);

/** New files one insert of a listing writes (18 parameters each: within either database's limit). */
const SYNC_BATCH = 200;
/** Ids one `in (...)` of getMany holds. */
const IN_BATCH = 1000;
/** Matches of a search few enough to find by name and sort (see list). */
const FEW_MATCHES = 1000;

export class FilesRepository {
  constructor(private readonly db: Db) {}

  private select() {
    return this.db.selectFrom('files').leftJoin('printers', 'printers.id', 'files.printer_id').selectAll('files').select('printers.name as printer_name');
  }

  async get(id: string): Promise<FileRecord | undefined> {
    const row = await this.select().where('files.id', '=', id).executeTakeFirst();
    return row && toRecord(row);
  }

  /** The files of `ids` in one statement (a queue pass or schedule reads every queued item's file: one query, not one per item). */
  async getMany(ids: readonly string[]): Promise<Map<string, FileRecord>> {
    const out = new Map<string, FileRecord>();
    const unique = [...new Set(ids)];
    // At most IN_BATCH ids a statement: SQLite takes 32766 parameters, and a long queue could pass that.
    for (let from = 0; from < unique.length; from += IN_BATCH) {
      for (const row of await this.select().where('files.id', 'in', unique.slice(from, from + IN_BATCH)).execute()) out.set(row.id, toRecord(row));
    }
    return out;
  }

  async insert(record: Omit<FileRecord, 'printer_name'>): Promise<void> {
    await this.db
      .insertInto('files')
      .values(toRow(record) as FilesTable)
      .execute();
  }

  async update(id: string, patch: FilePatch): Promise<boolean> {
    const result = await this.db.updateTable('files').set(toRow(patch)).where('id', '=', id).executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /** Changes the status only while it is one of `from` (so two downloads can't both start). */
  async transition(id: string, from: readonly FileStatus[], patch: FilePatch): Promise<boolean> {
    const result = await this.db.updateTable('files').set(toRow(patch)).where('id', '=', id).where('status', 'in', from).executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  async delete(id: string): Promise<boolean> {
    const result = await this.db.deleteFrom('files').where('id', '=', id).executeTakeFirst();
    return result.numDeletedRows > 0n;
  }

  /**
   * Brings a printer's rows in line with its listing, in one transaction: new files are added, sizes and
   * dates refreshed, and files gone from the printer removed unless a local copy exists. Every connected
   * printer's listing is applied every 10 minutes: only rows that changed are written, and the new ones are
   * inserted SYNC_BATCH at a time (a statement per file made 500 statements of a printer's unchanged SD card).
   */
  async syncPrinter(printerId: string, entries: PrinterFileEntry[], now: string): Promise<{ added: number; removed: number }> {
    return this.db.transaction().execute(async (trx) => {
      const existing = await trx.selectFrom('files').select(['id', 'printer_path', 'status', 'file_size', 'created_on_printer']).where('printer_id', '=', printerId).execute();
      const known = new Map(existing.map((r) => [r.printer_path, r]));
      const fresh: PrinterFileEntry[] = [];
      for (const e of entries) {
        const row = known.get(e.path);
        if (row) {
          if (Number(row.file_size) !== e.size || row.created_on_printer !== e.modified) {
            await trx.updateTable('files').set({ file_size: e.size, created_on_printer: e.modified, updated_at: now }).where('id', '=', row.id).execute();
          }
          known.delete(e.path);
        } else fresh.push(e);
      }
      for (let from = 0; from < fresh.length; from += SYNC_BATCH) {
        const rows = fresh.slice(from, from + SYNC_BATCH).map((e) => ({
          id: e.id,
          printer_id: printerId,
          filename: e.name,
          original_filename: e.name,
          file_type: e.file_type,
          file_size: e.size,
          status: 'available',
          printer_path: e.path,
          local_path: null,
          checksum: null,
          created_on_printer: e.modified,
          downloaded_at: null,
          last_accessed: null,
          download_attempts: 0,
          metadata: null,
          error: null,
          created_at: now,
          updated_at: now,
        }));
        await trx.insertInto('files').values(rows).onConflict((oc) => oc.doNothing()).execute();
      }
      const added = fresh.length;
      const gone = [...known.values()].filter((r) => r.status === 'available' || r.status === 'error').map((r) => r.id);
      // The status is checked again as the rows are deleted: on PostgreSQL a download that committed since the read
      // above (SQLite's one writer cannot interleave) has a local copy now, and its row stays.
      const removed = gone.length ? Number((await trx.deleteFrom('files').where('id', 'in', gone).where('status', 'in', ['available', 'error']).executeTakeFirst()).numDeletedRows) : 0;
      return { added, removed };
    });
  }

  async list(q: FileQuery): Promise<{ files: FileRecord[]; total: number }> {
    let base = this.db.selectFrom('files');
    if (q.printer_id !== undefined) base = base.where('files.printer_id', '=', q.printer_id);
    if (q.status !== undefined) base = base.where('files.status', '=', q.status);
    if (q.file_type !== undefined) base = base.where('files.file_type', '=', q.file_type);
    const named = q.search ? flavourOf(this.db).likeCi(sql.ref('files.filename'), `%${likeEscape(q.search)}%`) : undefined;
    const { total } = await (named ? base.where(named) : base).select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow();
    // Text anywhere in the name is served by no B-tree index: a page walks the catalog newest first and tests
    // each name, which for a rare word (the usual search for one file) is the whole catalog with its rows. When
    // the count says the matches are few, SQLite finds them in the names' index instead (files_filename holds
    // the rowid), so the page reads indexes alone and sorts those few: 70 ms -> 7 ms for one match among 10^5
    // files. Many matches come densely in the walk, which stops after the page.
    if (named) {
      const few = Number(total) <= FEW_MATCHES && flavourOf(this.db).name === 'sqlite';
      base = base.where(few ? sql<boolean>`files.rowid IN (SELECT rowid FROM files WHERE ${named})` : named);
    }
    // The page's ids first, then its rows: the ids and the order are in the list's indexes (020), so the rows a
    // deep page skips (OFFSET) are index entries, not rows with their metadata JSON (page 1000 of 10^5 files:
    // 21 ms -> 2 ms on SQLite). The spec pages by number (page, limit, total_pages), so a skip it stays.
    const newest = sql<string>`coalesce(files.created_on_printer, files.created_at)`;
    const page = base
      .select(['files.id as page_id', newest.as('page_newest')])
      .orderBy(newest, 'desc')
      .orderBy('files.id')
      .limit(q.limit)
      .offset((q.page - 1) * q.limit);
    // Both databases keep the subquery's order through the joins (a nested loop over it): no sort of the page.
    const rows = await this.db
      .selectFrom(page.as('p'))
      .innerJoin('files', 'files.id', 'p.page_id')
      .leftJoin('printers', 'printers.id', 'files.printer_id')
      .selectAll('files')
      .select('printers.name as printer_name')
      .orderBy('p.page_newest', 'desc')
      .orderBy('p.page_id')
      .execute();
    return { files: rows.map(toRecord), total: Number(total) };
  }

  /** A page of the list with its total and the summary of all files, read on one snapshot (they agree). */
  listWithSummary(q: FileQuery) {
    return readSnapshot(this.db, async (trx) => {
      const repo = new FilesRepository(trx);
      const page = await repo.list(q);
      return { ...page, summary: await repo.summary() };
    });
  }

  async summary() {
    const row = await this.db
      .selectFrom('files')
      .select([
        sql<number>`coalesce(sum(CASE WHEN status = 'available' THEN 1 ELSE 0 END), 0)`.as('available_count'),
        sql<number>`coalesce(sum(CASE WHEN status = 'downloaded' THEN 1 ELSE 0 END), 0)`.as('downloaded_count'),
        sql<number>`coalesce(sum(CASE WHEN status = 'local' THEN 1 ELSE 0 END), 0)`.as('local_count'),
        sql<number>`coalesce(sum(file_size), 0)`.as('total_size'),
        sql<number>`coalesce(sum(CASE WHEN status = 'error' THEN 1 ELSE 0 END), 0)`.as('error_count'),
      ])
      .executeTakeFirstOrThrow();
    const downloaded = Number(row.downloaded_count);
    const failed = Number(row.error_count);
    return {
      available_count: Number(row.available_count),
      downloaded_count: downloaded,
      local_count: Number(row.local_count),
      total_size: Number(row.total_size),
      download_success_rate: downloaded + failed === 0 ? 0 : Math.round((downloaded / (downloaded + failed)) * 1000) / 10,
    };
  }

  /** Files with a local copy, older than `before` (downloaded or added), at least `minSize` bytes, optionally never opened since. */
  async withLocalCopy(filter: { before: string; minSize: number; unusedOnly: boolean }): Promise<FileRecord[]> {
    let q = this.select()
      .where('files.local_path', 'is not', null)
      .where('files.status', 'in', ['downloaded', 'local'])
      .where(sql<string>`coalesce(files.downloaded_at, files.created_at)`, '<=', filter.before)
      .where('files.file_size', '>=', filter.minSize);
    if (filter.unusedOnly) q = q.where(sql<boolean>`(files.last_accessed IS NULL OR files.last_accessed <= ${filter.before})`);
    const rows = await q.orderBy(sql`coalesce(files.downloaded_at, files.created_at)`).execute();
    return rows.map(toRecord);
  }

  /** Printer files with a local copy (id, path, checksum), for moving copies to a new layout. */
  async printerCopies(): Promise<{ id: string; local_path: string; checksum: string | null; status: string }[]> {
    const rows = await this.db
      .selectFrom('files')
      .select(['id', 'local_path', 'checksum', 'status'])
      .where('printer_id', 'is not', null)
      .where('local_path', 'is not', null)
      .execute();
    return rows as { id: string; local_path: string; checksum: string | null; status: string }[];
  }

  /** Every file's id (the orphan sweep keeps what these name). */
  async ids(): Promise<string[]> {
    return (await this.db.selectFrom('files').select('id').execute()).map((r) => r.id);
  }

  /** Where the library's uploads are (local files, no printer). */
  async uploadPaths(): Promise<string[]> {
    const rows = await this.db.selectFrom('files').select('local_path').where('printer_id', 'is', null).where('local_path', 'is not', null).execute();
    return rows.map((r) => r.local_path as string);
  }

  /** A printer's files, catalogued first first (namesakes in two folders: the caller takes the first match). */
  async forPrinter(printerId: string): Promise<FileRecord[]> {
    const rows = await this.select().where('files.printer_id', '=', printerId).orderBy('files.created_at').orderBy('files.id').execute();
    return rows.map(toRecord);
  }

  async count(): Promise<number> {
    const row = await this.db.selectFrom('files').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    return Number(row.n);
  }
}
