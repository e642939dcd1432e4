/**
 * Deploys and the embedded service: a full deploy that keeps the config
 * node's service settings keeps the service running (same address, its
 * uptime goes on, the printer is not reconnected, the running print stays one
 * job, printing); a deploy that changes them restarts it, and the print that
 * goes on on the printer is still that one job (never cancelled by the
 * restart); removing the config node, or stopping Node-RED, stops it. Its log
 * arrives through the config node as readable lines.
 */
import net from 'node:net';
import { callsOf, cancelPrint, collect, control, helper, linkUp, NODES, nodeTestFarm, printerCredentials, SERVICE_OPTIONS, simState, tempDir, until, withRegisteredPrinter, type FlowNode, type TestNode } from '../helpers/node-red';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const get = async (url: string): Promise<Json> => {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`${url}: ${res.status}`);
  return (await res.json()) as Json;
};
const answers = (url: string) =>
  fetch(`${url}/api/v1/health`).then(
    () => true,
    () => false,
  );
const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
    s.once('error', reject);
  });

describe('deploying flows with an embedded service', () => {
  const farm = nodeTestFarm({ bambu: 1, prusa: 0, speed: 5 }, SERVICE_OPTIONS, (sims) => cancelPrint(sims.printers[0].control_url));
  const sim = () => farm.printers[0];
  const printerId = () => sim().printer.id as string;
  const address = () => (helper.getNode('srv') as TestNode & { address?: string }).address!;
  const serviceUp = () => until(() => helper.getNode('srv') && address(), 'the embedded service', 20_000);
  const jobsOnPrinter = async (url: string) => (await get(`${url}/api/v1/jobs?printer_id=${printerId()}`)).jobs as Json[];

  let dataDir = '';
  beforeEach(() => (dataDir = tempDir()));

  /** The flow: the config node (its data dir the test's), a printer node that registers the simulator, a job watcher. */
  function farmFlow(server: Record<string, unknown> = {}, printerName = 'Printer'): FlowNode[] {
    const nodes = withRegisteredPrinter(farm, [{ id: 'jw', type: 'printfarm-job-watcher', server: 'srv', printer: '', events: '', throttle: 10, details: false, wires: [['jobs']] }, { id: 'jobs', type: 'helper' }]);
    const srv = nodes.find((n) => n.id === 'srv')!;
    Object.assign(srv, { dataDir }, server);
    nodes.find((n) => n.id === 'reg')!.name = printerName;
    return nodes;
  }

  /** Starts a print on the simulator and waits until the service tracks it as a printing job. */
  async function printing(url: string): Promise<Json> {
    await linkUp(collect(helper.getNode('online')));
    const file = (await simState(sim().control_url)).files.find((f) => /\.3mf$/.test(f))!;
    await control(sim().control_url, 'print', { file });
    return until(async () => (await jobsOnPrinter(url)).find((j) => j.status === 'printing'), 'a printing job', 20_000);
  }

  test('a full deploy with unchanged service settings keeps the service: same address, uptime goes on, no reconnect, one job still printing', async () => {
    await helper.load(NODES, farmFlow(), printerCredentials(farm, 0, 'reg'));
    const url = await serviceUp();
    const job = await printing(url);
    // Uptime is whole seconds: wait for a second so that a restart (uptime 0) could not look the same.
    const before = await until(async () => {
      const h = await get(`${url}/api/v1/health`);
      return h.uptime_seconds >= 1 && h;
    }, 'uptime of a second');
    const mqttConnections = (await simState(sim().control_url) as unknown as Json).stats.mqtt_connections;

    // A full deploy (every node closed and built again) with a node changed that is not the config node.
    await helper.setFlows(farmFlow({}, 'Printer (renamed)'), 'full', printerCredentials(farm, 0, 'reg'));
    await serviceUp();
    expect(address()).toBe(url);
    const after = await get(`${url}/api/v1/health`);
    expect(after.uptime_seconds).toBeGreaterThanOrEqual(before.uptime_seconds);
    expect((await simState(sim().control_url) as unknown as Json).stats.mqtt_connections).toBe(mqttConnections);
    const jobs = await jobsOnPrinter(url);
    expect(jobs.map((j) => [j.id, j.status])).toEqual([[job.id, 'printing']]);
    expect((await simState(sim().control_url)).status).toMatch(/prepar|print|running/i);
    // The new config node says it took the running service over.
    expect(callsOf(helper.getNode('srv'), 'log').map((c) => String(c[0]))).toContainEqual(expect.stringMatching(/kept running across the deploy at http:\/\/127\.0\.0\.1:\d+/));
  }, 60_000);

  test('a deploy that changes the port restarts the service; the print on the printer stays one job (not cancelled)', async () => {
    await helper.load(NODES, farmFlow(), printerCredentials(farm, 0, 'reg'));
    const oldUrl = await serviceUp();
    const job = await printing(oldUrl);

    const port = await freePort();
    await helper.setFlows(farmFlow({ port }), 'full', printerCredentials(farm, 0, 'reg'));
    const url = await until(() => helper.getNode('srv') && address() !== oldUrl && address(), 'the restarted service', 20_000);
    expect(url).toBe(`http://127.0.0.1:${port}`);
    expect(await answers(oldUrl)).toBe(false);
    // The job tracker of the new service re-attaches to the print that went on.
    await until(async () => (await get(`${url}/api/v1/printers/${printerId()}`)).status === 'printing', 'the printer printing again', 20_000);
    const jobs = await until(async () => {
      const list = await jobsOnPrinter(url);
      return list.length > 0 && list;
    }, 'the job list');
    expect(jobs.map((j) => [j.id, j.status])).toEqual([[job.id, 'printing']]);
  }, 60_000);

  test('a deploy without the config node, and stopping Node-RED, stop the service', async () => {
    await helper.load(NODES, farmFlow(), printerCredentials(farm, 0, 'reg'));
    const url = await serviceUp();
    await helper.setFlows([{ id: 'tab', type: 'tab', label: 'farm' }], 'full');
    await until(async () => !(await answers(url)), 'the removed service to stop');

    await helper.setFlows(farmFlow(), 'full', printerCredentials(farm, 0, 'reg'));
    const again = await serviceUp();
    await helper.unload();
    expect(await answers(again)).toBe(false);
  }, 60_000);

  test('demo: a deploy that changes the port hands the simulated printers to the new service; their prints stay one job each, none cancelled', async () => {
    const demoFlow = (port: number): FlowNode[] => [
      { id: 'tab', type: 'tab', label: 'farm' },
      { id: 'srv', type: 'printfarm-server', name: 'demo', mode: 'embedded', url: '', port, expose: false, host: '', dataDir, demo: true, logLevel: 'silent', pollInterval: 30 },
      { id: 'all', type: 'printfarm-printer', z: 'tab', server: 'srv', printer: '', register: false, updates: 'changes', throttle: 10, wires: [] },
    ];
    await helper.load(NODES, demoFlow(0));
    const oldUrl = await serviceUp();
    // The demo starts two printers printing at once.
    const printingJobs = async (url: string) => ((await get(`${url}/api/v1/jobs?status=printing`)).jobs as Json[]).map((j) => [j.id, j.printer_id]).sort();
    const before = await until(async () => {
      const jobs = await printingJobs(oldUrl);
      return jobs.length >= 2 && jobs;
    }, 'the demo prints', 30_000);

    await helper.setFlows(demoFlow(await freePort()), 'full');
    const url = await until(() => helper.getNode('srv') && address() !== oldUrl && address(), 'the restarted service', 30_000);
    expect(await answers(oldUrl)).toBe(false);
    // The same simulated printers (same ports) report to the new service, which re-attaches to their prints.
    const after = await until(async () => {
      const jobs = await printingJobs(url);
      return jobs.length >= before.length && jobs;
    }, 'the prints on the new service', 30_000);
    expect(after).toEqual(expect.arrayContaining(before));
    expect((await get(`${url}/api/v1/jobs?status=cancelled`)).jobs).toEqual([]);
  }, 90_000);

  test("the service's log comes through the config node as readable lines, not JSON", async () => {
    await helper.load(NODES, farmFlow({ logLevel: 'info' }), printerCredentials(farm, 0, 'reg'));
    await serviceUp();
    await linkUp(collect(helper.getNode('online')));
    const srv = helper.getNode('srv');
    const lines = await until(() => {
      const logged = callsOf(srv, 'log').map((c) => String(c[0]));
      return logged.some((l) => l.includes('path=/api/v1/printers; status=201')) && logged;
    }, 'the log line of the printer node registering its printer');
    expect(lines.filter((l) => l.trimStart().startsWith('{'))).toEqual([]);
    expect(lines).toContainEqual(expect.stringMatching(/^request \(req_id=[\w-]+; method=POST; path=\/api\/v1\/printers; status=201; ms=[\d.]+\)$/));
    expect(lines).toContainEqual(expect.stringMatching(/^printfarm service ready \(url=http:\/\/127\.0\.0\.1:\d+; data_dir=/));
  }, 60_000);
});
