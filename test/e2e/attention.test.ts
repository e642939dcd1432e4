/**
 * A simulated Bambu printer's AMS runs out: the HMS code becomes Bambu Lab's sentence in the printer detail,
 * the list, GET /attention and the notifications (/ws and webhooks), once per cause; a webhook receiver that
 * hangs keeps nobody waiting.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { driverFactory } from '../../service/printers/drivers';
import { startFarm, type SimulatedFarm } from '../../service/simulators';
import { control, simState, until } from '../helpers/farm';
import { startService, type Harness } from '../helpers/service';
import { connectWs, type WsClient } from '../helpers/ws';

interface Received {
  headers: http.IncomingHttpHeaders;
  body: string;
}

async function receiver(hang = false): Promise<{ url: string; got: Received[]; close(): Promise<void> }> {
  const got: Received[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      got.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      if (!hang) res.end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    got,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

const RUNOUT = 'AMS A Slot 1 filament has run out.';

describe('attention and notifications from a simulated printer', () => {
  let farm: SimulatedFarm;
  let h: Harness;
  let ws: WsClient;
  let good: Awaited<ReturnType<typeof receiver>>;
  let hanging: Awaited<ReturnType<typeof receiver>>;

  beforeAll(async () => {
    farm = await startFarm({ bambu: 1, prusa: 1, speed: 60 });
    good = await receiver();
    hanging = await receiver(true);
    h = await startService({
      driverFactory: driverFactory({ backoffBaseMs: 100, backoffMaxMs: 1000 }),
      fleet: { watchdogMs: 3000, commandTimeoutMs: 3000, pollMs: 200, connectTimeoutMs: 4000 },
      webhooks: { timeoutMs: 300, retries: 1, backoffMs: 50 },
    });
    const set = await h.put('/api/v1/settings', {
      notify_webhooks: [
        { url: hanging.url, kinds: ['attention'] },
        { url: good.url, kinds: ['attention', 'print_failed'] },
      ],
    });
    expect(set.status).toBe(200);
    ws = await connectWs(h.base);
  });
  afterAll(async () => {
    await ws.close();
    await h.close();
    await farm.close();
    await good.close();
    await hanging.close();
  });

  it('shows the vendor sentence in the detail, the list and /attention, and tells it once', async () => {
    const { printer, control_url } = farm.printers[0];
    await h.post('/api/v1/printers', printer);
    await until(async () => (await h.get(`/api/v1/printers/${printer.id}`)).body.connection_status === 'connected', 'connected');
    await control(control_url, 'print', { file: (await simState(control_url)).files.find((f) => /3mf/.test(f)) });
    await until(async () => /PREPARE|RUNNING/.test(String(((await simState(control_url)) as unknown as { gcode_state: string }).gcode_state)), 'started');
    await control(control_url, 'fail');

    const detail = await until(async () => {
      const d = (await h.get(`/api/v1/printers/${printer.id}`)).body;
      return d.attention?.length ? d : null;
    }, 'attention in the detail');
    expect(detail.attention[0]).toEqual({
      code: '0700_2000_0002_0001',
      severity: 'serious',
      message: RUNOUT,
      action: 'Please insert a new filament.',
      since: expect.any(String),
      source: 'hms',
    });
    const listed = (await h.get('/api/v1/printers')).body.printers.find((p: { id: string }) => p.id === printer.id);
    expect(listed.attention[0]).toMatchObject({ code: '0700_2000_0002_0001', message: RUNOUT });
    const farmWide = (await h.get('/api/v1/attention')).body;
    expect(farmWide.attention[0]).toMatchObject({ printer_id: printer.id, printer_name: printer.name, code: '0700_2000_0002_0001', message: RUNOUT });
    expect(farmWide.total).toBe(farmWide.attention.length);

    // Webhooks: the good receiver hears of it while the hanging one holds its connection open.
    await until(() => good.got.some((r) => JSON.parse(r.body).kind === 'attention'), 'webhook POST');
    await until(() => hanging.got.length > 0, 'hanging receiver reached');
    expect((await h.get('/api/v1/health')).status).toBe(200);

    // A new print clears the causes: every report of the failed state has been seen by then.
    await control(control_url, 'print', { file: (await simState(control_url)).files.find((f) => /3mf/.test(f)) });
    await ws.next((f) => f.type === 'printer_attention' && (f.data.cleared as unknown[]).length > 0, 10_000);

    const appeared = ws.frames.filter((f) => f.type === 'printer_attention' && (f.data.appeared as Array<{ code: string }>).some((e) => e.code === '0700_2000_0002_0001'));
    expect(appeared).toHaveLength(1);
    const told = ws.frames.filter((f) => f.type === 'notification' && f.data.kind === 'attention');
    expect(told).toHaveLength(1);
    expect(told[0].data).toMatchObject({ printer_id: printer.id, printer_name: printer.name, severity: 'serious', message: `${RUNOUT} Please insert a new filament.` });
    const posts = good.got.map((r) => JSON.parse(r.body)).filter((b) => b.kind === 'attention');
    expect(posts).toHaveLength(1);
    expect(posts[0]).toEqual({
      kind: 'attention',
      title: `${printer.name} needs attention`,
      message: `${RUNOUT} Please insert a new filament.`,
      printer_id: printer.id,
      printer_name: printer.name,
      severity: 'serious',
      at: expect.any(String),
      // The runout's HMS and print_error arrive together: one cause, one message.
      data: expect.objectContaining({ attention: [expect.objectContaining({ code: '0700_2000_0002_0001' }), expect.objectContaining({ code: '0700_8011' })] }),
    });
    expect(good.got[0].headers['content-type']).toBe('application/json');
  });

  it('counts a receiver that never answers as failed after its retries, in /metrics', async () => {
    const metrics = await until(async () => {
      const text = (await h.get('/metrics')).text;
      return /printfarm_notify_webhooks_total\{result="failed"\} [1-9]/.test(text) ? text : null;
    }, 'failed delivery counted');
    expect(metrics).toMatch(/printfarm_notify_webhooks_total\{result="sent"\} [1-9]/);
  });

  it('carries a PrusaLink printer\'s own message', async () => {
    const { printer, control_url } = farm.printers[1];
    await h.post('/api/v1/printers', printer);
    await until(async () => (await h.get(`/api/v1/printers/${printer.id}`)).body.connection_status === 'connected', 'connected');
    await control(control_url, 'attention', { message: 'Filament runout' });
    const entry = await until(async () => (await h.get(`/api/v1/printers/${printer.id}`)).body.attention?.[0], 'prusa attention');
    expect(entry).toMatchObject({ code: 'ATTENTION', severity: 'serious', source: 'prusalink', message: 'The printer needs attention: Filament runout' });
  });
});
