/**
 * The file and queue lists a dashboard polls read a page off an index in the list's order, not a sort of
 * every match: the catalog holds every connected printer's SD card (10^4 to 10^5 files) and finished queue
 * items stay. Like job-query-plans.test.ts, this reads the databases' own plans of the statements the
 * repositories run, so it holds without timing (PostgreSQL with scans and sorts priced out of reach: what
 * matters is that an index CAN serve the statement).
 */
import type { Store } from '../../service/db';
import { dialectStore, plansOf, statementsOf } from '../helpers/dialect-store';
import { describeDialects } from '../helpers/dialects';

/** The plan of each statement `run` makes the store send (those `which` matches: the pages), one line per step. */
async function pagePlans(store: Store, run: () => Promise<unknown>, which = /^select .* order by /): Promise<{ sql: string; plan: string[] }[]> {
  return plansOf(store, (await statementsOf(store, run)).filter(({ sql }) => which.test(sql)));
}

describeDialects('the file and queue lists read their pages off an index', (db) => {
  const store = dialectStore(db, { per: 'block' });

  test("GET /files: the catalog's summary is read from an index alone, not from every row", async () => {
    const planned = await pagePlans(store, () => store.files.summary(), /^select .* from "files"$/);
    expect(planned).toHaveLength(1);
    const text = planned[0].plan.join(' ; ');
    // PostgreSQL reads the index alone once a vacuum has marked the pages all-visible (a fresh table's are not).
    expect(text).toMatch(db.name === 'sqlite' ? /^SCAN files USING COVERING INDEX files_status_size$/ : /(Index Only Scan using|Bitmap Index Scan on) files_status_size\b/);
  });

  /** The page statement of `run`: no full scan of `table`, no sort. */
  async function expectIndexed(table: string, run: () => Promise<unknown>) {
    const planned = await pagePlans(store, run);
    expect(planned).toHaveLength(1);
    const [{ plan }] = planned;
    const text = plan.join(' ; ');
    if (db.name === 'sqlite') {
      expect([text, plan.filter((step) => new RegExp(`^SCAN ${table}$`).test(step) || /USE TEMP B-TREE/.test(step))]).toEqual([text, []]);
    } else {
      expect([text, plan.filter((step) => new RegExp(`Seq Scan on ${table}\\b`).test(step) || /^(->\s+)?(Incremental )?Sort\s+\(/.test(step))]).toEqual([text, []]);
    }
  }

  test.each([
    ['the whole catalog', {}],
    ['one printer', { printer_id: 'x1c-01' }],
    ['one status', { status: 'downloaded' as const }],
  ])('GET /files: %s, newest first', async (_what, filter) => {
    await expectIndexed('files', () => store.files.list({ page: 1, limit: 50, ...filter }));
  });

  test.each([
    ['the whole catalog', {}, 'files_newest'],
    ['one printer', { printer_id: 'x1c-01' }, 'files_printer_newest'],
    ['one status', { status: 'downloaded' as const }, 'files_status_newest'],
  ])('GET /files: a deep page of %s skips index entries, not rows, and reads only its own rows', async (_what, filter, index) => {
    const planned = await pagePlans(store, () => store.files.list({ page: 1000, limit: 50, ...filter }));
    expect(planned).toHaveLength(1);
    const text = planned[0].plan.join(' ; ');
    // The page's ids come off the list's index alone (OFFSET skips index entries); its 50 rows are then read by id.
    if (db.name === 'sqlite') {
      expect(text).toMatch(new RegExp(`^CO-ROUTINE p ; (SCAN|SEARCH) files USING COVERING INDEX ${index}\\b.* ; SCAN p ; SEARCH files USING INDEX sqlite_autoindex_files_1 \\(id=\\?\\)`));
    } else {
      // A fresh table's pages are not all-visible yet, so PostgreSQL may still fetch the ids from the heap: the shape is what counts.
      expect(text).toMatch(new RegExp(`Limit .* ->  Index (Only )?Scan using ${index} on files files_1 .* ->  Index Scan using files_pkey on files .* Index Cond: \\(id = files_1\\.id\\)`));
    }
    expect([text, /USE TEMP B-TREE|Sort\s+\(/.test(text)]).toEqual([text, false]);
  });

  /** The count's and the page's plans of a search. */
  async function searchPlans(filter: { printer_id?: string; status?: 'available' }) {
    const planned = await plansOf(store, await statementsOf(store, () => store.files.list({ page: 1, limit: 50, search: 'benchy', ...filter })));
    expect(planned.map((p) => p.sql.slice(0, 15))).toEqual(['select count(*)', 'select "files".']);
    return { count: planned[0].plan, page: planned[1].plan.join(' ; ') };
  }

  // A contains-search ("%text%") is served by no B-tree index on either database: it stays a walk, bounded as follows.
  test.each([
    ['the whole catalog', {}],
    ['one printer', { printer_id: 'x1c-01' }],
    ['one status', { status: 'available' as const }],
  ])('GET /files?search= in %s: a word of few files is found in the names\' index, not by reading the catalog\'s rows', async (_what, filter) => {
    const { count, page } = await searchPlans(filter);
    if (db.name === 'sqlite') {
      // The total: an index-only walk of the names, not of the rows with their metadata JSON (or the printer's or the status's files).
      expect(count.join(' ; ')).toMatch(/^SCAN files USING COVERING INDEX files_filename$|^SEARCH files USING (COVERING )?INDEX \w+ \((printer_id|status)=\?\)$/);
      // The page: the matches' rowids from the names' index, then those rows by rowid and sorted (the whole catalog),
      // or the printer's or status's index entries in order, kept when their rowid matched: indexes alone either way.
      expect(page).toMatch(/^CO-ROUTINE p ; SEARCH files USING (INTEGER PRIMARY KEY \(rowid=\?\)|COVERING INDEX files_(printer|status)_newest \((printer_id|status)=\?\)) ; LIST SUBQUERY \d+ ; SCAN files USING COVERING INDEX files_filename ; /);
    } else {
      expect([page, /Sort\s+\(/.test(page)]).toEqual([page, false]);
    }
  });

  test('GET /files?search= of a word in many files: the page is read in order and stops after its matches (no sort)', async () => {
    const now = '2026-11-27T10:00:00.000Z';
    await store.printers.insert({
      id: 'many', name: 'Many', type: 'prusa_core', model: 'MK4', ip_address: '127.0.0.1', serial_number: null, access_code: null, is_active: true,
      status: 'online', connection_status: 'connected', status_message: null, firmware_version: null, last_seen: null, created_at: now, updated_at: now,
      mqtt_port: null, ftps_port: null, http_port: null, power_watts: null, auth_method: null,
    });
    const entries = Array.from({ length: 1001 }, (_, i) => ({ id: `m${i}`, path: `/sd/benchy_${i}.gcode`, name: `benchy_${i}.gcode`, file_type: '.gcode', size: 1, modified: null }));
    await store.files.syncPrinter('many', entries, now);
    try {
      const { page } = await searchPlans({});
      expect(page).not.toMatch(/files_filename/);
      expect([page, /USE TEMP B-TREE|Sort\s+\(/.test(page)]).toEqual([page, false]);
    } finally {
      await store.printers.delete('many');
    }
  });

  test.each([
    ['every item', {}],
    ['one status', { statuses: ['completed' as const] }],
  ])("GET /queue: %s, in the dispatcher's order", async (_what, filter) => {
    await expectIndexed('queue_items', () => store.queue.listItems({ page: 1, limit: 50, ...filter }));
  });
});
