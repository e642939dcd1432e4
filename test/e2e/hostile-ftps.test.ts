/**
 * BambuFtp (basic-ftp over implicit TLS) against hand-scripted hostile FTPS
 * servers on loopback: resets during the TLS handshake of the control or the
 * data connection, half a greeting, a data connection that sends part of a
 * listing or file and then resets, one that accepts and never speaks, and a
 * data port that refuses. Every list, download and upload fails within the
 * FTP timeout as a DriverError, and nothing reaches the process.
 */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { BambuFtp } from '../../service/printers/bambu/ftp';
import { DriverError } from '../../service/printers/driver';
import { BambuSimulator } from '../../service/simulators/bambu';
import { hostileKit, neverSpeaks, outcome, resetOnHello, tcpOf } from '../helpers/hostile-socket';

const { serve, cleanups } = hostileKit();
let credentials: { key: string; cert: string };
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hostile-ftps-'));
const upload = path.join(dir, 'upload.3mf');

beforeAll(async () => {
  credentials = await BambuSimulator.tlsCredentials('01P00A000000043');
  fs.writeFileSync(upload, Buffer.alloc(3 * 1024 * 1024, 2));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** An implicit-FTPS server that logs anyone in and offers `dataPort` by EPSV; LIST/RETR/STOR are answered 150 only. */
function ftpsServer(dataPort: number): Promise<number> {
  const answers: Record<string, string> = { USER: '331 password', PASS: '230 ok', FEAT: '211-Features:\r\n211 End', EPSV: `229 Extended Passive Mode (|||${dataPort}|)`, PASV: '502 no', SIZE: '213 100000', LIST: '150 here', RETR: '150 here', STOR: '150 here' };
  const server = tls.createServer({ ...credentials }, (socket) => {
    socket.write('220 hostile\r\n');
    let buffered = '';
    socket.on('data', (chunk) => {
      buffered += chunk.toString('latin1');
      for (let end = buffered.indexOf('\r\n'); end >= 0; end = buffered.indexOf('\r\n')) {
        const command = buffered.slice(0, end).split(' ')[0].toUpperCase();
        buffered = buffered.slice(end + 2);
        if (command === 'QUIT') return void socket.end('221 bye\r\n');
        if (!socket.destroyed) socket.write(`${answers[command] ?? '200 ok'}\r\n`);
      }
    });
  });
  return serve(server);
}

function ftpAt(port: number): BambuFtp {
  const ftp = new BambuFtp({ host: '127.0.0.1', port, accessCode: '12345678', timeoutMs: 500 });
  cleanups.push(() => ftp.close());
  return ftp;
}

async function expectDriverError(work: Promise<unknown>): Promise<void> {
  const err = await outcome(work);
  expect(err).toBeInstanceOf(DriverError);
  expect(['OFFLINE', 'TIMEOUT', 'PROTOCOL']).toContain((err as DriverError).code);
}

describe('the control connection', () => {
  const peers = {
    'resets during the TLS handshake': resetOnHello,
    'accepts TCP and never speaks': neverSpeaks,
    'completes TLS and never greets': () => tls.createServer({ ...credentials }, () => undefined),
    'sends half a greeting, then resets': () => tls.createServer({ ...credentials }, (s) => s.write('220 hel', () => setImmediate(() => tcpOf(s).resetAndDestroy()))),
  };
  test.each(Object.keys(peers) as (keyof typeof peers)[])('a printer that %s: listing fails as a DriverError', async (kind) => {
    await expectDriverError(ftpAt(await serve(peers[kind]())).listFiles());
  });
});

describe('the data connection', () => {
  const closedPort = async (): Promise<number> => {
    const probe = net.createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', () => resolve()));
    const { port } = probe.address() as net.AddressInfo;
    await new Promise((resolve) => probe.close(resolve));
    return port;
  };
  const peers = {
    'resets during its TLS handshake': () => serve(resetOnHello()),
    'accepts TCP and never speaks': () => serve(neverSpeaks()),
    'sends part of the answer (or reads part of the upload), then resets': () =>
      serve(
        tls.createServer({ ...credentials }, (s) => {
          s.once('data', () => tcpOf(s).resetAndDestroy());
          s.write('-rw-r--r-- 1 1000 1000 10 Jun 17 2025 a.3mf\r\n-rw-r--r-- 1 10', () => setImmediate(() => tcpOf(s).resetAndDestroy()));
        }),
      ),
    'is refused': closedPort,
  };
  test.each(Object.keys(peers) as (keyof typeof peers)[])('a printer whose data connection %s: list, download and upload each fail as a DriverError', async (kind) => {
    const ftp = ftpAt(await ftpsServer(await peers[kind]()));
    await expectDriverError(ftp.listFiles());
    await expectDriverError(ftp.download('/a.3mf', path.join(dir, 'download.3mf')));
    await expectDriverError(ftp.upload(upload, '/a.3mf'));
  });
});
