/**
 * The nodes' life cycle at its edges: a node whose config node is missing
 * (removed while its users stay), and settings out of range in a flow that
 * did not come through the editor's checks.
 */
import { callsOf, collect, flow, helper, NODES, statusOf, type FlowNode } from '../helpers/node-red';

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
