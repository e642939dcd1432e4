/**
 * The printer node's `snapshot` topic against a real embedded service and a
 * simulated P1S whose camera speaks the real port-6000 protocol (TLS, login
 * packet, JPEG frames): the answer is a decodable JPEG Buffer of the
 * camera's size, for the node's own printer and, on an all-printers node, for
 * msg.printer_id; the input message's other properties stay; a printer the
 * service does not know reaches the Catch node with the service's reason.
 * The example flow "Snapshot on failure" itself, on the test's service: a
 * failed print on the P1S comes out as a notification with the picture.
 */
import fs from 'node:fs';
import path from 'node:path';
import jpeg from 'jpeg-js';
import { cancelPrint, collect, control, flow, helper, NODES, nodeTestFarm, SERVICE_OPTIONS, simState, tempDir, until } from '../helpers/node-red';

// The core nodes the example uses besides the pack's.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const CORE = [require('@node-red/nodes/core/function/10-function.js'), require('@node-red/nodes/core/function/15-change.js')];
const EXAMPLE = path.join(__dirname, '..', '..', 'examples', 'Snapshot on failure.json');

type ServerNode = { connection: { client: { printers: { create(b: unknown): Promise<unknown> } } | null; state: string } };

describe('printer node: msg.topic "snapshot"', () => {
  // Simulator 0 is an X1C (RTSPS camera), 1 a P1S (port-6000 JPEG camera): the test uses the P1S.
  const farm = nodeTestFarm({ bambu: 2, speed: 100 }, SERVICE_OPTIONS, async (sims) => {
    await control(sims.printers[1].control_url, 'online');
    await cancelPrint(sims.printers[1].control_url);
  });
  const p1s = () => farm.printers[1].printer;

  /** Deploys `nodes` and registers the P1S (with its camera port) through the embedded service. */
  async function deploy(nodes: Record<string, unknown>[]) {
    await helper.load([...NODES, ...CORE], flow(nodes as never[], { dataDir: tempDir() }));
    const srv = helper.getNode('srv') as unknown as ServerNode;
    const client = await until(() => srv.connection.client, 'the embedded service');
    await client.printers.create(p1s());
  }

  test('the node\'s printer: a JPEG Buffer of the camera\'s size, the message\'s other properties kept', async () => {
    const id = p1s().id;
    await deploy([
      { id: 'cam', type: 'printfarm-printer', name: '', server: 'srv', printer: id, register: false, updates: 'changes', throttle: 1, wires: [['out']] },
      { id: 'out', type: 'helper' },
    ]);
    const out = collect(helper.getNode('out'));
    await out.next((m) => m.event === 'printer_status' && m.payload.connection_status === 'connected', 20_000);

    helper.getNode('cam').receive({ topic: 'snapshot', job: { job_name: 'benchy' } } as never);
    const shot = await out.next((m) => m.event === 'snapshot', 20_000);
    expect(Buffer.isBuffer(shot.payload)).toBe(true);
    expect(shot.payload.subarray(0, 2).toString('hex')).toBe('ffd8');
    const image = jpeg.decode(shot.payload, { useTArray: true });
    expect(image.width).toBeGreaterThanOrEqual(320);
    expect(image.height).toBeGreaterThanOrEqual(180);
    expect(shot).toMatchObject({ topic: id, printer_id: id, job: { job_name: 'benchy' } });
    expect(shot.filename).toMatch(new RegExp(`^${id}-\\d{4}-\\d\\d-\\d\\dT[\\d-]+Z\\.jpg$`));
  });

  test('an all-printers node takes msg.printer_id (or msg.command with the id as topic); an unknown printer reaches the Catch node', async () => {
    const id = p1s().id;
    await deploy([
      { id: 'all', type: 'printfarm-printer', name: '', server: 'srv', printer: '', register: false, updates: 'changes', throttle: 1, wires: [['out']] },
      { id: 'out', type: 'helper' },
      { id: 'c1', type: 'catch', scope: ['all'], uncaught: false, wires: [['caught']] },
      { id: 'caught', type: 'helper' },
    ]);
    const out = collect(helper.getNode('out'));
    const caught = collect(helper.getNode('caught'));
    await out.next((m) => m.event === 'printer_status' && m.topic === id && m.payload.connection_status === 'connected', 20_000);

    helper.getNode('all').receive({ topic: 'snapshot', printer_id: id, _asked: 1 } as never);
    const first = await out.next((m) => m.event === 'snapshot' && m._asked === 1, 20_000);
    expect(jpeg.decode(first.payload).width).toBeGreaterThan(0);

    // The job watcher's shape: topic = printer id, the command beside it.
    helper.getNode('all').receive({ topic: id, command: 'snapshot', _asked: 2 } as never);
    const second = await out.next((m) => m.event === 'snapshot' && m._asked === 2, 20_000);
    expect(jpeg.decode(second.payload).height).toBeGreaterThan(0);

    helper.getNode('all').receive({ topic: 'snapshot', printer_id: 'no-such-printer' } as never);
    const refusal = await caught.next(undefined, 20_000);
    expect(refusal.error.message).toMatch(/no-such-printer/);
    expect(refusal.error.message).toMatch(/not found/i);

    helper.getNode('all').receive({ topic: 'snapshot' } as never);
    const unnamed = await caught.next((m) => m !== refusal, 10_000);
    expect(unnamed.error.message).toMatch(/printer_id/);
  });

  test('the example flow "Snapshot on failure": a failed print comes out as a notification with the camera\'s picture', async () => {
    const id = p1s().id;
    // The example's nodes on the test's service (instead of its demo service on port 8018); its
    // debug node ("notification") becomes the helper that the test reads.
    type Node = { id: string; type: string; server?: string };
    const example: Node[] = (JSON.parse(fs.readFileSync(EXAMPLE, 'utf8')) as Node[])
      .filter((n) => n.type !== 'printfarm-server' && n.type !== 'comment')
      .map((n) => ({ ...n, ...(n.server ? { server: 'srv' } : {}), ...(n.type === 'debug' ? { type: 'helper' } : {}) }));
    const debugId = example.find((n) => n.type === 'helper')!.id;
    await deploy([...example, { id: 'watch', type: 'printfarm-printer', server: 'srv', printer: id, register: false, updates: 'changes', throttle: 1, wires: [['online']] }, { id: 'online', type: 'helper' }]);
    const online = collect(helper.getNode('online'));
    const out = collect(helper.getNode(debugId));
    await online.next((m) => m.payload.connection_status === 'connected', 20_000);

    const { control_url } = farm.printers[1];
    const file = (await simState(control_url)).files.find((f) => f.endsWith('.3mf'))!;
    await control(control_url, 'print', { file });
    await online.next((m) => m.payload.status === 'printing', 20_000);
    await control(control_url, 'fail');
    const note = await out.next(undefined, 30_000);
    expect(note.topic).toMatch(new RegExp(`^Print failed on ${id}: `));
    expect(Buffer.isBuffer(note.payload)).toBe(true);
    expect(jpeg.decode(note.payload).width).toBeGreaterThan(0);
    expect(note.filename).toMatch(/\.jpg$/);
    expect(note.job).toMatchObject({ printer_id: id });
  });
});
