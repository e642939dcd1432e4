/**
 * The nodes' life cycle at its edges: a node whose config node is missing
 * (removed while its users stay), and settings out of range in a flow that
 * did not come through the editor's checks.
 */
import http from 'node:http';
import type net from 'node:net';
import { callsOf, collect, flow, helper, NODES, statusOf, until, type FlowNode, type TestNode } from '../helpers/node-red';

/** A remote "service" with no printers whose statistics answers wait until the test releases them. */
async function holdingService(): Promise<{ url: string; held: http.ServerResponse[]; release(res: http.ServerResponse): void; close(): Promise<void> }> {
  const held: http.ServerResponse[] = [];
  const server = http.createServer((req, res) => {
    if (req.url?.startsWith('/api/v1/statistics/overview')) return void held.push(res);
    res.writeHead(req.url?.startsWith('/api/v1/printers') ? 200 : 404, { 'content-type': 'application/json' });
    res.end(JSON.stringify(req.url?.startsWith('/api/v1/printers') ? { printers: [] } : { error: { code: 'NOT_FOUND', message: 'no' } }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    held,
    release: (res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jobs: { total_jobs: 3, success_rate: 100, completed_jobs: 3, failed_jobs: 0 } })),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

beforeEach(() => helper.startServer());
afterEach(async () => {
  await helper.unload();
  await helper.stopServer();
});

describe('a node whose config node is missing', () => {
  const catcher: FlowNode[] = [
    { id: 'c1', type: 'catch', scope: null, uncaught: false, wires: [['caught']] },
    { id: 'caught', type: 'helper' },
  ];
  // The config node was deleted (or never deployed) while the nodes that use it stayed.
  const users: FlowNode[] = [
    { id: 'printer', type: 'printfarm-printer', server: 'gone', printer: 'x1', register: false, wires: [] },
    { id: 'stats', type: 'printfarm-stats', server: 'gone', scope: 'overview', period: 'week', interval: 0, wires: [] },
    { id: 'queue', type: 'printfarm-queue', server: 'gone', printer: '', wires: [] },
    { id: 'download', type: 'printfarm-file-download', server: 'gone', printer: '', wires: [] },
    { id: 'preview', type: 'printfarm-gcode-preview', server: 'gone', wires: [] },
  ];

  test('answers every input with an error Catch nodes get (it used to drop the message without a word)', async () => {
    await helper.load(NODES, flow([...users, ...catcher]).filter((n) => n.id !== 'srv'));
    const caught = collect(helper.getNode('caught'));
    const inputs: Record<string, Record<string, unknown>> = {
      printer: { payload: 'pause' },
      stats: { payload: 'now' },
      queue: { payload: { file_id: 'f1' } },
      download: { payload: 'f1' },
      preview: { payload: 'f1' },
    };
    for (const [id, msg] of Object.entries(inputs)) {
      expect(statusOf(helper.getNode(id))).toEqual({ fill: 'red', shape: 'ring', text: 'no server' });
      helper.getNode(id).receive({ ...msg, _probe: id });
      const err = await caught.next((m) => m._probe === id);
      expect(err.error).toMatchObject({ message: 'Error: No printfarm-server configured', source: { id } });
    }
    // Each input ended once (one Catch message each).
    expect(caught.messages.map((m) => m._probe)).toEqual(Object.keys(inputs));
  });
});

describe('settings out of range (a flow imported or deployed past the editor\'s checks)', () => {
  afterEach(() => jest.restoreAllMocks());

  test('stats: an interval past the editor\'s day is refused, not a timer that Node fires every millisecond', async () => {
    const timers = jest.spyOn(global, 'setInterval');
    // Nothing listens on port 9: every update the node tried would fail at once.
    await helper.load(NODES, flow([{ id: 'stats', type: 'printfarm-stats', server: 'srv', scope: 'overview', period: 'week', interval: 1e7, wires: [] }], { mode: 'remote', url: 'http://127.0.0.1:9' }));
    const stats = helper.getNode('stats');
    // Node's timers take at most 2^31-1 ms; a longer delay becomes 1 ms.
    expect(timers.mock.calls.filter(([, ms]) => Number(ms) > 2 ** 31 - 1)).toEqual([]);
    expect(callsOf(stats, 'error').map((c) => String(c[0]))).toEqual(['"Every (s)" must be 0 to 86400 seconds, got "10000000": no automatic updates, only answers to inputs']);
    expect(statusOf(stats)).toEqual({ fill: 'red', shape: 'ring', text: 'bad interval' });
  });
});

describe('a node closed while its request is on its way', () => {
  test('stats: the answer of an update started before a deploy is not sent by the closed node (it went out next to the new node\'s)', async () => {
    const service = await holdingService();
    try {
      const first = flow([{ id: 'stats', type: 'printfarm-stats', name: 'a', server: 'srv', scope: 'overview', period: 'week', interval: 3600, wires: [['out']] }, { id: 'out', type: 'helper' }], { mode: 'remote', url: service.url });
      const statsFlow = (name: string) => first.map((n) => (n.id === 'stats' ? { ...n, name } : n));
      await helper.load(NODES, statsFlow('a'));
      const old = helper.getNode('stats');
      // The node's first update is on its way...
      await until(() => service.held.length === 1, 'the first update');
      // ...when a deploy of the modified nodes replaces the node (the config node and its connection stay).
      await helper.setFlows(statsFlow('b'), 'nodes');
      expect(helper.getNode('stats')).not.toBe(old);
      const outcome = new Promise<string>((resolve) => {
        old.on('call:send', () => resolve('sent'));
        old.on('call:debug', () => resolve('dropped'));
      });
      service.release(service.held[0]);
      expect(await outcome).toBe('dropped');
      expect((old.send as unknown as { getCalls(): { thisValue: unknown }[] }).getCalls().filter((c) => c.thisValue === old)).toEqual([]);
      for (const res of service.held.slice(1)) service.release(res);
    } finally {
      await helper.unload();
      await service.close();
    }
  });
});
