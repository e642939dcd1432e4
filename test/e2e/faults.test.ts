/**
 * Faults: printers that drop off or hang mid-print and mid-download, and the
 * service itself killed with SIGKILL mid-print and mid-download and started
 * again on the same data dir. After each: no job lost or doubled, no file
 * marked downloaded unless its bytes are complete and checksummed, no temp
 * file passing for a file, and the database passes `PRAGMA integrity_check`.
 *
 * Already covered elsewhere, and extended here rather than repeated:
 * - test/e2e/files.test.ts "an interrupted transfer never leaves a file marked
 *   downloaded": Bambu dropped mid-download until the attempts run out. Here:
 *   both printer kinds, what the catalog shows meanwhile, and the redo after
 *   the printer returns is byte-exact.
 * - test/e2e/fleet.test.ts "a stalled printer is marked offline by the
 *   watchdog" (idle printer). Here: stalled mid-print, back, same single job.
 * - test/e2e/jobs.test.ts "restarting the service three times mid-print"
 *   (clean stops, in process). Here: SIGKILL of `printfarm serve`.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { driverFactory } from '../../service/printers/drivers';
import { seedFiles } from '../../service/simulators/seed-files';
import { startFarm, type SimulatedFarm } from '../../service/simulators';
import { killChildren, spawnService, type ChildService } from '../helpers/child-service';
import { control, simState, until } from '../helpers/farm';
import { startService, tempDir, type Harness, type JsonResponse } from '../helpers/service';
import { connectWs, type WsClient } from '../helpers/ws';

/* eslint-disable @typescript-eslint/no-explicit-any */
type Api = { get(p: string): Promise<JsonResponse>; post(p: string, b?: unknown): Promise<JsonResponse> };

const sha = (b: Buffer) => `sha256:${createHash('sha256').update(b).digest('hex')}`;
/** The G-code both kinds of simulated printer hold (40 kB: slow enough to interrupt when throttled). */
const GCODE = 'cube_0.2mm_PLA_MK4S_12m.gcode';
const gcodeBytes = seedFiles().find((f) => f.name === GCODE)!.data;

const serviceOptions = {
  driverFactory: driverFactory({ backoffBaseMs: 100, backoffMaxMs: 1000 }),
  fleet: { watchdogMs: 1500, commandTimeoutMs: 3000, pollMs: 200, connectTimeoutMs: 4000 },
  downloads: { attempts: 2, retryDelayMs: 100, frameIntervalMs: 50 },
};

const jobsOf = async (api: Api, printerId: string) => (await api.get(`/api/v1/jobs?printer_id=${printerId}`)).body.jobs as Record<string, any>[];
const printerOf = async (api: Api, printerId: string) => (await api.get(`/api/v1/printers/${printerId}`)).body as Record<string, any>;
const connected = (api: Api, printerId: string, ms = 15_000) => until(async () => (await printerOf(api, printerId)).connection_status === 'connected', `${printerId} connected`, ms);
const fileOf = async (api: Api, fileId: string) => (await api.get(`/api/v1/files/${fileId}`)).body as Record<string, any>;
/** The catalog's entry for `name` on a printer, once the printer's files are listed. */
const catalogEntry = (api: Api, printerId: string, name: string, ms = 15_000) =>
  until(async () => ((await api.get(`/api/v1/files?printer_id=${printerId}&limit=100`)).body.files as Record<string, any>[]).find((f) => f.filename === name), `${name} listed`, ms);
const printableOf = async (controlUrl: string, type: unknown) =>
  (await simState(controlUrl)).files.find((f) => (type === 'bambu_lab' ? /\.3mf$/i : type === 'klipper' ? /\.gcode$/i : /\.bgcode$/i).test(f))!;

/** Temp files (`<name>.part-<pid>-<stamp>`) anywhere under DATA_DIR/files. */
const partials = (dataDir: string) => {
  const dir = path.join(dataDir, 'files');
  return fs.existsSync(dir) ? fs.readdirSync(dir, { recursive: true }).map(String).filter((n) => /\.part-/.test(n)) : [];
};

