/**
 * /ws connections are capped in total and per client address, with rate limits
 * off: the rest get 503 with the error body at the upgrade, and one log line a
 * minute says so. Clients come from different loopback addresses (127.0.0.x).
 */
import WebSocket from 'ws';
import { startService, type Harness } from '../helpers/service';

interface Refusal {
  status: number;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/** Opens /ws from `localAddress`: the open socket, or the HTTP answer that refused the upgrade. */
function open(base: string, localAddress: string): Promise<WebSocket | Refusal> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(base.replace(/^http/, 'ws') + '/ws', { localAddress });
    socket.once('open', () => resolve(socket));
    socket.once('unexpected-response', (_req, res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
    });
    socket.once('error', reject);
  });
}

const isRefusal = (r: WebSocket | Refusal): r is Refusal => !(r instanceof WebSocket);

describe('/ws connection cap', () => {
  let h: Harness;
  const sockets: WebSocket[] = [];
  afterEach(async () => {
    await Promise.all(sockets.splice(0).map((s) => new Promise((resolve) => (s.readyState === WebSocket.CLOSED ? resolve(null) : (s.once('close', resolve), s.close())))));
    await h?.close();
  });

  const keep = (r: WebSocket | Refusal) => {
    if (isRefusal(r)) throw new Error(`refused with ${r.status}`);
    sockets.push(r);
    return r;
  };

  test('beyond WS_MAX_CLIENTS_PER_IP and WS_MAX_CLIENTS the upgrade is answered 503 with the error body; a closed one frees its slot', async () => {
    h = await startService({ env: { WS_MAX_CLIENTS: '5', WS_MAX_CLIENTS_PER_IP: '3' } });
    expect((await h.get('/api/v1/settings')).status).toBe(200);
    for (let i = 0; i < 3; i++) keep(await open(h.base, '127.0.0.1'));
    const perAddress = await open(h.base, '127.0.0.1');
    expect(isRefusal(perAddress) && perAddress.status).toBe(503);
    expect((perAddress as Refusal).body.error).toMatchObject({ code: 'SERVICE_UNAVAILABLE', details: { limit: 3, scope: 'address' }, request_id: expect.any(String) });

    for (let i = 0; i < 2; i++) keep(await open(h.base, '127.0.0.2'));
    const total = await open(h.base, '127.0.0.3');
    expect((total as Refusal).status).toBe(503);
    expect((total as Refusal).body.error).toMatchObject({ code: 'SERVICE_UNAVAILABLE', details: { limit: 5, scope: 'total' } });

    // The API still answers, and one closed connection lets the next client in.
    expect((await h.get('/api/v1/health')).status).toBe(200);
    const first = sockets.shift()!;
    await new Promise((resolve) => (first.once('close', resolve), first.close()));
    const until = Date.now() + 5000;
    let admitted: WebSocket | Refusal = await open(h.base, '127.0.0.3');
    while (isRefusal(admitted) && Date.now() < until) admitted = await open(h.base, '127.0.0.3');
    keep(admitted);

    const warnings = h.logs.filter((l) => /\/ws connections refused/.test(String(l.msg)));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ refused: 1, max_total: 5, max_per_address: 3 });
  });

  test('the defaults are 1000 in total and 50 per address', async () => {
    h = await startService();
    for (let i = 0; i < 50; i++) keep(await open(h.base, '127.0.0.4'));
    const refused = await open(h.base, '127.0.0.4');
    expect((refused as Refusal).body.error.details).toEqual({ limit: 50, scope: 'address' });
    keep(await open(h.base, '127.0.0.5'));
  });
});
