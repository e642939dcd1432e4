/**
 * The nodes' life cycle at its edges: a node whose config node is missing
 * (removed while its users stay), and settings out of range in a flow that
 * did not come through the editor's checks.
 */
import http from 'node:http';
import type net from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import { callsOf, collect, flow, helper, NODES, statusOf, until, type FlowNode, type TestNode } from '../helpers/node-red';

/**
 * A remote "service" with no printers: requests whose path matches `hold` wait until the test answers
 * them, `/ws` takes connections (the test sends their frames).
 */
async function holdingService(hold: RegExp): Promise<{ url: string; held: http.ServerResponse[]; sockets: WebSocket[]; answer(res: http.ServerResponse, body: unknown): void; close(): Promise<void> }> {
  const held: http.ServerResponse[] = [];
  const sockets: WebSocket[] = [];
  const server = http.createServer((req, res) => {
    if (hold.test(req.url ?? '')) return void held.push(res);
    const printers = req.url?.startsWith('/api/v1/printers');
    res.writeHead(printers ? 200 : 404, { 'content-type': 'application/json' });
    res.end(JSON.stringify(printers ? { printers: [] } : { error: { code: 'NOT_FOUND', message: 'no' } }));
  });
  const wss = new WebSocketServer({ server, path: '/ws' });
  wss.on('connection', (ws) => sockets.push(ws));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    held,
    sockets,
    answer: (res, body) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body)),
    close: () =>
      new Promise<void>((resolve) => {
        for (const ws of wss.clients) ws.terminate();
        wss.close();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Whether closed node `old` sent what it was still busy with, or dropped it (saying so in a debug line). */
const outcomeOf = (old: TestNode) =>
  new Promise<string>((resolve) => {
    old.on('call:send', () => resolve('sent'));
    old.on('call:debug', () => resolve('dropped'));
  });
const sendsOf = (old: TestNode) => (old.send as unknown as { getCalls(): { thisValue: unknown }[] }).getCalls().filter((c) => c.thisValue === old);

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

test('file download with settings the queue refuses answers every input with the reason (it dropped them without a word)', async () => {
  await helper.load(
    NODES,
    flow([
      { id: 'download', type: 'printfarm-file-download', server: 'srv', printer: '', retryAttempts: -1, wires: [] },
      { id: 'c1', type: 'catch', scope: null, uncaught: false, wires: [['caught']] },
      { id: 'caught', type: 'helper' },
    ]),
  );
  expect(statusOf(helper.getNode('download'))).toMatchObject({ fill: 'red', shape: 'ring' });
  const caught = collect(helper.getNode('caught'));
  helper.getNode('download').receive({ payload: 'f1' });
  const err = await caught.next();
  expect(err.error).toMatchObject({ message: 'RangeError: retryAttempts, retryDelay and logRetentionDays must not be negative', source: { id: 'download' } });
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
    const service = await holdingService(/^\/api\/v1\/statistics\/overview/);
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
      const outcome = outcomeOf(old);
      const stats = { jobs: { total_jobs: 3, success_rate: 100, completed_jobs: 3, failed_jobs: 0 } };
      service.answer(service.held[0], stats);
      expect(await outcome).toBe('dropped');
      expect(sendsOf(old)).toEqual([]);
      for (const res of service.held.slice(1)) service.answer(res, stats);
    } finally {
      await helper.unload();
      await service.close();
    }
  });

  test('stats: a tick while the last update is still on its way (a slow service) asks nothing more (they piled up, one per tick)', async () => {
    const service = await holdingService(/^\/api\/v1\/statistics\/overview/);
    const timers = jest.spyOn(global, 'setInterval');
    const fetches = jest.spyOn(global, 'fetch');
    try {
      await helper.load(NODES, flow([{ id: 'stats', type: 'printfarm-stats', server: 'srv', scope: 'overview', period: 'week', interval: 3600, wires: [['out']] }, { id: 'out', type: 'helper' }], { mode: 'remote', url: service.url }));
      const asked = () => fetches.mock.calls.filter(([url]) => String(url).includes('/statistics/overview')).length;
      // The first update (once connected) waits for its answer...
      await until(() => service.held.length === 1, 'the first update');
      // ...while the node's timer fires three times more (called here: no waiting for an hour).
      const tick = timers.mock.calls.find(([, ms]) => ms === 3_600_000)![0] as () => void;
      tick();
      tick();
      tick();
      await new Promise((resolve) => setImmediate(resolve));
      expect(asked()).toBe(1);
      // Answered, the next tick asks again.
      const out = collect(helper.getNode('out'));
      service.answer(service.held[0], { jobs: { total_jobs: 3, success_rate: 100, completed_jobs: 3, failed_jobs: 0 } });
      await out.next();
      tick();
      await until(() => service.held.length === 2, 'the next update');
      expect(asked()).toBe(2);
      service.answer(service.held[1], { jobs: { total_jobs: 3, success_rate: 100, completed_jobs: 3, failed_jobs: 0 } });
    } finally {
      jest.restoreAllMocks();
      await helper.unload();
      await service.close();
    }
  });

  test('job watcher: a finished job whose detail is read while a deploy replaces the node is not sent by the closed node', async () => {
    const service = await holdingService(/^\/api\/v1\/jobs\/7/);
    try {
      const first = flow([{ id: 'jw', type: 'printfarm-job-watcher', name: 'a', server: 'srv', printer: '', events: '', throttle: 10, details: true, wires: [['out']] }, { id: 'out', type: 'helper' }], { mode: 'remote', url: service.url });
      await helper.load(NODES, first);
      const old = helper.getNode('jw');
      await until(() => service.sockets.length === 1, 'the /ws connection');
      const frame = { type: 'job_update', timestamp: new Date().toISOString(), data: { job_id: 7, printer_id: 'p1', job_name: 'Cube', status: 'completed', change: 'status', progress: 100 } };
      service.sockets[0].send(JSON.stringify(frame));
      // The completed event's detail is on its way...
      await until(() => service.held.length === 1, 'the read of the job detail');
      // ...when a deploy of the modified nodes replaces the node.
      await helper.setFlows(first.map((n) => (n.id === 'jw' ? { ...n, name: 'b' } : n)), 'nodes');
      expect(helper.getNode('jw')).not.toBe(old);
      const outcome = outcomeOf(old);
      service.answer(service.held[0], { id: 7, printer_id: 'p1', status: 'completed' });
      expect(await outcome).toBe('dropped');
      expect(sendsOf(old)).toEqual([]);
    } finally {
      await helper.unload();
      await service.close();
    }
  });
});

