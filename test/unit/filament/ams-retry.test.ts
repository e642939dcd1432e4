/**
 * A spool sync from the AMS report that failed is retried on the printer's next report of any kind, even
 * one of temperatures alone, which filament tracking is otherwise spared (service/printers/fleet.ts
 * telemetry): an idle printer sends nothing else; with no report at all, a timer retries it (util/retry-later.ts).
 * awaitsRetry is what the fleet asks (app.ts);
 * test/e2e/report-cost.test.ts follows a failed update through the running service.
 */
import fs from 'node:fs';
import pino from 'pino';
import { openStore, type Store } from '../../../service/db';
import { EventBus } from '../../../service/events';
import { Filament } from '../../../service/filament';
import type { PrinterState } from '../../../service/printers/driver';
import { SettingsService } from '../../../service/settings';
import { tempDir } from '../../helpers/service';

const TAG = 'A1'.repeat(16);

function idle(nozzle: number): PrinterState {
  return {
    state: 'idle',
    raw_state: 'IDLE',
    temperatures: { nozzle, bed: 25, nozzle_target: 0, bed_target: 0 },
    job: null,
    error: null,
    firmware_version: null,
    model: 'X1C',
    capabilities: null,
    materials: [{ slot: 0, type: 'PLA', color: '#FF0000', remaining_percent: 80, tray_uuid: TAG }],
    active_slot: null,
  };
}

describe('filament: a failed AMS sync', () => {
  let dir: string;
  let store: Store;
  let filament: Filament;

  beforeEach(async () => {
    dir = tempDir();
    store = await openStore(dir);
    const settings = await SettingsService.load(store.settings, {});
    filament = new Filament({ store, settings, bus: new EventBus(), log: pino({ level: 'silent' }), stateOf: () => undefined });
    const now = new Date().toISOString();
    await store.printers.insert({
      id: 'x1', name: 'X1', type: 'bambu_lab', model: 'X1C', ip_address: '127.0.0.1', serial_number: 'S', access_code: 'A', is_active: true,
      status: 'online', connection_status: 'connected', status_message: null, firmware_version: null, last_seen: null, created_at: now, updated_at: now,
      mqtt_port: null, ftps_port: null, http_port: null, power_watts: null, auth_method: null,
    });
  });
  afterEach(async () => {
    await filament.close();
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const spoolsOfX1 = async () => (await store.spools.list({ printer_id: 'x1', page: 1, limit: 10, order_by: 'id', order_dir: 'asc' })).spools;
  /** The store fails once (a locked database) under the printer's first report: its sync fails. */
  const firstSyncFails = async () => {
    const exists = store.printers.exists.bind(store.printers);
    let failures = 1;
    store.printers.exists = (async (id: string) => {
      if (failures-- > 0) throw new Error('database is locked');
      return exists(id);
    }) as typeof exists;
    filament.onReport('x1', idle(30));
    await filament.idle();
    expect(await spoolsOfX1()).toEqual([]);
  };

  test('is retried by the next report, even one of temperatures alone', async () => {
    await firstSyncFails();
    // The fleet asks this before it hands filament a report that moved only temperatures (app.ts).
    expect(filament.awaitsRetry('x1')).toBe(true);
    filament.onReport('x1', idle(29));
    expect(filament.awaitsRetry('x1')).toBe(false); // under way: not handed again meanwhile
    await filament.idle();
    expect(await spoolsOfX1()).toEqual([expect.objectContaining({ rfid_uuid: TAG, slot: 0, material: 'PLA' })]);
  });

  test('is retried by a timer when no report comes', async () => {
    await filament.close();
    const settings = await SettingsService.load(store.settings, {});
    filament = new Filament({ store, settings, bus: new EventBus(), log: pino({ level: 'silent' }), stateOf: () => undefined, retry: { firstMs: 30 } });
    await firstSyncFails();
    const deadline = Date.now() + 5000;
    while ((await spoolsOfX1()).length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(await spoolsOfX1()).toEqual([expect.objectContaining({ rfid_uuid: TAG, slot: 0, material: 'PLA' })]);
    expect(filament.awaitsRetry('x1')).toBe(false);
  });

  test('a sync that keeps failing is retried by the timer `attempts` times, then waits for a report', async () => {
    await filament.close();
    const settings = await SettingsService.load(store.settings, {});
    filament = new Filament({ store, settings, bus: new EventBus(), log: pino({ level: 'silent' }), stateOf: () => undefined, retry: { firstMs: 10, maxMs: 10, attempts: 2 } });
    let tried = 0;
    store.printers.exists = (async () => {
      tried++;
      throw new Error('database is down');
    }) as typeof store.printers.exists;
    filament.onReport('x1', idle(30));
    await new Promise((r) => setTimeout(r, 300));
    await filament.idle();
    // The report's sync and two timed retries; the failures were counted across them, not started afresh.
    expect(tried).toBe(3);
    expect(filament.awaitsRetry('x1')).toBe(true);
  });

  test('no sync failed: reports of temperatures alone are spared filament', async () => {
    filament.onReport('x1', idle(30));
    await filament.idle();
    expect(await spoolsOfX1()).toHaveLength(1);
    expect(filament.awaitsRetry('x1')).toBe(false);
  });
});
