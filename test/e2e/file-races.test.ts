/**
 * File requests that race each other. A download is one task per file ("a second request joins the running
 * one"): two starts in the same instant must not run two transfers of one file from the printer, each writing
 * and renaming its own copy; a file deleted while its bytes are being fetched is answered as a file that is gone.
 * Real PrusaLink simulator over HTTP.
 */
import { driverFactory } from '../../service/printers/drivers';
import { PrusaSimulator } from '../../service/simulators/prusa/simulator';
import { until } from '../helpers/farm';
import { expectError, startService, uploadFile, type Harness } from '../helpers/service';

describe('files: requests racing each other', () => {
  let sim: PrusaSimulator;
  let h: Harness;
  beforeEach(async () => {
    sim = await PrusaSimulator.start({ id: 'race-prusa', name: 'Race', files: [{ name: 'twice.bgcode', data: Buffer.alloc(64 * 1024, 0x47) }] });
    h = await startService({
      driverFactory: driverFactory({ backoffBaseMs: 100, backoffMaxMs: 1000 }),
      fleet: { watchdogMs: 60_000, commandTimeoutMs: 20_000, pollMs: 200, connectTimeoutMs: 4000 },
    });
    expect((await h.post('/api/v1/printers', sim.printerConfig())).status).toBe(201);
  });
  afterEach(async () => {
    await h.close();
    await sim.close();
  });

  test('two downloads of one printer file started at once make one task: the second joins the first', async () => {
    const listed = await until(async () => (await h.get('/api/v1/files?printer_id=race-prusa')).body.files.find((f: { filename: string }) => f.filename === 'twice.bgcode'), 'the printer file');
    await until(async () => (await h.get('/api/v1/printers/race-prusa')).body.connection_status === 'connected', 'connected');
    const downloads = h.service.context.files.downloads;
    const record = (await h.service.context.store.files.get(listed.id))!;
    const [a, b] = await Promise.all([downloads.start(record), downloads.start(record)]);
    expect(b.task.download_id).toBe(a.task.download_id);
    expect([a.joined, b.joined].sort()).toEqual([false, true]);
    expect(await downloads.wait(listed.id)).toMatchObject({ status: 'completed', download_id: a.task.download_id, attempt: 1 });
    expect((await h.get(`/api/v1/files/${listed.id}`)).body).toMatchObject({ status: 'downloaded', file_size: 64 * 1024 });
  });

  test('a download starting while the downloads shut down does not run past the shutdown', async () => {
    const listed = await until(async () => (await h.get('/api/v1/files?printer_id=race-prusa')).body.files.find((f: { filename: string }) => f.filename === 'twice.bgcode'), 'the printer file');
    await until(async () => (await h.get('/api/v1/printers/race-prusa')).body.connection_status === 'connected', 'connected');
    const { downloads } = h.service.context.files;
    const files = h.service.context.store.files;
    // The start's write of `downloading` waits until the shutdown of the downloads has run.
    const update = files.update.bind(files);
    let entered!: () => void;
    const reached = new Promise<void>((resolve) => (entered = resolve));
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    files.update = async (id, patch) => {
      if (patch.status === 'downloading') {
        entered();
        await gate;
      }
      return update(id, patch);
    };
    const start = downloads.start((await files.get(listed.id))!);
    await reached;
    await downloads.close();
    open();
    await expect(start).rejects.toMatchObject({ status: 503, code: 'SERVICE_UNAVAILABLE' });
    expect(downloads.status(listed.id)).toBeUndefined();
    expect((await files.get(listed.id))?.status).toBe('available');
  });

  test('a local file deleted while its bytes are being fetched: 404 FILE_NOT_FOUND, not the file server\'s bare 404 BAD_REQUEST', async () => {
    const id = await uploadFile(h.base, 'Gone.gcode', Buffer.from('; a tiny print\nG28\n'));
    const files = h.service.context.store.files;
    const update = files.update.bind(files);
    let entered!: () => void;
    const reached = new Promise<void>((resolve) => (entered = resolve));
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    // The fetch has found the copy and marks it accessed; it waits there while the file is deleted.
    files.update = async (fileId, patch) => {
      if (patch.last_accessed !== undefined) {
        files.update = update;
        entered();
        await gate;
      }
      return update(fileId, patch);
    };
    const fetching = h.get(`/api/v1/files/${id}/content`);
    await reached;
    expect((await h.del(`/api/v1/files/${id}`)).status).toBe(200);
    open();
    expectError(await fetching, 404, 'FILE_NOT_FOUND');
  });
});
