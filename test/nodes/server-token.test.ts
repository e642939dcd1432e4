/**
 * The printfarm-server config node's API token credential against a real
 * embedded service with access control on (AUTH_TOKENS through
 * printfarmServerOptions.env) and simulated printers: the right token brings
 * printer states; no or a wrong token shows "token refused (401)" in red on
 * the config node and its users; a viewer token reads, but a stop from a
 * printer node answers 403 with a clear error. The token never shows in
 * status texts or log lines.
 */
import { PrintfarmClient, type CreatePrinterInput } from '../../service/client';
import { createToken } from '../../service/auth/tokens';
import { embeddedAccessControl } from '../../nodes/server-options';
import { cancelPrint, collect, control, flow, helper, NODES, nodeTestFarm, printerCredentials, printerNode, SERVICE_OPTIONS, statusesOf, statusOf, tempDir, until, type TestNode } from '../helpers/node-red';

const ADMIN = 'admin-token-0123456789abcdef';
const VIEWER = 'viewer-token-0123456789abcdef';
const WRONG = 'wrong-token-0123456789abcdef';

/** Everything a node showed or logged, as one text (to look for a leaked token). */
const shownAndLogged = (nodes: TestNode[]) =>
  JSON.stringify(nodes.flatMap((n) => [...statusesOf(n), ...(['log', 'warn', 'error'] as const).flatMap((m) => n[m].getCalls().filter((c) => c.thisValue === n).map((c) => c.args))]));

describe('printfarm-server with an API token', () => {
  const farm = nodeTestFarm({ bambu: 1, speed: 100 }, { ...SERVICE_OPTIONS, env: { AUTH_TOKENS: `admin:${ADMIN}, viewer:${VIEWER}` } }, async (sims) => {
    for (const p of sims.printers) {
      await control(p.control_url, 'online');
      await cancelPrint(p.control_url);
    }
  });

  test('the right token: the printer node registers its printer and gets its states; the token shows nowhere', async () => {
    await helper.load(NODES, flow([printerNode(farm, 0), { id: 'out', type: 'helper' }], { dataDir: tempDir() }), { ...printerCredentials(farm, 0), srv: { token: ADMIN } });
    const out = collect(helper.getNode('out'));
    const online = await out.next((m) => (m.payload as { status?: string }).status === 'online');
    expect(online).toMatchObject({ topic: farm.printers[0].printer.id, event: 'printer_status' });
    await until(() => statusOf(helper.getNode('p1')).text === 'online', 'status "online"');
    const srv = helper.getNode('srv');
    expect(statusOf(srv)).toMatchObject({ fill: 'green' });
    // The editor's printer list goes through the same authenticated connection.
    const listed = await helper.request().get('/printfarm/srv/printers');
    expect(listed.body).toEqual([expect.objectContaining({ id: farm.printers[0].printer.id, status: 'online' })]);
    expect(shownAndLogged([srv, helper.getNode('p1')])).not.toContain(ADMIN);
    expect(JSON.stringify(out.messages)).not.toContain(ADMIN);
  });

  test.each([
    ['no token', undefined],
    ['a wrong token', WRONG],
  ])('%s: the config node and the printer node show "token refused (401)" in red', async (_name, token) => {
    await helper.load(NODES, flow([printerNode(farm, 0, { register: false }), { id: 'out', type: 'helper' }], { dataDir: tempDir() }), token ? { srv: { token } } : {});
    const srv = helper.getNode('srv');
    const p1 = helper.getNode('p1');
    const refused = { fill: 'red', shape: 'ring', text: 'token refused (401)' };
    await until(() => statusOf(srv).text === refused.text, 'config node: token refused');
    expect(statusOf(srv)).toEqual(refused);
    await until(() => statusOf(p1).text === refused.text, 'printer node: token refused');
    expect(statusOf(p1)).toEqual(refused);
    expect(shownAndLogged([srv, p1])).not.toContain(WRONG);
  });

  test('a viewer token reads printer states, but a stop from the printer node answers 403 with a clear error', async () => {
    await helper.load(
      NODES,
      flow(
        [
          printerNode(farm, 0, { register: false }),
          { id: 'out', type: 'helper' },
          { id: 'c1', type: 'catch', scope: null, uncaught: false, wires: [['caught']] },
          { id: 'caught', type: 'helper' },
        ],
        { dataDir: tempDir() },
      ),
      { srv: { token: VIEWER } },
    );
    const srv = helper.getNode('srv') as unknown as { connection: { ready(): Promise<PrintfarmClient> }; address?: string };
    await srv.connection.ready();
    // Registering needs an admin: done beside the flow, the viewer's connection then hears of the printer.
    await new PrintfarmClient(srv.address!, { token: ADMIN }).printers.create(farm.printers[0].printer as unknown as CreatePrinterInput);
    const out = collect(helper.getNode('out'));
    const caught = collect(helper.getNode('caught'));
    await out.next((m) => (m.payload as { status?: string }).status === 'online');

    helper.getNode('p1').receive({ payload: 'stop', _id: 'stop' });
    const refusal = await caught.next();
    expect((refusal.error as { message: string }).message).toMatch(/^Error: role too low \(403\): the API token may not stop printers \(The viewer role may not do this; it needs operator\)$/);
    expect(refusal._id).toBe('stop');
    expect(shownAndLogged([helper.getNode('srv'), helper.getNode('p1')])).not.toContain(VIEWER);
  });
});

describe('embeddedAccessControl', () => {
  test('on with AUTH_TOKENS or a created token, off otherwise', () => {
    const dir = tempDir();
    expect(embeddedAccessControl({ dataDir: dir, env: {} })).toBe(false);
    expect(embeddedAccessControl({ dataDir: dir, env: { AUTH_TOKENS: `viewer:${VIEWER}` } })).toBe(true);
    createToken(dir, 'viewer');
    expect(embeddedAccessControl({ dataDir: dir, env: {} })).toBe(true);
  });
});
