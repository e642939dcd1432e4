/**
 * The `klipper` printer type through the API on both databases, and
 * migration 014 on a database that already holds printers and their history.
 */
import path from 'node:path';
import { sql } from 'kysely';
import { openTarget } from '../../service/db/connection';
import { MIGRATIONS } from '../../service/db/migrations';
import type { DB } from '../../service/db/schema';
import { describeDialects } from '../helpers/dialects';
import { startService, tempDir, type Harness } from '../helpers/service';

const voron = (over: Record<string, unknown> = {}) => ({ id: 'voron-01', name: 'Voron #01', type: 'klipper', model: 'Voron 2.4 350', ip_address: '192.168.1.60', ...over });

describeDialects('klipper printers', (db) => {
  let h: Harness;
  afterEach(async () => h?.close());

  test('POST /printers takes type klipper with the Moonraker port and API key; the key stays out of lists', async () => {
    h = await startService(await db.options());
    const created = await h.post('/api/v1/printers', voron({ http_port: 7125, access_code: 'moonraker-secret' }));
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ id: 'voron-01', type: 'klipper' });
    const detail = (await h.get('/api/v1/printers/voron-01')).body;
    expect(detail).toMatchObject({ type: 'klipper', model: 'Voron 2.4 350', http_port: 7125, access_code: 'moonraker-secret', mqtt_port: null, auth_method: null });
    expect(detail.capabilities).toEqual({ has_camera: false, has_ams: false, supports_remote_control: true });
    const list = await h.get('/api/v1/printers?type=klipper');
    expect(list.body.printers.map((p: { id: string }) => p.id)).toEqual(['voron-01']);
    expect(list.text).not.toContain('moonraker-secret');
    // Without a port the default (7125) applies; without a key the printer is a trusted client.
    expect((await h.post('/api/v1/printers', voron({ id: 'sv08', name: 'SV08' }))).status).toBe(201);
    expect((await h.get('/api/v1/printers/sv08')).body).toMatchObject({ http_port: null, access_code: null });
  });

  test('Bambu and PrusaLink settings do not apply to a Klipper printer; an unknown type is still refused', async () => {
    h = await startService(await db.options());
    for (const field of [{ mqtt_port: 8883 }, { ftps_port: 990 }, { auth_method: 'api_key' }]) {
      const res = await h.post('/api/v1/printers', voron(field));
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('INVALID_PRINTER_CONFIG');
      expect(res.body.error.details.fields).toEqual([{ field: Object.keys(field)[0], message: 'does not apply to klipper printers' }]);
    }
    const unknown = await h.post('/api/v1/printers', voron({ type: 'octoprint' }));
    expect(unknown.status).toBe(422);
    expect(unknown.body.error.code).toBe('VALIDATION_ERROR');
    expect((await h.get('/api/v1/printers?type=octoprint')).status).toBe(400); // a bad query parameter
  });

  test('migration 014 widens the type on a database with printers, their status history and maintenance events: nothing is lost', async () => {
    const url = await db.url();
    const dir = tempDir('printfarm-014-');
    const target = { file: path.join(dir, 'printfarm.db'), url };
    const before = Object.fromEntries(Object.entries(MIGRATIONS).filter(([name]) => name < '014'));
    const old = await openTarget<DB>(target, before);
    const now = new Date().toISOString();
    await old.db
      .insertInto('printers')
      .values({ id: 'mk4-01', name: 'MK4', type: 'prusa_core', model: 'MK4', ip_address: '10.0.0.2', serial_number: null, access_code: 'pw', is_active: 1, status: 'online', connection_status: 'connected', status_message: null, firmware_version: null, last_seen: null, created_at: now, updated_at: now, mqtt_port: null, ftps_port: null, http_port: 8080, power_watts: 90, plate_state: 'needs_clearing', plate_auto_clear: 0, auth_method: 'api_key' })
      .execute();
    await sql`INSERT INTO printer_status_history (printer_id, status, connection_status, at) VALUES ('mk4-01', 'online', 'connected', ${now})`.execute(old.db);
    await sql`INSERT INTO maintenance_events (printer_id, kind, notes, performed_at, created_at) VALUES ('mk4-01', 'cleaning', 'nozzle', ${now}, ${now})`.execute(old.db);
    // The database's own error, in words (native errors are not instances of the test realm's Error).
    const outcome = (query: { execute(db: never): Promise<unknown> }, on: unknown) =>
      query.execute(on as never).then(
        () => 'inserted',
        (err: { message?: unknown }) => String(err?.message ?? err),
      );
    const klipperRow = sql`INSERT INTO printers (id, name, type, ip_address, created_at, updated_at) VALUES ('k', 'k', 'klipper', 'h', ${now}, ${now})`;
    expect(await outcome(klipperRow, old.db)).toMatch(/check/i);
    await old.close();

    const conn = await openTarget<DB>(target, MIGRATIONS);
    try {
      const printer = await conn.db.selectFrom('printers').selectAll().where('id', '=', 'mk4-01').executeTakeFirstOrThrow();
      expect(printer).toMatchObject({ type: 'prusa_core', http_port: 8080, power_watts: 90, plate_state: 'needs_clearing', auth_method: 'api_key', access_code: 'pw' });
      const rows = async (query: ReturnType<typeof sql>) => (await query.execute(conn.db)).rows;
      expect(await rows(sql`SELECT printer_id FROM printer_status_history`)).toEqual([{ printer_id: 'mk4-01' }]);
      expect(await rows(sql`SELECT printer_id, notes FROM maintenance_events`)).toEqual([{ printer_id: 'mk4-01', notes: 'nozzle' }]);
      expect(await outcome(klipperRow, conn.db)).toBe('inserted');
      expect(await outcome(sql`INSERT INTO printers (id, name, type, ip_address, created_at, updated_at) VALUES ('o', 'o', 'octoprint', 'h', ${now}, ${now})`, conn.db)).toMatch(/check/i);
      // The foreign keys still hold: deleting the printer takes its maintenance events with it (its history stays).
      await conn.db.deleteFrom('printers').where('id', '=', 'mk4-01').execute();
      expect(await rows(sql`SELECT printer_id FROM maintenance_events`)).toEqual([]);
      expect(await rows(sql`SELECT printer_id FROM printer_status_history`)).toEqual([{ printer_id: 'mk4-01' }]);
    } finally {
      await conn.close();
    }
  });
});