/** Opens the database file directly (as after a crash), checks it and reads what a test asserts on; always closes it. */
function inspectDb(dataDir: string) {
  const db = new Database(path.join(dataDir, 'printfarm.db'));
  try {
    return {
      integrity: db.pragma('integrity_check', { simple: true }),
      jobs: db.prepare('SELECT id, printer_id, status, progress, print_key FROM jobs ORDER BY id').all() as Record<string, any>[],
      files: new Map((db.prepare('SELECT id, status, local_path, checksum, file_size FROM files').all() as Record<string, any>[]).map((f) => [f.id as string, f])),
    };
  } finally {
    db.close();
  }
}

/** Waits until the service has handled every printer report so far, so that counting frames afterwards is fair. */
const settled = async (h: Harness) => h.service.context.tracker.idle();

describe('printers that drop off or hang (service in process)', () => {
  let farm: SimulatedFarm | undefined;
  let h: Harness | undefined;
  let ws: WsClient | undefined;
  afterEach(async () => {
    await ws?.close();
    await h?.close();
    await farm?.close();
    ws = h = farm = undefined;
  }, 60_000);

  const start = async (kind: 'bambu' | 'prusa' | 'klipper', speed: number) => {
    farm = await startFarm({ [kind]: 1, speed });
    h = await startService(serviceOptions);
    ws = await connectWs(h.base);
    const { printer, control_url } = farm.printers[0];
    expect((await h.post('/api/v1/printers', printer)).status).toBe(201);
    await connected(h, printer.id);
    return { printer, control_url, h, ws };
  };

  test.each(['bambu', 'prusa', 'klipper'] as const)(
    'a %s printer dropped mid-print, back, dropped again and finishing while away: one job, completed exactly once',
    async (kind) => {
      const { printer, control_url, h, ws } = await start(kind, 20);
      await control(control_url, 'print', { file: await printableOf(control_url, printer.type) });
      const job = await until(async () => (await jobsOf(h, printer.id)).find((j) => j.status === 'printing'), 'job printing');

      // Dropped and back while still printing: the same job goes on.
      await control(control_url, 'offline');
      await until(async () => (await printerOf(h, printer.id)).status === 'offline', 'offline');
      expect(await jobsOf(h, printer.id)).toEqual([expect.objectContaining({ id: job.id, status: 'printing' })]);
      await control(control_url, 'online');
      await connected(h, printer.id);
      await until(async () => (await printerOf(h, printer.id)).status === 'printing', 'printing again');
      const progressed = (await simState(control_url)).progress;
      await until(async () => (await jobsOf(h, printer.id))[0].progress >= Math.max(1, progressed), 'job follows the print again');

      // Dropped again, and the print ends while nobody can see it.
      await control(control_url, 'offline');
      await until(async () => (await printerOf(h, printer.id)).status === 'offline', 'offline again');
      await control(control_url, 'finish');
      expect((await simState(control_url)).status).toMatch(/^(finished|complete)$/i);
      expect((await jobsOf(h, printer.id))[0].status).toBe('printing');
      await control(control_url, 'online');
      // Back, then the end: the Klipper case timed out here in CI and was given 20 s, but no wait outlasts what did
      // it, a reconnect race (fixed; made certain in klipper-service.test.ts "dropped mid-print while Moonraker
      // answers late"): deltas during the new subscription's setup read as an idle printer, so the job was ended
      // as cancelled and the completion never came.
      await connected(h, printer.id);
      const done = await until(async () => (await jobsOf(h, printer.id)).find((j) => j.status === 'completed'), 'completed after coming back').catch(async (err: Error) => {
        // What the service and the printer show when it does not come: whether the job ended otherwise, or not at all.
        const p = await printerOf(h, printer.id);
        const seen = { printer: { status: p.status, connection_status: p.connection_status, status_message: p.status_message }, jobs: (await jobsOf(h, printer.id)).map((j) => ({ id: j.id, status: j.status, progress: j.progress })), sim: (await simState(control_url)).status };
        throw new Error(`${err.message}: ${JSON.stringify(seen)}`);
      });
      expect(done).toMatchObject({ id: job.id, progress: 100, end_time: expect.any(String) });
      await until(async () => (await printerOf(h, printer.id)).status === 'online', 'printer online and idle');
      await settled(h);

      expect(await jobsOf(h, printer.id)).toHaveLength(1);
      expect(ws.frames.filter((f) => f.type === 'job_auto_created')).toHaveLength(1);
      // An ended job's later updates (its filament usage, change 'updated') are not a second end.
      const ends = ws.frames.filter((f) => f.type === 'job_update' && f.data.id === job.id && f.data.change !== 'updated' && ['completed', 'failed', 'cancelled'].includes(String(f.data.status)));
      expect(ends.map((f) => f.data.status)).toEqual(['completed']);
      expect((await printerOf(h, printer.id)).statistics).toMatchObject({ total_jobs: 1, successful_jobs: 1, failed_jobs: 0 });
      expect(inspectDb(h.dataDir).integrity).toBe('ok');
    },
    // Nine waits, each bounded (10-15 s) by until(): the test's own limit is above their sum under CI load, so a
    // step that is stuck fails with its own name (CI once stopped the Bambu run at 30 s without saying where).
    60_000,
  );

  test.each(['bambu', 'prusa'] as const)(
    'a %s printer dropped mid-download: nothing marked downloaded, no temp file listed or left; the redo after it returns is byte-exact',
    async (kind) => {
      const { printer, control_url, h } = await start(kind, 50);
      const file = await catalogEntry(h, printer.id, GCODE);
      const listed = (await h.get(`/api/v1/files?printer_id=${printer.id}&limit=100`)).body.files.length;
      await control(control_url, 'faults', { transfer_bytes_per_sec: 10_000 });
      expect((await h.post(`/api/v1/files/${file.id}/download`)).status).toBe(202);
      await until(async () => {
        const s = (await h.get(`/api/v1/files/${file.id}/download/status`)).body;
        return s.bytes_downloaded > 0 && s.bytes_downloaded < gcodeBytes.length;
      }, 'bytes arriving');

      // Mid-transfer: the bytes go to a temp file that is no file of the catalog. Waited for: under CI load an
      // attempt can fail and its retry (downloads.attempts) start a new temp file after the status was read.
      await until(() => partials(h.dataDir).length === 1, 'one temp file');
      const during = (await h.get(`/api/v1/files?printer_id=${printer.id}&limit=100`)).body;
      expect(during.files).toHaveLength(listed);
      expect(during.files.filter((f: { filename: string }) => /\.part-/.test(f.filename))).toEqual([]);
      expect(during.summary.downloaded_count).toBe(0);
      expect(await fileOf(h, file.id)).toMatchObject({ status: 'downloading', local_path: null });
      expect((await h.get(`/api/v1/files/${file.id}/content`)).status).toBe(409);

      await control(control_url, 'offline');
      const failed = await until(async () => {
        const s = (await h.get(`/api/v1/files/${file.id}/download/status`)).body;
        return s.status === 'failed' ? s : null;
      }, 'download failed', 20_000);
      expect(failed.error).toEqual(expect.any(String));
      const broken = await fileOf(h, file.id);
      expect(broken).toMatchObject({ status: 'error', local_path: null, content_url: null, download_url: `/api/v1/files/${file.id}/download` });
      expect(broken.checksum).toBeUndefined();
      expect(partials(h.dataDir)).toEqual([]);
      expect((await h.get(`/api/v1/files/${file.id}/content`)).body.error.code).toBe('NO_LOCAL_COPY');
      expect((await h.get(`/api/v1/files?printer_id=${printer.id}&limit=100`)).body.summary.downloaded_count).toBe(0);

      // Back: a new download gives exactly the printer's bytes.
      await control(control_url, 'online');
      await control(control_url, 'faults', { transfer_bytes_per_sec: 0 });
      await connected(h, printer.id);
      expect((await h.post(`/api/v1/files/${file.id}/download`)).status).toBe(202);
      await until(async () => (await h.get(`/api/v1/files/${file.id}/download/status`)).body.status === 'completed', 'redo completed');
      const done = await fileOf(h, file.id);
      expect(done).toMatchObject({ status: 'downloaded', checksum: sha(gcodeBytes), file_size: gcodeBytes.length, download_attempts: 3, error: null });
      expect(fs.readFileSync(path.join(h.dataDir, done.local_path)).equals(gcodeBytes)).toBe(true);
      const content = await fetch(`${h.base}/api/v1/files/${file.id}/content`);
      expect(Buffer.from(await content.arrayBuffer()).equals(gcodeBytes)).toBe(true);
      expect(partials(h.dataDir)).toEqual([]);
      expect(inspectDb(h.dataDir).integrity).toBe('ok');
    },
    30_000,
  );

  test(
    'a stalled MQTT link mid-print: the watchdog marks the printer offline, it reconnects, and the print is still its one job',
    async () => {
      const { printer, control_url, h, ws } = await start('bambu', 20);
      await control(control_url, 'print', { file: await printableOf(control_url, printer.type) });
      const job = await until(async () => (await jobsOf(h, printer.id)).find((j) => j.status === 'printing'), 'job printing');
      const connectionsBefore = (await simState(control_url) as any).stats.mqtt_connections;

      await control(control_url, 'stall');
      const offline = await until(async () => {
        const p = await printerOf(h, printer.id);
        return p.status === 'offline' ? p : null;
      }, 'offline by the watchdog', 10_000);
      expect(offline.connection_status).not.toBe('connected');
      await ws.next((f) => f.type === 'system_alert' && f.data.printer_id === printer.id && f.data.status === 'offline');
      // The hang ends no job: a silent printer is not a finished print.
      expect(await jobsOf(h, printer.id)).toEqual([expect.objectContaining({ id: job.id, status: 'printing' })]);

      await control(control_url, 'online');
      await connected(h, printer.id);
      await until(async () => (await printerOf(h, printer.id)).status === 'printing', 'printing after reconnect');
      expect((await simState(control_url) as any).stats.mqtt_connections).toBeGreaterThan(connectionsBefore);
      const progress = (await simState(control_url)).progress;
      const moving = await until(async () => {
        const jobs = await jobsOf(h, printer.id);
        return jobs.length === 1 && jobs[0].progress >= Math.max(1, progress) ? jobs[0] : null;
      }, 'the same job follows the print');
      expect(moving).toMatchObject({ id: job.id, status: 'printing' });

      await control(control_url, 'finish');
      await until(async () => (await jobsOf(h, printer.id))[0].status === 'completed', 'completed');
      await settled(h);
      expect((await jobsOf(h, printer.id)).map((j) => [j.id, j.status])).toEqual([[job.id, 'completed']]);
      expect(ws.frames.filter((f) => f.type === 'job_auto_created')).toHaveLength(1);
    },
    30_000,
  );
});

