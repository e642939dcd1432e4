/**
 * The printfarm-server config node and the printer node in Node-RED (the test
 * helper) against a real embedded service and simulated printers over their
 * real protocols: a printer registered from the flow comes online, its state
 * arrives as printer_status messages and as "printing 42 %" on the node;
 * pause, resume and stop reach the printer; errors reach Catch nodes; closing
 * the flow stops the embedded service.
 */
import net from 'node:net';
import { createService, type Service } from '../../service/app';
import { callsOf, cancelPrint, collect, control, flow, helper, linkUp, NODES, nodeTestFarm, printerCredentials, printerNode, SERVICE_OPTIONS, simState, statusesOf, statusOf, tempDir, until } from '../helpers/node-red';

const portOf = (url: string) => Number(new URL(url).port);
const refused = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(false);
    });
    s.once('error', () => resolve(true));
  });

describe('printfarm-server and printer nodes', () => {
  const farm = nodeTestFarm({ bambu: 1, prusa: 1, speed: 100 }, SERVICE_OPTIONS, async (sims) => {
    for (const p of sims.printers) {
      await control(p.control_url, 'online');
      await control(p.control_url, 'faults', { reject_commands: false });
      await cancelPrint(p.control_url);
    }
  });

  const server = () => helper.getNode('srv') as unknown as { connection: { client: { baseUrl: string } | null; state: string } };

  test.each([0, 1])('a printer (%#) registered from the flow comes online and prints, as messages and as status', async (index) => {
    const id = farm.printers[index].printer.id;
    await helper.load(NODES, flow([printerNode(farm, index), { id: 'out', type: 'helper' }], { dataDir: tempDir() }), printerCredentials(farm, index));
    const out = collect(helper.getNode('out'));
    const p1 = helper.getNode('p1');

    const online = await out.next((m) => m.payload.status === 'online' && m.payload.connection_status === 'connected');
    expect(online).toMatchObject({ topic: id, event: 'printer_status', payload: { id, type: farm.printers[index].printer.type, temperatures: { nozzle: expect.any(Number), bed: expect.any(Number) } } });
    await until(() => statusOf(p1).text === 'online', 'status "online"');
    expect(statusOf(p1)).toEqual({ fill: 'green', shape: 'dot', text: 'online' });

    const file = (await simState(farm.printers[index].control_url)).files.find((f) => /gcode/.test(f))!;
    await control(farm.printers[index].control_url, 'print', { file });
    const printing = await out.next((m) => m.payload.status === 'printing' && m.payload.progress > 0);
    expect(printing.payload.current_job).toMatchObject({ name: expect.any(String), progress: expect.any(Number) });
    const shown = await until(() => statusesOf(p1).find((s) => /^printing \d+ %$/.test(s.text ?? '')), 'status "printing N %"');
    expect(shown).toMatchObject({ fill: 'blue', shape: 'dot' });
  });

  test('pause, resume and stop on the input reach the printer; a refused command reaches the Catch node', async () => {
    const { control_url } = farm.printers[0];
    await helper.load(
      NODES,
      flow([printerNode(farm, 0), { id: 'out', type: 'helper' }, { id: 'c1', type: 'catch', scope: null, uncaught: false, wires: [['caught']] }, { id: 'caught', type: 'helper' }], { dataDir: tempDir() }),
      printerCredentials(farm, 0),
    );
    const out = collect(helper.getNode('out'));
    const caught = collect(helper.getNode('caught'));
    const p1 = helper.getNode('p1');
    await linkUp(out);
    const file = (await simState(control_url)).files.find((f) => /gcode/.test(f))!;
    await control(control_url, 'print', { file });
    await out.next((m) => m.payload.status === 'printing');

    p1.receive({ payload: 'pause' });
    await out.next((m) => m.payload.status === 'paused');
    expect((await simState(control_url)).status.toLowerCase()).toContain('pause');
    await until(() => /^paused \d+ %$/.test(statusOf(p1).text ?? ''), 'status "paused N %"');

    p1.receive({ payload: 'resume' });
    await until(async () => !/pause/i.test((await simState(control_url)).status), 'simulator resumed');

    await control(control_url, 'faults', { reject_commands: true });
    p1.receive({ payload: 'pause', _id: 'refused' });
    const refusal = await caught.next();
    expect(refusal.error.message).toMatch(/refused|busy/i);
    expect(refusal.error.source).toMatchObject({ id: 'p1', type: 'printfarm-printer' });
    expect(refusal._id).toBe('refused');
    await control(control_url, 'faults', { reject_commands: false });

    p1.receive({ command: 'stop' });
    await until(async () => !/print|pause|prepare|running/i.test((await simState(control_url)).status), 'simulator stopped');
  });

  test('an unknown command and a missing printer id reach the Catch node', async () => {
    await helper.load(
      NODES,
      flow([
        { id: 'all', type: 'printfarm-printer', server: 'srv', printer: '', register: false, wires: [['out']] },
        { id: 'out', type: 'helper' },
        { id: 'c1', type: 'catch', scope: null, uncaught: false, wires: [['caught']] },
        { id: 'caught', type: 'helper' },
      ]),
    );
    const caught = collect(helper.getNode('caught'));
    helper.getNode('all').receive({ payload: 'explode' });
    expect((await caught.next()).error.message).toBe('Error: Unknown command "explode" (use pause, resume, stop, refresh, list, snapshot or stream)');
    helper.getNode('all').receive({ payload: 'pause' });
    expect((await caught.next((m) => m !== caught.messages[0])).error.message).toBe('Error: Which printer? Set msg.printer_id or msg.topic');
  });

  test('list sends the farm the node follows as one printers message, an empty array when there is no printer', async () => {
    await helper.load(NODES, flow([{ id: 'all', type: 'printfarm-printer', server: 'srv', printer: '', register: false, wires: [['out']] }, { id: 'out', type: 'helper' }]));
    const out = collect(helper.getNode('out'));
    helper.getNode('all').receive({ payload: 'list', _id: 'ask' });
    // A flow tells the printers deleted while it did not run from this answer: it must come for an empty farm too.
    expect(await out.next((m) => m.event === 'printers')).toMatchObject({ _id: 'ask', event: 'printers', payload: [] });
  });

  test('all printers: every printer sends its state; refresh sends them again; the status sums up the farm; the editor can list them', async () => {
    await helper.load(NODES, flow([printerNode(farm, 1, { id: 'reg', wires: [] }), { id: 'all', type: 'printfarm-printer', server: 'srv', printer: '', register: false, wires: [['out']] }, { id: 'out', type: 'helper' }], { dataDir: tempDir() }), printerCredentials(farm, 1, 'reg'));
    const out = collect(helper.getNode('out'));
    const id = farm.printers[1].printer.id;
    await out.next((m) => m.topic === id && m.payload.status === 'online');
    await until(() => statusOf(helper.getNode('all')).text === '0 of 1 printing', 'farm status');
    const before = out.messages.length;
    helper.getNode('all').receive({ payload: 'refresh', _id: 'r1' });
    const again = await out.next((m) => m._id === 'r1');
    expect(again).toMatchObject({ topic: id, event: 'printer_status', payload: { id, status: 'online' } });
    // One message per printer for the refresh (a live update may arrive meanwhile: it is not the refresh's).
    expect(out.messages.slice(before).filter((m) => m._id === 'r1')).toHaveLength(1);
    // The editor's list of printers for the printer id field.
    const listed = await helper.request().get('/printfarm/srv/printers');
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual([{ id, name: farm.printers[1].printer.name, type: 'prusa_core', status: 'online' }]);
    expect((await helper.request().get('/printfarm/nothing/printers')).body).toEqual([]);
  });

  test('the config node: status for every user, connected state, and close stops the embedded service', async () => {
    await helper.load(NODES, flow([{ id: 'a', type: 'printfarm-printer', server: 'srv', printer: 'nope', register: false, wires: [] }, { id: 'b', type: 'printfarm-job-watcher', server: 'srv', printer: '', events: '', throttle: 10, details: true, wires: [] }]));
    await until(() => server().connection.state === 'connected', 'connected');
    const url = server().connection.client!.baseUrl;
    expect(((await (await fetch(`${url}/api/v1/health`)).json()) as { status: string }).status).toBe('healthy');
    expect(statusOf(helper.getNode('srv'))).toEqual({ fill: 'green', shape: 'dot', text: 'connected' });
    expect(statusOf(helper.getNode('b'))).toEqual({ fill: 'green', shape: 'dot', text: 'connected' });
    await until(() => statusOf(helper.getNode('a')).text === 'unknown printer', 'unknown printer');
    expect(statusesOf(helper.getNode('a')).map((s) => s.text)).toContain('starting service');
    await helper.unload();
    expect(await refused(portOf(url))).toBe(true);
  });

  test('remote mode: a running service by its URL', async () => {
    const svc: Service = await createService({ ...SERVICE_OPTIONS, host: '127.0.0.1', port: 0, dataDir: tempDir(), logLevel: 'silent' });
    try {
      await helper.load(NODES, flow([{ id: 'a', type: 'printfarm-printer', server: 'srv', printer: '', register: false, wires: [] }], { mode: 'remote', url: svc.url }));
      await until(() => server().connection.state === 'connected', 'connected by URL');
      expect(server().connection.client!.baseUrl).toBe(svc.url);
      expect(statusOf(helper.getNode('a'))).toEqual({ fill: 'green', shape: 'dot', text: '0 of 0 printing' });
      await helper.unload();
      // The remote service keeps running when the flow stops.
      expect((await fetch(`${svc.url}/api/v1/health`)).status).toBe(200);
    } finally {
      await svc.close();
    }
  });

  test('an embedded service that cannot start (port taken), an unreachable remote and a bad URL are errors on Catch and status', async () => {
    const blocker = net.createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const port = (blocker.address() as net.AddressInfo).port;
    try {
      await helper.load(
        NODES,
        flow([{ id: 'a', type: 'printfarm-printer', server: 'srv', printer: '', register: false, wires: [] }, { id: 'c1', type: 'catch', scope: null, uncaught: false, wires: [['caught']] }, { id: 'caught', type: 'helper' }], {
          port,
          dataDir: tempDir(),
        }),
      );
      const caught = collect(helper.getNode('caught'));
      const err = await caught.next();
      expect(err.error.message).toMatch(/^Printfarm service did not start: .*EADDRINUSE/);
      expect(err.error.source).toMatchObject({ id: 'srv', type: 'printfarm-server' });
      expect(statusOf(helper.getNode('a'))).toEqual({ fill: 'red', shape: 'ring', text: 'error' });
      await helper.unload();

    } finally {
      await new Promise((r) => blocker.close(r));
    }
    // Nothing listens there now: connections are refused.
    await helper.load(NODES, flow([{ id: 'a', type: 'printfarm-printer', server: 'srv', printer: '', register: false, wires: [] }], { mode: 'remote', url: `http://127.0.0.1:${port}`, pollInterval: 30 }));
    await until(() => statusOf(helper.getNode('a')).text === 'unreachable', 'unreachable');
    expect(statusOf(helper.getNode('a'))).toEqual({ fill: 'red', shape: 'ring', text: 'unreachable' });
    await helper.unload();

    // A remote URL that is no URL.
    await helper.load(
      NODES,
      flow([{ id: 'a', type: 'printfarm-printer', server: 'srv', printer: '', register: false, wires: [] }, { id: 'c1', type: 'catch', scope: null, uncaught: false, wires: [['caught']] }, { id: 'caught', type: 'helper' }], {
        mode: 'remote',
        url: 'printfarm.local',
      }),
    );
    const bad = await collect(helper.getNode('caught')).next();
    const reason = 'the base URL must start with http:// or https://, got "printfarm.local"';
    expect(bad.error.message).toBe(`Bad configuration: ${reason}`);
    expect(bad.payload).toEqual({ code: 'BAD_CONFIG', message: reason });
    expect(statusOf(helper.getNode('a'))).toEqual({ fill: 'red', shape: 'ring', text: 'error' });
  });

  test('a printer node without a config node says so', async () => {
    await helper.load(NODES, flow([{ id: 'a', type: 'printfarm-printer', server: '', printer: 'x', register: false, wires: [] }]));
    const a = helper.getNode('a');
    expect(statusOf(a)).toEqual({ fill: 'red', shape: 'ring', text: 'no server' });
    expect(callsOf(a, 'error')[0][0]).toBe('No printfarm-server configured');
  });
});
