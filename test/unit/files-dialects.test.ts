/**
 * The file catalog's repository gives the same answers on SQLite and PostgreSQL where a caller relies on
 * the order of its rows: a print that names its file without a folder is matched to the first of the
 * printer's files with that name, so "first" must not be whatever order the database's plan reads them
 * in (SQLite: an index, by path; PostgreSQL: an index or, on a larger catalog, the table's physical
 * order, which every refresh of the listing rewrites).
 */
import fs from 'node:fs';
import { openStore, type Store } from '../../service/db';
import type { PrinterFileEntry } from '../../service/db/repositories/files';
import { printedFile } from '../../service/monitoring/print-identity';
import { describeDialects } from '../helpers/dialects';
import { tempDir } from '../helpers/service';

const entry = (id: string, path: string): PrinterFileEntry => ({ id, path, name: path.split('/').pop()!, file_type: '.gcode', size: 100, modified: null });

describeDialects('file catalog rows', (db) => {
  let dir: string;
  let store: Store;
  beforeEach(async () => {
    dir = tempDir();
    store = await openStore(dir, await db.options());
    const now = '2026-11-27T10:00:00.000Z';
    await store.printers.insert({
      id: 'p1', name: 'P1', type: 'prusa_core', model: 'MK4', ip_address: '127.0.0.1', serial_number: null, access_code: null, is_active: true,
      status: 'online', connection_status: 'connected', status_message: null, firmware_version: null, last_seen: null, created_at: now, updated_at: now,
      mqtt_port: null, ftps_port: null, http_port: null, power_watts: null, auth_method: null,
    });
  });
  afterEach(async () => {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
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
});
