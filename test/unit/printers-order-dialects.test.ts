/**
 * The printer list (GET /printers, and the order the queue and the fleet go through the printers) is the
 * same on SQLite and on a PostgreSQL database with a real locale: oldest first, printers added in the same
 * millisecond (a script, `db copy` of such a farm) by id in code-point order, as SQLite compares text.
 */
import { dialectStore } from '../helpers/dialect-store';
import { describeDialects, localeDatabaseOptions } from '../helpers/dialects';

describeDialects('printer order', (db) => {
  const store = dialectStore(db, { options: localeDatabaseOptions });

  test('printers of the same creation time are ordered by id as SQLite compares text', async () => {
    const at = '2026-11-27T10:00:00.000Z';
    for (const id of ['mk4-b', 'MK4-c', 'mk4_a', 'mk4-10', 'x1c-1']) {
      await store.printers.insert({
        id, name: id, type: 'prusa_core', model: 'MK4', ip_address: '127.0.0.1', serial_number: null, access_code: null, is_active: true,
        status: 'offline', connection_status: 'disconnected', status_message: null, firmware_version: null, last_seen: null,
        created_at: id === 'x1c-1' ? '2026-11-27T09:00:00.000Z' : at, updated_at: at,
        mqtt_port: null, ftps_port: null, http_port: null, power_watts: null, auth_method: null,
      });
    }
    expect((await store.printers.list()).map((p) => p.id)).toEqual(['x1c-1', 'MK4-c', 'mk4-10', 'mk4-b', 'mk4_a']);
  });
});
