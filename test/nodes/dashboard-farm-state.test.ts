/**
 * The dashboard's "farm state" function node (flows/dashboard.json) in a real
 * Node-RED function node: a burst of printer reports becomes one board at
 * once and one more with the latest state (at most two a second: cards never
 * flicker), a printer that goes offline or finishes onto a plate that needs
 * clearing gives a notification, and a print without a known thumbnail asks
 * the file-download node for its file once.
 */
import { collect, helper, type FlowNode } from '../helpers/node-red';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { buildDashboardFlow } = require('../../flows/dashboard/flow') as { buildDashboardFlow(): FlowNode[] };
// eslint-disable-next-line @typescript-eslint/no-require-imports
const functionNode = require('@node-red/nodes/core/function/10-function.js');

const farmState = buildDashboardFlow().find((n) => n.id === 'pfd-farm-state')!;

function snapshot(id: string, status: string, progress = 0) {
  const busy = status === 'printing' || status === 'paused';
  return {
    topic: id,
    event: 'printer_status',
    payload: {
      id,
      name: `Printer ${id}`,
      type: 'bambu_lab',
      model: 'X1C',
      status,
      connection_status: status === 'offline' ? 'disconnected' : 'connected',
      progress,
      temperatures: { nozzle: 220, bed: 60 },
      current_job: busy ? { id: 1, name: 'Cube', progress, estimated_remaining: 600, layer_current: 3, layer_total: 40 } : null,
      error: null,
      is_active: true,
      last_seen: new Date().toISOString(),
      updated_at: new Date().toISOString(),
    },
  };
}
const list = (printers: Record<string, unknown>[]) => ({ kind: 'printers', apiError: null, payload: { printers } });

describe('the dashboard\'s farm state', () => {
  beforeEach(() => helper.startServer());
  afterEach(async () => {
    await helper.unload();
    await helper.stopServer();
  });

  async function load() {
    await helper.load(functionNode, [
      { id: 'tab', type: 'tab', label: 'test' },
      { ...farmState, z: 'tab', wires: [['board'], ['notes'], ['downloads']] },
      { id: 'board', type: 'helper', z: 'tab' },
      { id: 'notes', type: 'helper', z: 'tab' },
      { id: 'downloads', type: 'helper', z: 'tab' },
    ]);
    const node = helper.getNode('pfd-farm-state');
    return { node, board: collect(helper.getNode('board')), notes: collect(helper.getNode('notes')), downloads: collect(helper.getNode('downloads')) };
  }

  test('a burst of reports: one board at once, then one with the latest progress; a print asks for its file once', async () => {
    const { node, board, downloads } = await load();
    for (let progress = 1; progress <= 20; progress++) node.receive(snapshot('p1', 'printing', progress));
    const first = await board.next();
    expect(first.payload.printers).toHaveLength(1);
    expect(first.payload.printers[0]).toMatchObject({ id: 'p1', status: 'printing', progress: 1, job: 'Cube', layer_current: 3, layer_total: 40, remaining: 600 });
    const second = await board.next((m) => m !== first, 2000);
    expect(second.payload.printers[0].progress).toBe(20);
    expect(board.messages).toHaveLength(2);
    // The file of the print is asked for once, not once per report.
    const ask = await downloads.next();
    expect(ask).toMatchObject({ topic: 'p1', payload: { printer_id: 'p1' } });
    expect(downloads.messages).toHaveLength(1);
    // Its thumbnail arrives: the card shows it (through Node-RED's thumbnail route).
    node.receive({ kind: 'file', topic: 'download', payload: { kind: 'download', printer_id: 'p1', file_id: 'f1', result: { file_id: 'f1', has_thumbnail: true } } });
    const withThumb = await board.next((m) => m.payload.printers[0].thumbnail, 2000);
    expect(withThumb.payload.printers[0].thumbnail).toBe('../printfarm-dashboard/thumbnail/f1');
  });

  test('notifications: a printer that goes offline, comes back, and finishes onto a plate that needs clearing', async () => {
    const { node, notes } = await load();
    node.receive(list([{ id: 'p1', name: 'X1C #01', status: 'printing', plate_state: 'clear', current_job: null, temperatures: { nozzle: 0, bed: 0 } }]));
    node.receive(snapshot('p1', 'printing', 50));
    node.receive(snapshot('p1', 'offline'));
    expect((await notes.next()).payload).toBe('Printer p1 went offline');
    node.receive(snapshot('p1', 'online'));
    expect((await notes.next((m) => /back online/.test(m.payload))).payload).toBe('Printer p1 is back online');
    node.receive(list([{ id: 'p1', name: 'X1C #01', status: 'online', plate_state: 'needs_clearing', current_job: null, temperatures: { nozzle: 0, bed: 0 } }]));
    const plate = await notes.next((m) => /Plate/.test(m.payload));
    expect(plate).toMatchObject({ payload: 'Plate needs clearing on Printer p1', ui_update: { color: '#ed6c02' } });
    expect(notes.messages).toHaveLength(3);
  });

  test('the attention strip lists every printer\'s entries worst first; the Add printer dialog gets the discovered printers', async () => {
    const { node, board } = await load();
    const entry = (code: string, severity: string, since: string) => ({ code, severity, message: `m ${code}`, action: `a ${code}`, since, source: 'hms' });
    node.receive({ kind: 'discovery', apiError: null, payload: { printers: [{ type: 'bambu_lab', model: 'P1S', serial_number: '01P00A1', ip_address: '10.0.0.5', added: false }] } });
    node.receive(
      list([
        { id: 'p1', name: 'A', status: 'online', attention: [entry('0C00_0300_0004_0001', 'info', '2026-01-01T00:00:00Z')] },
        { id: 'p2', name: 'B', status: 'error', attention: [entry('0700_2000_0002_0001', 'serious', '2026-01-01T00:05:00Z'), entry('0300_0100_0001_0001', 'fatal', '2026-01-01T00:06:00Z')] },
      ]),
    );
    const last = await board.next((m) => m.payload.attention.length === 3, 2000);
    expect(last.payload.attention.map((a: { code: string; printer_name: string }) => [a.code, a.printer_name])).toEqual([
      ['0300_0100_0001_0001', 'B'],
      ['0700_2000_0002_0001', 'B'],
      ['0C00_0300_0004_0001', 'A'],
    ]);
    expect(last.payload.discovered).toEqual([expect.objectContaining({ serial_number: '01P00A1', added: false })]);
  });
});