test('printer: inputs of the wrong type end once with a clear error (an object whose String() throws gave a bare TypeError and never ended)', async () => {
  // Nothing listens on port 9: the inputs are refused before any request.
  await helper.load(
    NODES,
    flow(
      [
        { id: 'printer', type: 'printfarm-printer', server: 'srv', printer: '', register: false, wires: [] },
        { id: 'c1', type: 'catch', scope: null, uncaught: false, wires: [['caught']] },
        { id: 'caught', type: 'helper' },
      ],
      { mode: 'remote', url: 'http://127.0.0.1:9' },
    ),
  );
  const caught = collect(helper.getNode('caught'));
  const unknown = (command: string) => `Error: Unknown command "${command}" (use pause, resume, stop, refresh, list, snapshot or stream)`;
  const cases: [Record<string, unknown>, string][] = [
    [{ payload: JSON.parse('{"toString": 1}') }, unknown('(object)')],
    [{ payload: JSON.parse('{"__proto__": {"polluted": true}}') }, unknown('(object)')],
    [{ command: 'explode', payload: 'pause' }, unknown('explode')],
    [{ payload: 'pause', topic: JSON.parse('{"toString": 1}') }, 'Error: Which printer? Set msg.printer_id or msg.topic'],
    [{ payload: null }, unknown('(null)')],
    [{ payload: 'x'.repeat(100_000) }, unknown('x'.repeat(40))],
  ];
  for (const [i, [msg, message]] of cases.entries()) {
    helper.getNode('printer').receive({ ...msg, _probe: i });
    expect((await caught.next((m) => m._probe === i)).error.message).toBe(message);
  }
  expect(caught.messages.map((m) => m._probe)).toEqual(cases.map((_, i) => i));
  expect(({} as Record<string, unknown>).polluted).toBeUndefined();
});
