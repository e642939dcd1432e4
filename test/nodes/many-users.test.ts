/**
 * One config node with many users (a farm of a dozen printers, one printer
 * node each): no "possible EventEmitter memory leak" warning for what is no
 * leak, and redeploys of the users leave exactly one set of listeners.
 */
import http from 'node:http';
import type net from 'node:net';
import { flow, helper, NODES, until, type FlowNode } from '../helpers/node-red';
import type { ServerNode } from '../../nodes/shared';

const USERS = 12;

/** A remote "service" with no printers and no /ws (the monitor polls). */
async function emptyService(): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const printers = req.url?.startsWith('/api/v1/printers');
    res.writeHead(printers ? 200 : 404, { 'content-type': 'application/json' });
    res.end(JSON.stringify(printers ? { printers: [] } : { error: { code: 'NOT_FOUND', message: 'no' } }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
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

test(`${USERS} printer nodes on one config node: no leak warning, and after redeploys still one listener each`, async () => {
  const service = await emptyService();
  try {
    const printers = (name: string): FlowNode[] => Array.from({ length: USERS }, (_, i) => ({ id: `p${i}`, type: 'printfarm-printer', name, server: 'srv', printer: `printer-${i}`, register: false, wires: [] }));
    const base = flow(printers('a'), { mode: 'remote', url: service.url });
    const srv = base.find((n) => n.id === 'srv')!;
    const deploy = (name: string) => [...base.filter((n) => !n.id.startsWith('p')), ...flow(printers(name)).filter((n) => n.id.startsWith('p'))].map((n) => (n.id === 'srv' ? srv : n));
    const monitor = () => (helper.getNode('srv') as unknown as ServerNode).connection.monitor;
    const listening = () => monitor()?.listenerCount('printer') === USERS && monitor();

    await helper.load(NODES, base);
    await until(listening, 'every printer node following the farm');
    // Modified-nodes deploys replace every printer node; the config node and its monitor stay.
    for (const name of ['b', 'c', 'd']) {
      await helper.setFlows(deploy(name), 'nodes');
      expect(helper.getNode('p0').name).toBe(name);
      await until(listening, `the printer nodes of deploy ${name}`);
    }
    const m = monitor()!;
    expect([m.listenerCount('printer'), m.listenerCount('removed')]).toEqual([USERS, USERS]);
    // Node warns of a "possible EventEmitter memory leak" once an event has more listeners than this
    // (0: no limit); the warning goes to Node's process, past jest's sandbox, so the limit is what is checked.
    const max = m.getMaxListeners();
    expect({ max, enough: max === 0 || max >= USERS }).toEqual({ max, enough: true });
  } finally {
    await helper.unload();
    await service.close();
  }
});
