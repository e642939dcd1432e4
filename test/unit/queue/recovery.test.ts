/**
 * A restart takes up the dispatches the stop interrupted with a fixed number of statements, however many there
 * are: the starts and prints under way are watched again from their jobs' progress (read at once), and the cut
 * uploads are retried with one read of their items and one of their files. A farm restarted with dozens of
 * copies under way read a job, an item and a file for each.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import type { DispatchRecord } from '../../../service/db/repositories/queue';
import type { PrinterFacts } from '../../../service/queue/compatibility';
import { FactsCache } from '../../../service/queue/facts-cache';
import { newDispatch } from '../../../service/queue/queued-start';
import { resumeInterrupted, watchAgain, type RecoveryHost } from '../../../service/queue/recovery';
import { prusaGcode } from '../../../service/simulators/seed-files';
import { dialectStore, statementsOf } from '../../helpers/dialect-store';
import { describeDialects } from '../../helpers/dialects';
import { queueItemRecord } from '../../helpers/queue-records';

const NOW = '2026-11-27T10:00:00.000Z';
const SMALL = 3;
const LARGE = 12;

let modelDir: string;
let model: string;
beforeAll(() => {
  modelDir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-recovery-'));
  model = path.join(modelDir, 'cube_MK4S.gcode');
  fs.writeFileSync(model, prusaGcode({ model: 'MK4S' }));
});
afterAll(() => fs.rmSync(modelDir, { recursive: true, force: true }));

const mk4s = (id: string): PrinterFacts => ({ id, name: id, type: 'prusa_core', model: 'MK4S', nozzle_diameter: null, materials: null });

describeDialects('recovery of interrupted dispatches', (db) => {
  const store = dialectStore(db);

  /** What the runner was asked to do, and a host whose printers are all configured and free but `busy` and `removed`. */
  function hostOf(printers: { busy?: string; removed?: string } = {}) {
    const done = { recovered: new Map<string, number>(), launched: new Map<string, string>(), dropped: new Map<string, string>(), forgotten: [] as string[], settled: [] as string[] };
    const host: RecoveryHost = {
      store,
      facts: new FactsCache(),
      log: pino({ level: 'silent' }),
      runner: {
        recover: (d, progress) => void done.recovered.set(d.id, progress),
        forget: (id) => void done.forgotten.push(id),
        owns: () => false,
        drop: async (d, reason) => void done.dropped.set(d.id, reason),
        launch: (d, start) => void done.launched.set(d.id, start.localPath),
      },
      printerFacts: (id) => (id === printers.removed ? undefined : mk4s(id)),
      isFree: (id) => id !== printers.busy,
      settle: async (itemId) => void done.settled.push(itemId),
    };
    return { host, done };
  }

  /** `n` copies of items `<prefix>-item-<i>` (file `<prefix>-file-<i>`), each claimed by printer `<prefix>-mk4s-<i>`, in `state`. */
  async function dispatches(prefix: string, n: number, state: (d: DispatchRecord, i: number) => Promise<unknown>): Promise<DispatchRecord[]> {
    for (let i = 0; i < n; i++) {
      const item = queueItemRecord({ id: `${prefix}-item-${i}`, file_id: `${prefix}-file-${i}`, name: `Part ${i}` });
      await store.queue.insertItem(item);
      const d = newDispatch(item, { id: `${prefix}-mk4s-${i}`, type: 'prusa_core' }, 'cube_MK4S.gcode', { file_id: item.file_id, plate: 1 }, 1);
      expect(await store.queue.claim(d)).toBe(true);
      await state(d, i);
    }
    return (await store.queue.openDispatches()).filter((d) => d.item_id.startsWith(`${prefix}-`));
  }

  /** The SQL `run` sends, an `in (...)` list as one, in a fixed order. */
  const sqlOf = async (run: () => Promise<unknown>) => (await statementsOf(store, run)).map(({ sql }) => sql.replace(/\((?:\?|\$\d+)(?:, (?:\?|\$\d+))*\)/g, '(...)')).sort();

  test('the starts and prints under way are watched again from their jobs\' progress, in as many statements for 12 as for 3', async () => {
    const sent: string[][] = [];
    for (const [prefix, n] of [['small', SMALL], ['large', LARGE]] as const) {
      // Every other copy was printing (its job at 10 + i %), the others had sent their start (no job yet).
      const open = await dispatches(prefix, n, async (d, i) => {
        if (i % 2) return store.queue.updateDispatch(d.id, { state: 'starting', start_sent_at: NOW, updated_at: NOW });
        const job = await store.jobs.insert({ printer_id: d.printer_id, job_name: `Part ${i}`, status: 'printing', progress: 10 + i, created_at: NOW, updated_at: NOW });
        return store.queue.updateDispatch(d.id, { state: 'printing', job_id: job, updated_at: NOW });
      });
      const { host, done } = hostOf();
      sent.push(await sqlOf(() => watchAgain(host, open)));
      expect(open).toHaveLength(n);
      expect(Object.fromEntries(done.recovered)).toEqual(Object.fromEntries(open.map((d) => [d.id, d.job_id === null ? 0 : 10 + Number(d.item_id.split('-').pop())])));
    }
    expect(sent[1]).toEqual(sent[0]);
    expect(sent[0].filter((sql) => /from "jobs"/.test(sql))).toHaveLength(1);
  });

  test('cut uploads are retried with one read of their items and one of their files, in as many statements for 12 as for 3', async () => {
    const sent: string[][] = [];
    for (const [prefix, n] of [['small', SMALL], ['large', LARGE]] as const) {
      // Copy 0's file was deleted meanwhile; the others' files are on the service.
      const open = await dispatches(prefix, n, async (d, i) => {
        if (i > 0) {
          await store.files.insert({
            id: `${prefix}-file-${i}`, printer_id: null, filename: 'cube_MK4S.gcode', original_filename: 'cube_MK4S.gcode', file_type: '.gcode', file_size: fs.statSync(model).size,
            status: 'local', printer_path: null, local_path: model, checksum: null, created_on_printer: null, downloaded_at: null, last_accessed: null,
            download_attempts: 0, metadata: null, error: null, created_at: NOW, updated_at: NOW,
          });
        }
        return store.queue.updateDispatch(d.id, { state: 'uploading', updated_at: NOW });
      });
      // Copy 1's printer is printing something else; copy 2's printer was removed.
      const { host, done } = hostOf({ busy: `${prefix}-mk4s-1`, removed: `${prefix}-mk4s-2` });
      sent.push(await sqlOf(() => resumeInterrupted(host, open)));
      const copy = (i: number) => open.find((d) => d.item_id === `${prefix}-item-${i}`)!;
      expect(Object.fromEntries(done.dropped)).toEqual({ [copy(0).id]: 'the file is no longer available on the service' });
      expect([...done.launched.keys()].sort()).toEqual(open.filter((d) => !/-item-[012]$/.test(d.item_id)).map((d) => d.id).sort());
      expect([...done.launched.values()].every((p) => p === model)).toBe(true);
      expect(done.forgotten).toEqual([`${prefix}-mk4s-2`]);
      expect(done.settled).toEqual([`${prefix}-item-2`]);
      expect((await store.queue.getDispatch(copy(2).id))?.state).toBe('cancelled');
      expect((await store.queue.getDispatch(copy(1).id))?.state).toBe('uploading');
    }
    expect(sent[1]).toEqual(sent[0]);
    expect(sent[0].filter((sql) => /from "queue_items"/.test(sql))).toHaveLength(1);
    expect(sent[0].filter((sql) => /from "files"/.test(sql))).toHaveLength(1);
  });
});