describe('printfarm serve killed with SIGKILL and started again on the same data dir', () => {
  let farm: SimulatedFarm | undefined;
  let dataDir: string | undefined;
  afterEach(async () => {
    await killChildren();
    await farm?.close();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
    farm = dataDir = undefined;
  });

  /** For a wait that fails: what the service and the printer showed, and the end of what the service logged. */
  const told = (svc: ChildService, printerId: string, controlUrl: string) => async (err: Error): Promise<never> => {
    const p = await printerOf(svc, printerId).catch(() => null);
    const jobs = (await jobsOf(svc, printerId).catch(() => [])).map((j) => ({ id: j.id, status: j.status, progress: j.progress }));
    const seen = { printer: p && { status: p.status, connection_status: p.connection_status, status_message: p.status_message }, jobs, sim: (await simState(controlUrl)).status };
    throw new Error(`${err.message}: ${JSON.stringify(seen)}\n${svc.output().slice(-2000)}`);
  };

  /** SIGKILL, then the database file as the next start will find it. */
  const crash = async (svc: ChildService) => {
    expect(await svc.kill('SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });
    const db = inspectDb(svc.dataDir);
    expect(db.integrity).toBe('ok');
    return db;
  };

  test(
    'mid-print, twice (once while the print ends): exactly one job for the print, completed, none lost',
    async () => {
      // Speed 10: the print (45 s heating + 600 s printing, printer time) outlasts every restart; it ends by /finish.
      farm = await startFarm({ bambu: 1, speed: 10 });
      const { printer, control_url } = farm.printers[0];
      dataDir = tempDir('printfarm-faults-');
      let svc = await spawnService(dataDir);
      expect((await svc.post('/api/v1/printers', printer)).status).toBe(201);
      await connected(svc, printer.id);
      await control(control_url, 'print', { file: await printableOf(control_url, printer.type) });
      const job = await until(async () => (await jobsOf(svc, printer.id)).find((j) => j.status === 'printing'), 'job printing');

      // 1. Killed mid-print; the job is in the file, once.
      let db = await crash(svc);
      expect(db.jobs).toEqual([expect.objectContaining({ id: job.id, printer_id: printer.id, status: 'printing' })]);

      // Started again: the running print is the same job, and the job follows it. 'connected' is this process's
      // link: the record said 'connected' from the killed process until the new connection test ended (4e75877),
      // so this wait waited for nothing and the next one had the whole reconnect in its 15 s.
      svc = await spawnService(dataDir);
      await connected(svc, printer.id).catch(told(svc, printer.id, control_url));
      const progress = (await simState(control_url)).progress;
      const followed = await until(async () => {
        const jobs = await jobsOf(svc, printer.id);
        return jobs.length === 1 && jobs[0].progress >= Math.max(1, progress) + 1 ? jobs[0] : null;
      }, 'the restarted service follows the same job', 15_000).catch(told(svc, printer.id, control_url));
      expect(followed).toMatchObject({ id: job.id, status: 'printing' });

      // 2. Killed again; the print ends while the service is down.
      db = await crash(svc);
      expect(db.jobs).toEqual([expect.objectContaining({ id: job.id, status: 'printing' })]);
      await control(control_url, 'finish');

      svc = await spawnService(dataDir);
      await connected(svc, printer.id).catch(told(svc, printer.id, control_url));
      const done = await until(async () => (await jobsOf(svc, printer.id)).find((j) => j.status === 'completed'), 'completed after the restart', 15_000).catch(told(svc, printer.id, control_url));
      expect(done).toMatchObject({ id: job.id, progress: 100, end_time: expect.any(String) });
      expect(await jobsOf(svc, printer.id)).toHaveLength(1);
      expect((await printerOf(svc, printer.id)).statistics).toMatchObject({ total_jobs: 1, successful_jobs: 1 });

      // What is on disk after a last SIGKILL agrees: one job, completed.
      db = await crash(svc);
      expect(db.jobs).toEqual([expect.objectContaining({ id: job.id, status: 'completed', progress: 100 })]);
    },
    50_000,
  );

  test(
    'mid-download: the half file is swept, nothing is marked downloaded, and a new download is byte-exact',
    async () => {
      farm = await startFarm({ bambu: 1, speed: 50 });
      const { printer, control_url } = farm.printers[0];
      dataDir = tempDir('printfarm-faults-');
      let svc = await spawnService(dataDir);
      expect((await svc.post('/api/v1/printers', printer)).status).toBe(201);
      await connected(svc, printer.id);
      const file = await catalogEntry(svc, printer.id, GCODE);
      await control(control_url, 'faults', { transfer_bytes_per_sec: 8_000 });
      expect((await svc.post(`/api/v1/files/${file.id}/download`)).status).toBe(202);
      await until(async () => {
        const s = (await svc.get(`/api/v1/files/${file.id}/download/status`)).body;
        return s.bytes_downloaded > 0 && s.bytes_downloaded < gcodeBytes.length;
      }, 'bytes arriving');
      await until(() => partials(dataDir!).length === 1, 'a temp file on disk');

      const db = await crash(svc);
      // The crash leaves a half temp file and a row that is not `downloaded`.
      const [part] = partials(dataDir);
      expect(fs.statSync(path.join(dataDir, 'files', part)).size).toBeLessThan(gcodeBytes.length);
      expect(db.files.get(file.id)).toMatchObject({ local_path: null, checksum: null });
      expect(db.files.get(file.id)?.status).not.toBe('downloaded');

      // Started again: the temp file is gone and the file is plainly available again, not stuck "downloading".
      svc = await spawnService(dataDir);
      expect(partials(dataDir)).toEqual([]);
      await until(async () => (await fileOf(svc, file.id)).status === 'available', 'available after the restart', 10_000);
      expect(await fileOf(svc, file.id)).toMatchObject({ local_path: null, content_url: null, download_url: `/api/v1/files/${file.id}/download` });
      expect((await svc.get(`/api/v1/files/${file.id}/content`)).status).toBe(409);
      expect((await svc.get(`/api/v1/files/${file.id}/download/status`)).body.error.code).toBe('DOWNLOAD_NOT_FOUND');
      const listing = (await svc.get(`/api/v1/files?printer_id=${printer.id}&limit=100`)).body;
      expect(listing.summary.downloaded_count).toBe(0);
      expect(listing.files.filter((f: { filename: string }) => /\.part-/.test(f.filename))).toEqual([]);

      // A new download gives exactly the printer's bytes.
      await control(control_url, 'faults', { transfer_bytes_per_sec: 0 });
      await connected(svc, printer.id);
      expect((await svc.post(`/api/v1/files/${file.id}/download`)).status).toBe(202);
      await until(async () => (await svc.get(`/api/v1/files/${file.id}/download/status`)).body.status === 'completed', 'download completed');
      const done = await fileOf(svc, file.id);
      expect(done).toMatchObject({ status: 'downloaded', checksum: sha(gcodeBytes), file_size: gcodeBytes.length });
      // local_path is shown relative to the data dir; the database keeps the absolute path.
      const stored = path.join(dataDir, done.local_path);
      expect(fs.readFileSync(stored).equals(gcodeBytes)).toBe(true);
      const content = await fetch(`${svc.base}/api/v1/files/${file.id}/content`);
      expect(Buffer.from(await content.arrayBuffer()).equals(gcodeBytes)).toBe(true);

      // Downloaded again and killed mid-way: the complete copy from before is untouched and stays `downloaded`.
      await control(control_url, 'faults', { transfer_bytes_per_sec: 8_000 });
      expect((await svc.post(`/api/v1/files/${file.id}/download`)).status).toBe(202);
      await until(async () => (await svc.get(`/api/v1/files/${file.id}/download/status`)).body.bytes_downloaded > 0, 'bytes arriving again');
      await until(() => partials(dataDir!).length === 1, 'a temp file on disk again');
      const again = await crash(svc);
      expect(again.files.get(file.id)).toMatchObject({ local_path: stored, checksum: sha(gcodeBytes) });
      expect(fs.readFileSync(stored).equals(gcodeBytes)).toBe(true);

      svc = await spawnService(dataDir);
      expect(partials(dataDir)).toEqual([]);
      await until(async () => (await fileOf(svc, file.id)).status === 'downloaded', 'downloaded after the restart', 10_000);
      expect(await fileOf(svc, file.id)).toMatchObject({ local_path: done.local_path, checksum: sha(gcodeBytes), file_size: gcodeBytes.length });
      const kept = await fetch(`${svc.base}/api/v1/files/${file.id}/content`);
      expect(Buffer.from(await kept.arrayBuffer()).equals(gcodeBytes)).toBe(true);

      const after = await crash(svc);
      expect(after.files.get(file.id)).toMatchObject({ status: 'downloaded', checksum: sha(gcodeBytes), local_path: stored });
      expect(partials(dataDir)).toEqual([]);
    },
    45_000,
  );
});
