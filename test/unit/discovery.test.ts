import { EventBus } from '../../service/events';
import { bambuAnnouncement, parseBambuAnnouncement } from '../../service/discovery/bambu-ssdp';
import { DiscoveryRegistry, MAX_ENTRIES, MAX_EVENTS_PER_SECOND } from '../../service/discovery/registry';
import { expandTargets, TargetError } from '../../service/discovery/targets';

const REAL = [
  'NOTIFY * HTTP/1.1',
  'HOST: 239.255.255.250:1990',
  'Server: UPnP/1.0',
  'Location: 192.168.1.42',
  'NT: urn:bambulab-com:device:3dprinter:1',
  'USN: 01P00A123456789',
  'Cache-Control: max-age=1800',
  'DevModel.bambu.com: C12',
  'DevName.bambu.com: P1S Workshop',
  'DevConnect.bambu.com: lan',
  'DevBind.bambu.com: free',
  'Devseclink.bambu.com: secure',
  'DevVersion.bambu.com: 01.08.00.00',
  '',
  '',
].join('\r\n');

describe('Bambu SSDP announcements', () => {
  it('reads a real announcement with its model from the code table', () => {
    expect(parseBambuAnnouncement(Buffer.from(REAL))).toEqual({
      serial_number: '01P00A123456789',
      ip_address: '192.168.1.42',
      model: 'P1S',
      model_code: 'C12',
      name: 'P1S Workshop',
      connect: 'lan',
      bind: 'free',
      version: '01.08.00.00',
      ports: {},
    });
    for (const [code, model] of [['BL-P001', 'X1C'], ['N1', 'A1 mini'], ['O1E', 'H2D Pro'], ['O2D', 'H2D Pro'], ['O1C2', 'H2C'], ['N7', 'P2S'], ['ZZ9', 'ZZ9']]) {
      expect(parseBambuAnnouncement(Buffer.from(REAL.replace('C12', code)))?.model).toBe(model);
    }
    const sim = parseBambuAnnouncement(bambuAnnouncement({ serial: '00M09A000000001', ip: '127.0.0.1', modelCode: 'BL-P001', name: 'Sim', ports: { mqtt: 4000, ftps: 4001 } }));
    expect(sim).toMatchObject({ model: 'X1C', ports: { mqtt: 4000, ftps: 4001 } });
  });

  it('ignores what is malformed, foreign or oversized', () => {
    const bad = [
      '',
      'garbage',
      REAL.replace('NOTIFY * HTTP/1.1', 'GET / HTTP/1.1'),
      REAL.replace('urn:bambulab-com:device:3dprinter:1', 'upnp:rootdevice'),
      REAL.replace('Location: 192.168.1.42', 'Location: not-an-ip'),
      REAL.replace('USN: 01P00A123456789', 'USN: ../../etc'),
      REAL.replace('DevModel.bambu.com: C12\r\n', ''),
      REAL + 'X'.repeat(3000),
    ];
    for (const text of bad) expect(parseBambuAnnouncement(Buffer.from(text))).toBeNull();
    expect(parseBambuAnnouncement(Buffer.from(REAL.replace('P1S Workshop', 'Evil\u0001Name' + 'n'.repeat(200))))?.name).toBe(`EvilName${'n'.repeat(56)}`);
  });
});

describe('scan targets', () => {
  it('expands private, link-local and loopback networks and addresses with ports', () => {
    expect(expandTargets(['192.168.1.0/24'])).toHaveLength(254);
    expect(expandTargets(['10.0.0.7', '127.0.0.1:8080', '[::1]:9000', '169.254.1.1', '172.16.0.1'])).toEqual([
      { ip: '10.0.0.7', port: 80 },
      { ip: '127.0.0.1', port: 8080 },
      { ip: '::1', port: 9000 },
      { ip: '169.254.1.1', port: 80 },
      { ip: '172.16.0.1', port: 80 },
    ]);
  });

  it('refuses public addresses, too many addresses and nonsense', () => {
    for (const t of ['8.8.8.8', '172.32.0.1', '192.168.0.0/8', '[2001:db8::1]:80', 'printer.example.com', '10.0.0.0/16', '10.0.0.1:70000', '1.2.3.4/24']) {
      expect(() => expandTargets([t])).toThrow(TargetError);
    }
    expect(() => expandTargets(['10.0.0.0/23', '10.0.2.0/23', '10.0.4.0/24'])).toThrow(/1024/);
  });
});

describe('discovery registry', () => {
  it('keeps at most MAX_ENTRIES, forgets after the TTL and tells only of news', () => {
    const bus = new EventBus();
    const updates: unknown[] = [];
    bus.on('discovery_update', (u) => updates.push(u));
    let now = Date.parse('2026-01-01T00:00:00Z');
    const registry = new DiscoveryRegistry(bus, () => 600, () => now);
    const found = (serial: string) => ({ type: 'bambu_lab' as const, model: 'P1S', name: null, serial_number: serial, ip_address: '10.0.0.2', source: 'ssdp' as const, ports: {} });
    registry.seen(found('A'));
    now += 1000;
    registry.seen(found('A'));
    expect(updates).toHaveLength(1);
    expect(registry.find('a')).toMatchObject({ first_seen: '2026-01-01T00:00:00.000Z', last_seen: '2026-01-01T00:00:01.000Z' });
    for (let i = 0; i < MAX_ENTRIES + 10; i++) registry.seen(found(`S${i}`));
    expect(registry.size).toBe(MAX_ENTRIES);
    // Invented printers by the thousand: /ws hears of at most MAX_EVENTS_PER_SECOND a second.
    expect(updates.length).toBeLessThanOrEqual(1 + MAX_EVENTS_PER_SECOND);
    expect(registry.find('A')).toBeUndefined();
    now += 601_000;
    expect(registry.list()).toEqual([]);
  });
});
