/**
 * Two spools put into one slot at the same time (SQLite and PostgreSQL): the later one ends in the slot and
 * the earlier one is taken out, as on SQLite, whose one connection runs the two loads one after the other.
 * On PostgreSQL they run side by side; the test makes the other load commit exactly while this one is about
 * to write (a second connection holds it uncommitted until this one waits for it).
 */
import { databaseUrlOf, dialectStore } from '../helpers/dialect-store';
import { commitWhileBlocked, describeDialects } from '../helpers/dialects';

const NOW = '2026-11-27T10:00:00.000Z';
const SLOT = { printer_id: 'p1', slot: 3 };

describeDialects('two loads of one slot at once', (db) => {
  const store = dialectStore(db, {
    seed: (s) =>
      s.printers.insert({
        id: 'p1', name: 'P1', type: 'bambu_lab', model: 'X1C', ip_address: '127.0.0.1', serial_number: 'S', access_code: 'A', is_active: true,
        status: 'online', connection_status: 'connected', status_message: null, firmware_version: null, last_seen: null, created_at: NOW, updated_at: NOW,
        mqtt_port: null, ftps_port: null, http_port: null, power_watts: null, auth_method: null,
      }),
  });

  /**
   * Runs `first` (SQL of the other load) uncommitted on a connection of its own, starts `second`, commits
   * `first` once `second` waits for its rows (PostgreSQL); on SQLite both loads run through the store at once.
   */
  async function race<T>(first: { sql: string; params: unknown[] }[], firstOnStore: () => Promise<unknown>, second: () => Promise<T>): Promise<T> {
    const url = databaseUrlOf(store);
    if (url === undefined) return (await Promise.all([firstOnStore(), second()]))[1];
    return commitWhileBlocked(url, first, second, 'the second load never waited for the first');
  }

  const spool = (material: string) =>
    store.spools.insert({ material, color: null, brand: null, name: null, diameter_mm: 1.75, density_g_cm3: null, initial_weight_g: 1000, remaining_weight_g: 1000, cost_per_kg: null, location: null, printer_id: null, slot: null, rfid_uuid: null, archived: false, created_at: NOW, updated_at: NOW });

  test('embedded spools: the second load takes the first spool out of the slot', async () => {
    const a = await spool('PLA');
    const b = await spool('PETG');
    const displaced = await race(
      [{ sql: 'UPDATE spools SET printer_id = $1, slot = $2, updated_at = $3 WHERE id = $4', params: [SLOT.printer_id, SLOT.slot, NOW, a.id] }],
      () => store.spools.assign(a.id, SLOT, {}, NOW),
      () => store.spools.assign(b.id, SLOT, {}, NOW),
    );
    expect(displaced).toBe(a.id);
    expect((await store.spools.assigned()).map((s) => [s.id, s.printer_id, s.slot])).toEqual([[b.id, 'p1', 3]]);
  });

  test('Spoolman spools: the second load replaces the first in the slot', async () => {
    await race(
      [{ sql: 'INSERT INTO spoolman_slots (printer_id, slot, spoolman_id, assigned_at) VALUES ($1, $2, $3, $4)', params: [SLOT.printer_id, SLOT.slot, 7, NOW] }],
      () => store.spools.assignSpoolman(7, SLOT, NOW),
      () => store.spools.assignSpoolman(8, SLOT, NOW),
    );
    expect(await store.spools.spoolmanSlots()).toEqual([{ printer_id: 'p1', slot: 3, spoolman_id: 8 }]);
  });
});
