/**
 * Discovery against simulated printers, all on loopback: Bambu simulators announce themselves over SSDP to
 * the service's (ephemeral) UDP port and show in GET /discovery with their model; a flood of malformed
 * datagrams changes nothing; a scan of 127.0.0.1 finds a PrusaLink simulator and a public address is
 * refused; a discovered printer is added with its access code alone and connects.
 */
import dgram from 'node:dgram';
import { driverFactory } from '../../service/printers/drivers';
import { startFarm, type SimulatedFarm } from '../../service/simulators';
import { until } from '../helpers/farm';
import { expectError, startService, type Harness } from '../helpers/service';
import { connectWs, type WsClient } from '../helpers/ws';

describe('printer discovery', () => {
  let farm: SimulatedFarm;
  let h: Harness;
  let ws: WsClient;

  beforeAll(async () => {
    h = await startService({
      driverFactory: driverFactory({ backoffBaseMs: 100, backoffMaxMs: 1000 }),
      fleet: { watchdogMs: 3000, commandTimeoutMs: 3000, pollMs: 200, connectTimeoutMs: 4000 },
      discovery: { ssdpPort: 'ephemeral', searchTargets: [] },
    });
    ws = await connectWs(h.base);
    const port = (await h.get('/api/v1/discovery')).body.ssdp_port;
    expect(port).toEqual(expect.any(Number));
    farm = await startFarm({ bambu: 1, prusa: 1, speed: 10, announce: port, announceIntervalS: 1 });
  });
  afterAll(async () => {
    await ws.close();
    await h.close();
    await farm.close();
  });

  const bambu = () => farm.printers[0].printer as Record<string, unknown> & { id: string; serial_number: string; model: string; name: string };
  const prusa = () => farm.printers[1].printer as Record<string, unknown> & { id: string; http_port: number; access_code: string };

  it('lists an announcing Bambu printer with its model; a malformed flood changes nothing', async () => {
    const entry = await until(async () => (await h.get('/api/v1/discovery')).body.printers.find((p: { serial_number: string }) => p.serial_number === bambu().serial_number), 'announced');
    expect(entry).toEqual({
      type: 'bambu_lab',
      model: bambu().model,
      name: bambu().name,
      serial_number: bambu().serial_number,
      ip_address: '127.0.0.1',
      port: null,
      source: 'ssdp',
      first_seen: expect.any(String),
      last_seen: expect.any(String),
      added: false,
      printer_id: null,
      auth_required: false,
    });
    await ws.next((f) => f.type === 'discovery_update' && (f.data.printer as { serial_number: string }).serial_number === bambu().serial_number);

    const port = (await h.get('/api/v1/discovery')).body.ssdp_port;
    const socket = dgram.createSocket('udp4');
    const junk = [
      Buffer.alloc(0),
      Buffer.from('M-SEARCH * HTTP/1.1\r\nST: ssdp:all\r\n\r\n'),
      Buffer.from('NOTIFY * HTTP/1.1\r\nNT: urn:bambulab-com:device:3dprinter:1\r\nLocation: 10.9.9.9\r\nUSN: ../etc\r\nDevModel.bambu.com: C12\r\n\r\n'),
      Buffer.alloc(9000, 0x41),
      Buffer.from(Array.from({ length: 1000 }, (_, i) => i % 256)),
    ];
    for (let i = 0; i < 400; i++) socket.send(junk[i % junk.length], port, '127.0.0.1');
    // A well-formed announcement after the flood (again until heard: a full socket buffer drops datagrams): once it is listed, the flood has been read.
    const marker = Buffer.from('NOTIFY * HTTP/1.1\r\nNT: urn:bambulab-com:device:3dprinter:1\r\nLocation: 127.0.0.1\r\nUSN: 03W00X000000001\r\nDevModel.bambu.com: C13\r\nDevName.bambu.com: marker\r\n\r\n');
    const list = await until(async () => {
      socket.send(marker, port, '127.0.0.1');
      const printers = (await h.get('/api/v1/discovery')).body.printers as Array<{ serial_number: string; model: string }>;
      return printers.some((p) => p.serial_number === '03W00X000000001') ? printers : null;
    }, 'marker listed');
    socket.close();
    expect(list.map((p) => [p.serial_number, p.model]).sort()).toEqual([['03W00X000000001', 'X1E'], [bambu().serial_number, bambu().model]].sort());
  });

  it('a scan of 127.0.0.1 finds the PrusaLink simulator; a public address is refused', async () => {
    const refused = await h.post('/api/v1/discovery/scan', { targets: ['8.8.8.8'] });
    expectError(refused, 422, 'VALIDATION_ERROR');
    expectError(await h.post('/api/v1/discovery/scan', { targets: ['10.0.0.0/8'] }), 422, 'VALIDATION_ERROR');

    const scan = await h.post('/api/v1/discovery/scan', { targets: [`127.0.0.1:${prusa().http_port}`, '127.0.0.1:9'] });
    expect(scan.status).toBe(200);
    expect(scan.body).toMatchObject({ probed: 2, found: 1 });
    expect(scan.body.printers).toEqual(
      expect.arrayContaining([expect.objectContaining({ type: 'prusa_core', ip_address: '127.0.0.1', port: prusa().http_port, source: 'probe', auth_required: true, added: false })]),
    );
  });

  it('adds a discovered printer with its access code alone; it connects and shows as added', async () => {
    expectError(await h.post('/api/v1/printers', { discovered: 'NOPE0000000', access_code: 'x' }), 404, 'DISCOVERED_PRINTER_NOT_FOUND');
    const created = await h.post('/api/v1/printers', { discovered: bambu().serial_number, access_code: bambu().access_code });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: bambu().name, type: 'bambu_lab' });
    const detail = await until(async () => {
      const d = (await h.get(`/api/v1/printers/${created.body.id}`)).body;
      return d.connection_status === 'connected' ? d : null;
    }, 'connected');
    expect(detail).toMatchObject({ serial_number: bambu().serial_number, model: bambu().model, ip_address: '127.0.0.1', mqtt_port: bambu().mqtt_port });

    const viaProbe = await h.post('/api/v1/printers', { discovered: `127.0.0.1:${prusa().http_port}`, access_code: prusa().access_code, name: 'Found Prusa' });
    expect(viaProbe.status).toBe(201);
    await until(async () => (await h.get(`/api/v1/printers/${viaProbe.body.id}`)).body.connection_status === 'connected', 'prusa connected');
    const listed = (await h.get('/api/v1/discovery')).body.printers as Array<{ added: boolean; printer_id: string | null; type: string; serial_number: string | null }>;
    expect(listed.find((p) => p.serial_number === bambu().serial_number)).toMatchObject({ added: true, printer_id: created.body.id });
    expect(listed.find((p) => p.type === 'prusa_core')).toMatchObject({ added: true, printer_id: viaProbe.body.id });
  });
});
