/**
 * Camera relays (the printer node's `stream` topic, which the dashboard's
 * camera wall and live view use) against a remote service: a deploy that
 * replaces the printer node, a full deploy and stopping Node-RED each end
 * every relay the old nodes opened. The browser's answer ends and the
 * service's viewer count goes back to 0 (they used to run on for as long as
 * the browser read, on a service the new flows may no longer use, and used
 * up camera_max_viewers). Also the client itself: close() ends the streams
 * it opened, as it ends its other requests.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { PrintfarmClient } from '../../service/client';
import { BambuSimulator } from '../../service/simulators/bambu';
import type { Harness } from '../helpers/service';
import { addConnected, cameraService, openStream, type StreamClient } from '../helpers/cameras';
import { flow, helper, NODES, until, type FlowNode } from '../helpers/node-red';

jest.setTimeout(60_000);

let p1s: BambuSimulator;
let h: Harness;
let printerId: string;
/** Stands in for the dashboard's `http in` route: each request goes to the current node 'cam' as msg.res. */
let relay: http.Server;
let relayBase: string;

beforeAll(async () => {
  p1s = await BambuSimulator.start({ model: 'P1S', ftps: false });
  h = await cameraService();
  printerId = await addConnected(h, p1s.printerConfig());
  relay = http.createServer((_req, res) => helper.getNode('cam').receive({ topic: 'stream', printer_id: printerId, res: { _res: res } }));
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
  relayBase = `http://127.0.0.1:${(relay.address() as AddressInfo).port}`;
});
afterAll(async () => {
  relay.closeAllConnections();
  await new Promise<void>((resolve) => relay.close(() => resolve()));
  await h.close();
  await p1s.close();
});
beforeEach(() => helper.startServer());
afterEach(async () => {
  await helper.unload();
  await helper.stopServer();
});

/** The config node on the remote service and an all-printers node 'cam' named `name`. */
const remoteFlow = (name: string): FlowNode[] =>
  flow([{ id: 'cam', type: 'printfarm-printer', name, server: 'srv', printer: '', register: false, updates: 'changes', throttle: 1, wires: [[]] }], { mode: 'remote', url: h.base });

/** A browser on the relay with frames coming, and the service counting it as a viewer. */
async function watching(): Promise<StreamClient> {
  const browser = await openStream(relayBase, `/${printerId}`);
  expect(browser.status).toBe(200);
  await until(() => browser.parts.length >= 2, 'frames through the relay');
  expect(h.service.context.cameras.viewerCount).toBe(1);
  return browser;
}

/** Resolves true when `ending` settles within `ms` (false: it is still streaming). */
async function within(ending: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((r) => (timer = setTimeout(() => r(false), ms)));
  try {
    return await Promise.race([ending.then(() => true, () => true), late]);
  } finally {
    clearTimeout(timer);
  }
}
const endsWithin = (browser: StreamClient, ms: number) => within(browser.ended, ms);

describe('a remote service\'s camera relays', () => {
  test('a deploy that replaces only the printer node ends its relays (the config node and its client stay)', async () => {
    const first = remoteFlow('a');
    await helper.load(NODES, first);
    const browser = await watching();
    try {
      // The same config node (flow() gives each call a new data dir, which would count as a change).
      await helper.setFlows(first.map((n) => (n.id === 'cam' ? { ...n, name: 'b' } : n)), 'nodes');
      expect(await endsWithin(browser, 5000)).toBe(true);
      await until(() => h.service.context.cameras.viewerCount === 0, 'the upstream viewer gone', 5000);
      // The new node relays again.
      const again = await watching();
      again.close();
    } finally {
      browser.close();
    }
  });

  test('a full deploy and stopping Node-RED end the relays of the old nodes', async () => {
    await helper.load(NODES, remoteFlow('a'));
    const first = await watching();
    try {
      await helper.setFlows(remoteFlow('a'), 'full');
      expect(await endsWithin(first, 5000)).toBe(true);
      await until(() => h.service.context.cameras.viewerCount === 0, 'the upstream viewer gone', 5000);
    } finally {
      first.close();
    }
    const second = await watching();
    try {
      await helper.unload();
      expect(await endsWithin(second, 5000)).toBe(true);
      await until(() => h.service.context.cameras.viewerCount === 0, 'the upstream viewer gone', 5000);
    } finally {
      second.close();
    }
  });
});

test('the client\'s close() ends the camera streams it opened, and opens no more', async () => {
  const client = new PrintfarmClient(h.base);
  const mine = new AbortController();
  const res = await client.printers.cameraStream(printerId, mine.signal);
  const reader = res.body!.getReader();
  await reader.read();
  await until(() => h.service.context.cameras.viewerCount === 1, 'the viewer counted');
  client.close();
  const ended = await within(
    (async () => {
      for (;;) if ((await reader.read()).done) return;
    })(),
    5000,
  );
  try {
    expect(ended).toBe(true);
    await until(() => h.service.context.cameras.viewerCount === 0, 'the upstream viewer gone', 5000);
    await expect(client.printers.cameraStream(printerId, new AbortController().signal)).rejects.toMatchObject({ code: 'ABORTED' });
  } finally {
    mine.abort();
  }
});
