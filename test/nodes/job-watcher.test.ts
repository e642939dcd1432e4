/**
 * job-watcher and stats nodes against an embedded service and a simulated
 * printer: a print on the printer becomes auto-created, started, progress
 * (throttled), completed events with the job's detail; filters by event and
 * printer; cancelled; the statistics on input and on an interval.
 */
import { cancelPrint, collect, control, helper, linkUp, NODES, nodeTestFarm, printerCredentials, SERVICE_OPTIONS, simState, statusOf, until, withRegisteredPrinter, type FlowNode } from '../helpers/node-red';

describe('job-watcher and stats nodes', () => {
  const farm = nodeTestFarm({ bambu: 1, prusa: 0, speed: 100 }, SERVICE_OPTIONS, (sims) => cancelPrint(sims.printers[0].control_url));

  const printer = () => farm.printers[0].printer as Record<string, unknown> & { id: string };
  const withPrinter = (nodes: FlowNode[]): FlowNode[] => withRegisteredPrinter(farm, nodes);
  const credentials = () => printerCredentials(farm, 0, 'reg');

  async function startPrint() {
    const { control_url } = farm.printers[0];
    await linkUp(collect(helper.getNode('online')));
    const file = (await simState(control_url)).files.find((f) => /\.3mf$/.test(f))!;
    await control(control_url, 'print', { file });
    return control_url;
  }

  test('a print becomes auto-created, started, progress and completed events; completed carries the job detail', async () => {
    await helper.load(NODES, withPrinter([{ id: 'jw', type: 'printfarm-job-watcher', server: 'srv', printer: '', events: '', throttle: 0.2, details: true, wires: [['out']] }, { id: 'out', type: 'helper' }]), credentials());
    const out = collect(helper.getNode('out'));
    const progressAt: number[] = [];
    helper.getNode('out').on('input', (m: { event?: string }) => m.event === 'progress' && progressAt.push(Date.now()));
    const control_url = await startPrint();

    const created = await out.next((m) => m.event === 'auto-created');
    expect(created).toMatchObject({ topic: printer().id, payload: { printer_id: printer().id, job_id: expect.any(Number), status: 'running', customer_info: { auto_created: true } } });
    const jobId = created.payload.job_id;
    expect(await out.next((m) => m.event === 'started')).toMatchObject({ payload: { job_id: jobId, status: 'printing' } });
    await out.next((m) => m.event === 'progress' && m.payload.progress > 0);
    await until(() => /^job \d+ \d+ %$/.test(statusOf(helper.getNode('jw')).text ?? ''), 'progress status');

    await control(control_url, 'finish');
    const done = await out.next((m) => m.event === 'completed');
    expect(done.payload).toMatchObject({ job_id: jobId, status: 'completed', job: { id: jobId, status: 'completed', progress: 100, actual_duration: expect.any(Number) } });
    expect(statusOf(helper.getNode('jw'))).toEqual({ fill: 'green', shape: 'dot', text: `job ${jobId} completed` });
    // Progress events of one job arrive at least the throttle (200 ms) apart.
    expect(progressAt.length).toBeGreaterThan(0);
    for (let i = 1; i < progressAt.length; i++) expect(progressAt[i] - progressAt[i - 1]).toBeGreaterThanOrEqual(180);
  });

  test('filters: only the chosen events of the chosen printer; a cancel is one cancelled event', async () => {
    await helper.load(
      NODES,
      withPrinter([
        { id: 'ended', type: 'printfarm-job-watcher', server: 'srv', printer: printer().id, events: ['cancelled', 'completed'], throttle: 10, details: false, wires: [['out']] },
        { id: 'other', type: 'printfarm-job-watcher', server: 'srv', printer: 'another-printer', events: '', throttle: 10, details: false, wires: [['out2']] },
        { id: 'out', type: 'helper' },
        { id: 'out2', type: 'helper' },
      ]),
      credentials(),
    );
    const out = collect(helper.getNode('out'));
    const out2 = collect(helper.getNode('out2'));
    const control_url = await startPrint();
    await until(async () => /running|print/i.test((await simState(control_url)).status), 'printing');
    const svc = (helper.getNode('srv') as unknown as { connection: { client: { jobs: { list(q: object): Promise<{ jobs: { id: number }[] }> } } } }).connection.client;
    const job = await until(async () => (await svc.jobs.list({ status: 'printing' })).jobs[0], 'job created');
    await control(control_url, 'cancel');
    const cancelled = await out.next((m) => m.event === 'cancelled');
    expect(cancelled.payload).toMatchObject({ job_id: job.id, status: 'cancelled' });
    expect(cancelled.payload.job).toBeUndefined();
    await new Promise((r) => setTimeout(r, 300));
    expect(out.messages.map((m) => m.event)).toEqual(['cancelled']);
    expect(out2.messages).toEqual([]);
  });

  test('stats: overview and per printer on input, and on an interval', async () => {
    await helper.load(
      NODES,
      withPrinter([
        { id: 'st', type: 'printfarm-stats', server: 'srv', scope: 'overview', printer: '', period: 'week', interval: 0, wires: [['out']] },
        { id: 'tick', type: 'printfarm-stats', server: 'srv', scope: 'printer', printer: printer().id, period: 'day', interval: 0.2, wires: [['ticks']] },
        { id: 'out', type: 'helper' },
        { id: 'ticks', type: 'helper' },
        { id: 'c1', type: 'catch', scope: ['st'], uncaught: false, wires: [['caught']] },
        { id: 'caught', type: 'helper' },
      ]),
      credentials(),
    );
    const out = collect(helper.getNode('out'));
    await linkUp(collect(helper.getNode('online')));
    helper.getNode('st').receive({ _id: 'a' });
    const overview = await out.next((m) => m._id === 'a');
    expect(overview).toMatchObject({ topic: 'overview', payload: { period: 'week', printers: { total_active: 1 }, jobs: { total_jobs: expect.any(Number) } } });
    const { completed_jobs: completed, failed_jobs: failed } = overview.payload.jobs;
    expect(statusOf(helper.getNode('st')).text).toMatch(completed + failed ? /^\d+ jobs, [\d.]+ % ok$/ : /^\d+ jobs, none finished$/);

    helper.getNode('st').receive({ _id: 'b', printer_id: printer().id, period: 'month' });
    expect(await out.next((m) => m._id === 'b')).toMatchObject({ topic: printer().id, payload: { printer_id: printer().id, period: 'month', uptime: expect.any(Object) } });

    const ticks = collect(helper.getNode('ticks'));
    await until(() => ticks.messages.length >= 2, 'two interval updates', 5000);
    expect(ticks.messages[0]).toMatchObject({ topic: printer().id, payload: { printer_id: printer().id, period: 'day' } });

    const caught = collect(helper.getNode('caught'));
    helper.getNode('st').receive({ period: 'decade' });
    expect((await caught.next()).error.message).toBe('Error: Unknown period "decade" (use day, week, month or year)');
    helper.getNode('st').receive({ printer_id: 'nobody' });
    expect((await caught.next((m) => /nobody/.test(m.error.message))).error.message).toMatch(/nobody/);
  });
});
