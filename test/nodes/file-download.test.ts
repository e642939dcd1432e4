/**
 * file-download and gcode-preview nodes against an embedded service and a
 * simulated printer: a print that starts is downloaded automatically (High,
 * source auto) and gets its thumbnail task; inputs queue Normal downloads and
 * get the task back on their own msg; a download that cannot work reaches
 * the Catch node, a transient failure is retried; previews of G-code text,
 * a file path and a catalog file honour the service's optimisation settings.
 */
import fs from 'node:fs';
import path from 'node:path';
import { PNG } from 'pngjs';
import { seedFiles } from '../../service/simulators/seed-files';
import type { PrintfarmClient } from '../../service/client';
import { callsOf, cancelPrint, collect, control, helper, linkUp, NODES, nodeTestFarm, printerCredentials, SERVICE_OPTIONS, statusOf, tempDir, until, withRegisteredPrinter, type FlowNode } from '../helpers/node-red';

const GCODE = seedFiles().find((f) => f.name.endsWith('.gcode'))!;

describe('file-download and gcode-preview nodes', () => {
  const farm = nodeTestFarm({ bambu: 1, prusa: 0, speed: 100 }, { ...SERVICE_OPTIONS, downloads: { attempts: 1, retryDelayMs: 50, frameIntervalMs: 50 } }, async (sims) => {
    const { control_url } = sims.printers[0];
    await control(control_url, 'online');
    await cancelPrint(control_url);
  });

  const printer = () => farm.printers[0].printer as Record<string, unknown> & { id: string };
  const client = () => (helper.getNode('srv') as unknown as { connection: { client: PrintfarmClient } }).connection.client;
  const withPrinter = (nodes: FlowNode[]): FlowNode[] =>
    withRegisteredPrinter(farm, [{ id: 'c1', type: 'catch', scope: null, uncaught: false, wires: [['caught']] }, { id: 'caught', type: 'helper' }, ...nodes]);
  const credentials = () => printerCredentials(farm, 0, 'reg');
  const fileDownload = (extra: Record<string, unknown> = {}): FlowNode => ({
    id: 'fd',
    type: 'printfarm-file-download',
    server: 'srv',
    printer: '',
    autoDetectionEnabled: true,
    thumbnails: true,
    maxConcurrentDownloads: 2,
    maxConcurrentThumbnails: 1,
    retryAttempts: 1,
    retryDelay: 100,
    logRetentionDays: 30,
    wires: [['out']],
    ...extra,
  });
  const ready = () => linkUp(collect(helper.getNode('online')));

  test('a print that starts is downloaded automatically (High), then its thumbnail task runs', async () => {
    await helper.load(NODES, withPrinter([fileDownload(), { id: 'out', type: 'helper' }]), credentials());
    const out = collect(helper.getNode('out'));
    await ready();
    const { control_url } = farm.printers[0];
    await control(control_url, 'print', { file: '/Cube_PLA.gcode.3mf' });

    const download = await out.next((m) => m.topic === 'download');
    expect(download.payload).toMatchObject({
      kind: 'download',
      status: 'completed',
      priority: 'high',
      source: 'auto',
      printer_id: printer().id,
      attempts: 1,
      result: { status: 'success', file_id: expect.any(String), filename: 'Cube_PLA.gcode.3mf' },
    });
    const file = await client().files.get(download.payload.result.file_id);
    expect(file).toMatchObject({ status: 'downloaded', checksum: expect.stringMatching(/^sha256:/) });

    const thumb = await out.next((m) => m.topic === 'thumbnail');
    expect(thumb.payload).toMatchObject({ kind: 'thumbnail', thumbnail_priority: 1, thumbnail_method: 'extract', file_id: file.id, parent_id: download.payload.id });
    // The service has no thumbnail endpoint yet: a placeholder (and a warning), never a Catch.
    expect(['extracted', 'placeholder']).toContain(thumb.payload.result.method);
    if (thumb.payload.result.method === 'placeholder') expect(callsOf(helper.getNode('fd'), 'warn')[0][0]).toMatch(/^No thumbnail for Cube_PLA\.gcode\.3mf \(placeholder\)/);
    await until(() => /^idle \(2 done|^idle \(1 done, 1 failed\)/.test(statusOf(helper.getNode('fd')).text ?? ''), 'idle status');
    expect(collect(helper.getNode('caught')).messages).toEqual([]);
  });

  test('an input queues a Normal download and gets the task back on its msg; the task log on request', async () => {
    await helper.load(NODES, withPrinter([fileDownload({ autoDetectionEnabled: false, thumbnails: false }), { id: 'out', type: 'helper' }]), credentials());
    const out = collect(helper.getNode('out'));
    await ready();
    helper.getNode('fd').receive({ _id: 'm1', payload: { printer_id: printer().id, file_path: '/model/cube_20mm.stl' } });
    const done = await out.next((m) => m._id === 'm1');
    expect(done).toMatchObject({ topic: 'download', payload: { status: 'completed', priority: 'normal', source: 'manual', result: { status: 'success', filename: 'cube_20mm.stl' } } });

    // By file id, urgent; a file with a local copy says so.
    helper.getNode('fd').receive({ _id: 'm2', priority: 'urgent', payload: done.payload.result.file_id });
    expect(await out.next((m) => m._id === 'm2')).toMatchObject({ payload: { priority: 'urgent', result: { status: 'exists_no_thumbnail' } } });

    helper.getNode('fd').receive({ _id: 'log', payload: 'tasks' });
    const log = await out.next((m) => m._id === 'log');
    expect(log.payload.map((t: { priority: string; status: string }) => [t.priority, t.status])).toEqual([
      ['normal', 'completed'],
      ['urgent', 'completed'],
    ]);
  });

  test('a download that cannot work reaches the Catch node with its task; a transient failure is retried first', async () => {
    await helper.load(NODES, withPrinter([fileDownload({ autoDetectionEnabled: false, retryAttempts: 1, retryDelay: 100 }), { id: 'out', type: 'helper' }]), credentials());
    const caught = collect(helper.getNode('caught'));
    await ready();
    // Not printing: nothing to fetch, no retry.
    helper.getNode('fd').receive({ _id: 'idle', payload: { printer_id: printer().id } });
    const idle = await caught.next((m) => m._id === 'idle');
    expect(idle.error.message).toMatch(/^Error: Download of sim-bambu-01 failed: Printer "sim-bambu-01" is not printing/);
    expect(idle.error.source).toMatchObject({ id: 'fd', type: 'printfarm-file-download' });
    expect(idle.payload).toMatchObject({ status: 'failed', attempts: 1, error: { code: 'NOT_PRINTING' } });

    // The printer drops off: 502 PRINTER_OFFLINE, retried once after 100 ms, then failed.
    await control(farm.printers[0].control_url, 'offline');
    await until(async () => (await client().printers.get(printer().id)).status === 'offline', 'offline');
    helper.getNode('fd').receive({ _id: 'off', payload: { printer_id: printer().id, file_path: '/Cube_PLA.gcode.3mf' } });
    const off = await caught.next((m) => m._id === 'off');
    expect(off.payload).toMatchObject({ status: 'failed', attempts: 2, max_attempts: 2, error: { status: 502 } });
    expect(statusOf(helper.getNode('fd'))).toEqual({ fill: 'red', shape: 'dot', text: 'download failed' });

    helper.getNode('fd').receive({ _id: 'bad', payload: 42 });
    expect((await caught.next((m) => m._id === 'bad')).error.message).toMatch(/give msg.payload/);
  });

  test('gcode-preview: G-code text, a file path and a catalog file; the service settings apply unless the node sets them', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'part.gcode');
    fs.writeFileSync(file, GCODE.data);
    await helper.load(
      NODES,
      withPrinter([
        { id: 'gp', type: 'printfarm-gcode-preview', server: 'srv', source: 'auto', optimize: 'service', maxLines: '', renderLines: '', size: 128, view: 'iso', wires: [['out']] },
        { id: 'all', type: 'printfarm-gcode-preview', server: '', source: 'auto', optimize: 'off', maxLines: '', renderLines: 600, size: 64, view: 'top', wires: [['out']] },
        { id: 'out', type: 'helper' },
      ]),
      credentials(),
    );
    const out = collect(helper.getNode('out'));
    await ready();

    helper.getNode('gp').receive({ _id: 'text', payload: GCODE.data.toString('latin1') });
    const text = await out.next((m) => m._id === 'text');
    expect(Buffer.isBuffer(text.payload)).toBe(true);
    const png = PNG.sync.read(text.payload);
    expect([png.width, png.height]).toEqual([128, 128]);
    expect(text.analysis).toMatchObject({ method: 'marker', print_start_line: expect.any(Number), skipped_lines: expect.any(Number), rendered_lines: expect.any(Number) });
    expect(text.analysis.skipped_lines).toBe(text.analysis.print_start_line - 1);
    expect(text.preview).toMatchObject({ width: 128, height: 128, method: 'analyzed', settings: { optimize_print_only: true, optimization_max_lines: 1000, render_max_lines: 10000 } });
    expect(statusOf(helper.getNode('gp'))).toEqual({ fill: 'green', shape: 'dot', text: `${text.analysis.rendered_lines} lines rendered` });

    // The service's settings change what is rendered.
    await client().settings.updateGcodeOptimization({ optimize_print_only: false });
    helper.getNode('gp').receive({ _id: 'path', payload: file });
    const fromPath = await out.next((m) => m._id === 'path');
    expect(fromPath.analysis).toMatchObject({ method: 'disabled', print_start_line: 1, skipped_lines: 0 });

    // A node without a server, its own settings.
    helper.getNode('all').receive({ _id: 'own', payload: GCODE.data });
    expect((await out.next((m) => m._id === 'own')).analysis).toMatchObject({ method: 'disabled', rendered_lines: 600 });

    // A catalog file: downloaded from the printer first, then rendered.
    const listed = await until(async () => (await client().files.list({ printer_id: printer().id, file_type: '.gcode' })).files[0], 'the printer file in the catalog');
    helper.getNode('gp').receive({ _id: 'id', payload: listed.id });
    const byId = await out.next((m) => m._id === 'id');
    expect(byId.preview.file).toEqual({ id: listed.id, filename: listed.filename });
    expect(byId.analysis.rendered_lines).toBeGreaterThan(0);

    const caught = collect(helper.getNode('caught'));
    helper.getNode('gp').receive({ _id: 'nope', payload: 'no-such-file-id' });
    expect((await caught.next((m) => m._id === 'nope')).error.message).toMatch(/not found/i);
    expect(statusOf(helper.getNode('gp'))).toEqual({ fill: 'red', shape: 'dot', text: 'failed' });
  });
});
