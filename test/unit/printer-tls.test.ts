import * as tls from 'node:tls';
import type { AddressInfo } from 'node:net';
import type { DriverConfig } from '../../service/printers/driver';
import { mqttOptions } from '../../service/printers/bambu/link';
import { printerTlsContext } from '../../service/printers/bambu/tls-context';
import { selfSignedTls } from '../../service/simulators/bambu/options';

/** A TLS server that would take TLS 1.3, as a printer's own stack would not: what does the driver's side offer? */
describe('the TLS context of the Bambu connections', () => {
  let server: tls.Server;
  let port: number;
  beforeAll(async () => {
    const creds = await selfSignedTls('01P00A000000001');
    server = tls.createServer({ key: creds.key, cert: creds.cert, minVersion: 'TLSv1.2', maxVersion: 'TLSv1.3' }, (socket) => socket.end());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const negotiated = (options: tls.ConnectionOptions) =>
    new Promise<string | null>((resolve, reject) => {
      const socket = tls.connect({ host: '127.0.0.1', port, ...options }, () => {
        resolve(socket.getProtocol());
        socket.destroy();
      });
      socket.on('error', reject);
    });

  it('is one context for every printer, capped at TLS 1.2', async () => {
    expect(printerTlsContext()).toBe(printerTlsContext());
    const config = (id: string, serial: string): DriverConfig => ({ id, ip_address: '127.0.0.1', serial_number: serial, access_code: '12345678', ports: { mqtt: port }, watchdog_ms: 60_000, command_timeout_ms: 10_000, poll_ms: 2000 });
    const a = mqttOptions(config('a', '01P00A000000001'), '01P00A000000001', port, { keepaliveSeconds: 30 });
    const b = mqttOptions(config('b', '01P00A000000002'), '01P00A000000002', port, { keepaliveSeconds: 30 });
    expect(a.tls.secureContext).toBe(b.tls.secureContext);
    expect(await negotiated(a.tls)).toBe('TLSv1.2');
    // The server does speak 1.3 to a client that offers it.
    expect(await negotiated({ rejectUnauthorized: false })).toBe('TLSv1.3');
  });
});
