/**
 * The printfarm-queue node against an embedded service and a simulated
 * Bambu X1C: a file Buffer is uploaded, queued and goes to the printer, the
 * output carrying the item's queue_update frames as it moves to printing; an
 * item by file_id takes the node's copies and priority, is held, released and
 * cancelled by msg.topic; the status counts come from the queue list at
 * start (a redeploy) and from the updates; a file path is uploaded too; a payload the node or the service
 * refuses turns the status red with the reason and reaches Catch nodes.
 */
import fs from 'node:fs';
import path from 'node:path';
import { bambu3mf } from '../../service/simulators/seed-files';
import type { PrintfarmClient } from '../../service/client';
import { cancelPrint, collect, helper, linkUp, NODES, nodeTestFarm, printerCredentials, SERVICE_OPTIONS, simState, statusOf, tempDir, until, withRegisteredPrinter, type FlowNode, type TestNode } from '../helpers/node-red';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

describe('printfarm-queue node', () => {
  const farm = nodeTestFarm({ bambu: 1, prusa: 0, speed: 100 }, SERVICE_OPTIONS, (sims) => cancelPrint(sims.printers[0].control_url));
  const sim = () => farm.printers[0];
  const printerId = () => sim().printer.id as string;
  const credentials = () => printerCredentials(farm, 0, 'reg');
  const client = () => (helper.getNode('srv') as unknown as { connection: { client: PrintfarmClient } }).connection.client;
  const statusText = (id: string) => statusOf(helper.getNode(id)).text ?? '';
  /** Far enough ahead that the dispatcher leaves the item queued. */
  const LATER = '2099-01-01T00:00:00Z';

  function queueFlow(node: Record<string, unknown> = {}): FlowNode[] {
    return withRegisteredPrinter(farm, [
      { id: 'q', type: 'printfarm-queue', server: 'srv', name: '', property: 'payload', propertyType: 'msg', printer: '', copies: 1, priority: 0, wires: [['out']], ...node },
      { id: 'out', type: 'helper' },
      { id: 'c1', type: 'catch', scope: ['q'], uncaught: false, wires: [['caught']] },
      { id: 'caught', type: 'helper' },
    ]);
  }

  let deployedFlow: FlowNode[] = [];
  async function deployed(node: Record<string, unknown> = {}) {
    deployedFlow = queueFlow(node);
    await helper.load(NODES, deployedFlow, credentials());
    await linkUp(collect(helper.getNode('online')));
    await until(() => statusText('q') === '0 queued, 0 printing', 'the counts from the empty queue', 10_000);
    return collect(helper.getNode('out'));
  }

  test('a file Buffer is uploaded and queued; the item goes to the simulated printer and every queue_update comes out', async () => {
    const out = await deployed();
    const before = (await simState(sim().control_url)) as unknown as Json;
    helper.getNode('q').receive({ payload: { file: bambu3mf({ model: 'X1C' }), filename: 'Bracket X1C.gcode.3mf', name: 'Bracket' } });

    const queued = await out.next((m) => m.payload.name === 'Bracket' && m.payload.status === 'queued');
    const item = queued.payload as Json;
    expect(queued.topic).toBe(item.id);
    expect(item).toMatchObject({ copies: 1, priority: 0, plate: 1, file_id: expect.any(String), target: null });
    const file = await client().files.get(item.file_id);
    expect(file.filename).toMatch(/Bracket X1C\.gcode\.3mf$/);

    // The item moves to printing on the printer: its frames come out as its dispatch goes on.
    const printing = await out.next((m) => m.topic === item.id && m.payload.status === 'printing', 30_000);
    expect(printing.payload.dispatches).toEqual([expect.objectContaining({ printer_id: printerId(), attempt: 1 })]);
    const states = out.messages.filter((m) => m.topic === item.id).flatMap((m) => (m.payload.dispatches as Json[]).map((d) => d.state));
    expect(states).toContain('uploading');
    await until(async () => (await simState(sim().control_url) as unknown as Json).prints_started === before.prints_started + 1, 'the printer accepted the start', 20_000);
    await until(() => statusText('q') === '0 queued, 1 printing', 'the counts', 10_000);
    expect(statusOf(helper.getNode('q'))).toEqual({ fill: 'blue', shape: 'dot', text: '0 queued, 1 printing' });
    expect((await simState(sim().control_url) as unknown as Json).last_start).toMatchObject({ file: expect.stringMatching(/Bracket/), plate: 1 });
  }, 60_000);

  test("an item by file_id takes the node's copies and priority; hold, release and cancel by msg.topic; a redeploy counts from the list", async () => {
    const out = await deployed({ copies: 3, priority: 5 });
    const upload = await client().files.upload('Cube.gcode.3mf', bambu3mf({ model: 'X1C' }));
    helper.getNode('q').receive({ payload: { file_id: upload.id, start_after: LATER } });
    const queued = await out.next((m) => m.payload.file_id === upload.id);
    const id = queued.payload.id as string;
    expect(queued.payload).toMatchObject({ status: 'queued', copies: 3, remaining: 3, priority: 5, start_after: expect.stringMatching(/^2099-01-01/) });
    await until(() => statusText('q') === '1 queued, 0 printing', 'one queued', 10_000);

    helper.getNode('q').receive({ topic: 'hold', payload: { id } });
    await out.next((m) => m.topic === id && m.payload.status === 'held');
    await until(() => statusText('q') === '0 queued, 0 printing, 1 held', 'one held', 10_000);
    helper.getNode('q').receive({ topic: 'release', payload: { id } });
    await out.next((m) => m.topic === id && m.payload.status === 'queued' && out.messages.indexOf(m) > 1);
    await until(() => statusText('q') === '1 queued, 0 printing', 'released', 10_000);

    // A second item added beside the node (REST); then a full deploy: the new node counts both from GET /queue.
    await client().queue.add({ file_id: upload.id, copies: 1, plate: 1, priority: 0, start_after: LATER });
    await until(() => statusText('q') === '2 queued, 0 printing', 'the REST item counted from its frame', 10_000);
    // The same service settings (data dir included): the embedded service goes on, the queue node is new.
    await helper.setFlows(deployedFlow.map((n) => (n.id === 'q' ? { ...n, name: 'redeployed' } : n)), 'full', credentials());
    expect(helper.getNode('q').name).toBe('redeployed');
    await until(() => statusText('q') === '2 queued, 0 printing', 'the counts from the list after the redeploy', 15_000);

    const after = collect(helper.getNode('out'));
    helper.getNode('q').receive({ topic: 'cancel', payload: id });
    expect((await after.next((m) => m.topic === id)).payload).toMatchObject({ status: 'cancelled', remaining: 0 });
    await until(() => statusText('q') === '1 queued, 0 printing', 'one cancelled', 10_000);
  }, 60_000);

  test('a chosen printer the service does not know: red "unknown printer", and its items still come out', async () => {
    await helper.load(NODES, queueFlow({ printer: 'no-such-printer' }), credentials());
    const out = collect(helper.getNode('out'));
    await linkUp(collect(helper.getNode('online')));
    await until(() => statusText('q') === 'unknown printer no-such-printer', 'the red light', 10_000);
    expect(statusOf(helper.getNode('q'))).toEqual({ fill: 'red', shape: 'ring', text: 'unknown printer no-such-printer' });
    const upload = await client().files.upload('Cube.gcode.3mf', bambu3mf({ model: 'X1C' }));
    helper.getNode('q').receive({ payload: { file_id: upload.id } });
    // The node's printer became the item's target.
    expect((await out.next()).payload).toMatchObject({ status: 'queued', target: { printer_ids: ['no-such-printer'] } });
    expect(statusText('q')).toBe('unknown printer no-such-printer');
  }, 60_000);

  test('a file path is read and uploaded, then queued with the rest of the payload', async () => {
    const out = await deployed();
    const file = path.join(tempDir(), 'Clip X1C.gcode.3mf');
    fs.writeFileSync(file, bambu3mf({ model: 'X1C' }));
    helper.getNode('q').receive({ payload: { file, copies: 2, start_after: LATER } });
    const queued = await out.next((m) => m.payload.status === 'queued');
    expect(queued.payload).toMatchObject({ name: 'Clip X1C', copies: 2 });
    expect((await client().files.get(queued.payload.file_id)).file_size).toBe(fs.statSync(file).size);
    await until(() => statusText('q') === '1 queued, 0 printing', 'one queued', 10_000);
  }, 60_000);

  test('a payload the node or the service refuses: red status with the reason, the error to Catch nodes', async () => {
    await deployed();
    const caught = collect(helper.getNode('caught'));
    const q = helper.getNode('q') as TestNode;

    q.receive({ _id: 'a', payload: 'not an item' });
    expect((await caught.next((m) => m._id === 'a')).error.message).toBe('Error: The item must be an object with file_id or files (variants), or file (a path or a Buffer), and the POST /queue fields');
    expect(statusOf(q)).toEqual({ fill: 'red', shape: 'dot', text: expect.stringMatching(/^failed: The item must be an object/) });

    const upload = await client().files.upload('Cube.gcode.3mf', bambu3mf({ model: 'X1C' }));
    q.receive({ _id: 'b', payload: { file_id: upload.id, copies: 0 } });
    const refused = (await caught.next((m) => m._id === 'b')).error.message as string;
    expect(refused).toMatch(/copies/);
    expect(refused).toMatch(/\(VALIDATION_ERROR\)$/);
    expect(statusOf(q)).toEqual({ fill: 'red', shape: 'dot', text: expect.stringMatching(/^failed: .*copies/) });

    q.receive({ _id: 'c', payload: { file: '/nonexistent/part.gcode.3mf' } });
    expect((await caught.next((m) => m._id === 'c')).error.message).toBe('Error: No file at /nonexistent/part.gcode.3mf');
    q.receive({ _id: 'd', payload: { file: Buffer.from('x') } });
    expect((await caught.next((m) => m._id === 'd')).error.message).toMatch(/needs msg\.payload\.filename/);
    q.receive({ _id: 'e', topic: 'hold', payload: {} });
    expect((await caught.next((m) => m._id === 'e')).error.message).toBe("Error: hold needs the item's id in msg.payload.id");
    q.receive({ _id: 'f', topic: 'release', payload: { id: 'no-such-item' } });
    expect((await caught.next((m) => m._id === 'f')).error.message).toMatch(/_NOT_FOUND\)$/);
    // Nothing was queued by any of them.
    expect((await client().queue.list()).items).toEqual([]);
  }, 60_000);
});
