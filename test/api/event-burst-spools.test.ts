/**
 * A farm whose printers all report their AMS at once (a start, a network back), on a real store (SQLite and
 * PostgreSQL): the spool sync takes the printers a few at a time, so that only a few statements wait for the
 * database at once (one sync per printer all at once put every printer's statements in the queue together),
 * and a spool loaded reads itself back into the slot map, not every loaded spool of the farm (which made a
 * farm's first sync read the farm's spools once per tray). Then a burst of prints settled from those spools
 * reads no full slot map either.
 */
import pino from 'pino';
import { EventBus } from '../../service/events';
import { Filament } from '../../service/filament';
import type { PrinterState } from '../../service/printers/driver';
import { SettingsService } from '../../service/settings';
import { nowIso } from '../../service/util/time';
import { dialectStore } from '../helpers/dialect-store';
import { watchWaiting } from '../helpers/db-waiting';
import { describeDialects } from '../helpers/dialects';

// A burst's work takes 7 to 11 s alone and several times that beside the rest of the suite on two cores: its
// own waits are bounded (60 s at most), the test's limit is above them.
jest.setTimeout(90_000);

const log = pino({ level: 'silent' });
const PRINTERS = 60;
const TRAYS = 4;
/** What reloadSlots runs: every loaded spool of the farm. */
const EVERY_LOADED_SPOOL = /from "spools" where "printer_id" is not null/;

const tag = (printer: number, tray: number) => `${String(printer).padStart(4, '0')}${String(tray).padStart(4, '0')}`.repeat(4);

function amsReport(printer: number): PrinterState {
  return {
    state: 'idle', raw_state: 'IDLE', temperatures: { nozzle: 25, bed: 25, nozzle_target: 0, bed_target: 0 }, job: null, error: null,
    firmware_version: null, model: 'X1C', capabilities: null, active_slot: null,
    materials: Array.from({ length: TRAYS }, (_, slot) => ({ slot, type: 'PLA', color: '#FF0000', remaining_percent: 80, tray_uuid: tag(printer, slot), tray_weight_g: 1000 })),
  };
}

describeDialects('spools under a burst', (db) => {
  const store = dialectStore(db, { options: async (d) => ({ ...(await d.options()), poolMax: 4 }) });
  let filament: Filament | undefined;
  afterEach(async () => {
    await filament?.close();
    filament = undefined;
  });

  test(`${PRINTERS} printers report ${TRAYS} RFID spools each in one turn: a few statements wait at a time, no sync reads every loaded spool, each spool is made and loaded once; ${PRINTERS} prints settled from them in one turn read none either`, async () => {
    const at = nowIso();
    for (let p = 0; p < PRINTERS; p++) {
      await store.printers.insert({
        id: `x1-${p}`, name: `X1 ${p}`, type: 'bambu_lab', model: 'X1C', ip_address: '127.0.0.1', serial_number: `S${p}`, access_code: 'A', is_active: true,
        status: 'online', connection_status: 'connected', status_message: null, firmware_version: null, last_seen: null, created_at: at, updated_at: at,
        mqtt_port: null, ftps_port: null, http_port: null, power_watts: null, auth_method: null,
      });
    }
    const bus = new EventBus();
    const settings = await SettingsService.load(store.settings, {});
    const made = filament = new Filament({ store, settings, bus, log, stateOf: () => undefined });
    await made.start();
    const changes = new Map<string, number>();
    bus.on('spool_update', (s) => changes.set(`${s.id}:${s.change}`, (changes.get(`${s.id}:${s.change}`) ?? 0) + 1));
    const fullReads: string[] = [];
    const counting = (text: string) => void (EVERY_LOADED_SPOOL.test(text) && fullReads.push(text));
    store.connection.queryListeners.add(counting);
    const waiting = watchWaiting(store);
    try {
      for (let p = 0; p < PRINTERS; p++) made.onReport(`x1-${p}`, amsReport(p));
      await made.idle();
      // Two printers' syncs at a time, each one statement after the other (a few more wait while a transaction is opened).
      expect(waiting.most()).toBeLessThanOrEqual(4);
      expect(fullReads).toEqual([]);
      for (let p = 0; p < PRINTERS; p++) {
        for (let slot = 0; slot < TRAYS; slot++) expect(made.spools.spoolAt(`x1-${p}`, slot)).toMatchObject({ source: 'local', material: 'PLA', remaining_weight_g: 800 });
      }
      const ids = new Set([...changes.keys()].map((k) => Number(k.split(':')[0])));
      expect(ids.size).toBe(PRINTERS * TRAYS);
      expect([...changes.entries()].filter(([, n]) => n !== 1)).toEqual([]);
      expect(changes.size).toBe(PRINTERS * TRAYS * 2);

      // One print per printer, 10 g from slot 0, ending in one turn: the spools used are read back, not the farm's.
      for (let p = 0; p < PRINTERS; p++) {
        const id = await store.jobs.insert({ printer_id: `x1-${p}`, job_name: `Part ${p}`, status: 'completed', progress: 100, created_at: at, updated_at: at });
        await store.filamentUsage.savePlan({ job_id: id, printer_id: `x1-${p}`, entries: [{ filament: 1, slot: 0, grams: 10, material: 'PLA', color: null }], slots_seen: [0] }, at);
        bus.emit('job_update', { id, job_id: id, printer_id: `x1-${p}`, change: 'status', status: 'completed', progress: 100 });
      }
      await made.idle();
      expect(fullReads).toEqual([]);
      for (let p = 0; p < PRINTERS; p++) expect(made.spools.spoolAt(`x1-${p}`, 0)).toMatchObject({ remaining_weight_g: 790 });
      expect(made.spools.spoolAt('x1-0', 1)).toMatchObject({ remaining_weight_g: 800 });
    } finally {
      waiting.stop();
      store.connection.queryListeners.delete(counting);
    }
  });
});
