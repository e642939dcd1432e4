/**
 * The file catalog's repository gives the same answers on SQLite and PostgreSQL where a caller relies on
 * the order of its rows: a print that names its file without a folder is matched to the first of the
 * printer's files with that name, so "first" must not be whatever order the database's plan reads them
 * in (SQLite: an index, by path; PostgreSQL: an index or, on a larger catalog, the table's physical
 * order, which every refresh of the listing rewrites). And a refresh of the listing, which PostgreSQL runs
 * beside a download (SQLite's one writer runs them one after the other), never drops a downloaded file.
 */
import type { PrinterFileEntry } from '../../service/db/repositories/files';
import { printedFile } from '../../service/monitoring/print-identity';
import { databaseUrlOf, dialectStore, statementsOf } from '../helpers/dialect-store';
import { commitWhileBlocked, describeDialects } from '../helpers/dialects';

const entry = (id: string, path: string): PrinterFileEntry => ({ id, path, name: path.split('/').pop()!, file_type: '.gcode', size: 100, modified: null });

describeDialects('file catalog rows', (db) => {
  const now = '2026-11-27T10:00:00.000Z';
  const store = dialectStore(db, {
    seed: (s) =>
      s.printers.insert({
        id: 'p1', name: 'P1', type: 'prusa_core', model: 'MK4', ip_address: '127.0.0.1', serial_number: null, access_code: null, is_active: true,
        status: 'online', connection_status: 'connected', status_message: null, firmware_version: null, last_seen: null, created_at: now, updated_at: now,
        mqtt_port: null, ftps_port: null, http_port: null, power_watts: null, auth_method: null,
      }),
  });

  test('a print named without its folder is matched to the namesake catalogued first, however often the listing is refreshed', async () => {
    const first = entry('f1', '/usb/cube.gcode');
    const second = entry('f2', '/sd/cube.gcode');
    await store.files.syncPrinter('p1', [first], '2026-11-27T11:00:00.000Z');
    await store.files.syncPrinter('p1', [first, second], '2026-11-27T12:00:00.000Z');
    // The printer lists them in another order now: every row is refreshed, the newer one first.
    await store.files.syncPrinter('p1', [second, first], '2026-11-27T13:00:00.000Z');
    expect((await store.files.forPrinter('p1')).map((f) => f.id)).toEqual(['f1', 'f2']);
    expect(printedFile(await store.files.forPrinter('p1'), { name: 'cube.gcode' })?.printer_path).toBe('/usb/cube.gcode');
  });

  test('a file downloaded while the listing that no longer has it is applied keeps its row (it has a local copy)', async () => {
    const file = entry('f1', '/usb/cube.gcode');
    await store.files.syncPrinter('p1', [file], '2026-11-27T11:00:00.000Z');
    const downloaded = { status: 'downloaded' as const, local_path: '/data/files/f1.gcode', downloaded_at: '2026-11-27T11:30:00.000Z' };
    let result: { added: number; removed: number };
    const url = databaseUrlOf(store);
    if (url === undefined) {
      // SQLite: one writer; the download's write is either before the refresh (kept) or after it (row gone, 404).
      await store.files.transition('f1', ['available', 'downloading'], downloaded);
      result = await store.files.syncPrinter('p1', [], '2026-11-27T12:00:00.000Z');
    } else {
      // PostgreSQL: the download commits between the refresh's read of the rows and its delete.
      result = await commitWhileBlocked(
        url,
        [{ sql: 'UPDATE files SET status = $1, local_path = $2, downloaded_at = $3 WHERE id = $4', params: [downloaded.status, downloaded.local_path, downloaded.downloaded_at, 'f1'] }],
        () => store.files.syncPrinter('p1', [], '2026-11-27T12:00:00.000Z'),
        'the refresh never waited for the download',
      );
    }
    expect(result).toEqual({ added: 0, removed: 0 });
    expect(await store.files.get('f1')).toMatchObject({ status: 'downloaded', local_path: '/data/files/f1.gcode' });
  });

  test('a refresh of an unchanged listing writes nothing, and a new listing is inserted in one statement: as many statements for 25 files as for 5', async () => {
    /** The statements each of `run`'s refreshes sent, ids lists as one. */
    const statements = async (run: () => Promise<unknown>) =>
      (await statementsOf(store, run)).map(({ sql }) => sql.replace(/\((?:\?|\$\d+)(?:, (?:\?|\$\d+))*\)(?:, \((?:\?|\$\d+)(?:, (?:\?|\$\d+))*\))*/g, '(...)'));
    const listing = (n: number, folder: string) => Array.from({ length: n }, (_, i) => entry(`${folder}-${i}`, `/${folder}/part-${i}.gcode`));
    const small = listing(5, 'small');
    const large = listing(25, 'large');
    const added = { small: await statements(() => store.files.syncPrinter('p1', small, '2026-11-27T11:00:00.000Z')) };
    const again = { small: await statements(() => store.files.syncPrinter('p1', small, '2026-11-27T12:00:00.000Z')) };
    const replaced = await statements(() => store.files.syncPrinter('p1', large, '2026-11-27T13:00:00.000Z'));
    const unchanged = await statements(() => store.files.syncPrinter('p1', large, '2026-11-27T14:00:00.000Z'));
    expect(again.small.filter((sql) => /^(update|insert)/.test(sql))).toEqual([]);
    expect(unchanged).toEqual(again.small);
    // 25 new files (and 5 gone) cost what 5 new files did, plus the delete.
    expect(replaced.filter((sql) => !/^delete/.test(sql))).toEqual(added.small);
    expect((await store.files.forPrinter('p1')).map((f) => f.id).sort()).toEqual(large.map((e) => e.id).sort());
    // A changed size or date is still written.
    const grown = large.map((e, i) => (i === 3 ? { ...e, size: 4096, modified: '2026-11-27T14:30:00.000Z' } : e));
    await store.files.syncPrinter('p1', grown, '2026-11-27T15:00:00.000Z');
    expect(await store.files.get('large-3')).toMatchObject({ file_size: 4096, created_on_printer: '2026-11-27T14:30:00.000Z', updated_at: '2026-11-27T15:00:00.000Z' });
    expect(await store.files.get('large-4')).toMatchObject({ file_size: 100, updated_at: '2026-11-27T13:00:00.000Z' });
  });

  test("getMany reads any number of ids (a dispatcher pass asks for every queued item's file)", async () => {
    await store.files.syncPrinter('p1', [entry('f1', '/sd/a.gcode'), entry('f2', '/sd/b.gcode')], '2026-11-27T11:00:00.000Z');
    const ids = [...Array.from({ length: 70_000 }, (_, i) => `missing-${i}`), 'f2', 'f1', 'f2'];
    const found = await store.files.getMany(ids);
    expect([...found.keys()].sort()).toEqual(['f1', 'f2']);
    expect(found.get('f2')).toMatchObject({ printer_path: '/sd/b.gcode', printer_name: 'P1' });
  });

  test('every page of the list, deep ones too, holds the files a sort of all of them gives (newest first, then id; ties and undated files included)', async () => {
    // 1 in 3 without a date on the printer (then their catalogue time, shared by all), 1 in 4 sharing one date.
    const entries = Array.from({ length: 230 }, (_, i) => ({
      ...entry(`f${String(i).padStart(3, '0')}`, `/sd/${i % 7 === 0 ? 'benchy' : 'part'}_${i}.gcode`),
      modified: i % 3 === 0 ? null : i % 4 === 0 ? '2026-11-01T00:00:00.000Z' : new Date(Date.parse('2026-10-01T00:00:00Z') + ((i * 7919) % 230) * 60_000).toISOString(),
    }));
    await store.files.syncPrinter('p1', entries, now);
    const newest = (e: (typeof entries)[number]) => e.modified ?? now;
    for (const filter of [{}, { printer_id: 'p1' }, { status: 'available' as const }, { search: 'BENCHY' }]) {
      const all = entries.filter((e) => !('search' in filter) || /benchy/i.test(e.name));
      all.sort((a, b) => (newest(a) === newest(b) ? (a.id < b.id ? -1 : 1) : newest(a) < newest(b) ? 1 : -1));
      for (const page of [1, 2, 5, 9]) {
        const got = await store.files.list({ ...filter, page, limit: 25 });
        expect([filter, page, got.files.map((f) => f.id), got.total]).toEqual([filter, page, all.slice((page - 1) * 25, page * 25).map((e) => e.id), all.length]);
        expect(got.files.every((f) => f.printer_name === 'P1')).toBe(true);
      }
    }
  });
});
