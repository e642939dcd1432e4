import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import dgram from 'node:dgram';
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { parseBambuAnnouncement } from '../../service/discovery/bambu-ssdp';
import { until } from '../helpers/farm';
import { tempDir } from '../helpers/service';

const BIN = path.join(__dirname, '../../bin/printfarm.js');

/** Starts `printfarm serve` and resolves with the URL it prints. */
function serve(args: string[], env: NodeJS.ProcessEnv): Promise<{ child: ChildProcess; url: string; output: () => string }> {
  const child = spawn(process.execPath, [BIN, 'serve', ...args], { env: { PATH: process.env.PATH, LOG_LEVEL: 'warn', ...env } });
  let out = '';
  return new Promise((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      const m = out.match(/REST API\s+(http:\/\/\S+)\/api\/v1/);
      if (m) resolve({ child, url: m[1], output: () => out });
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
    child.once('exit', (code) => reject(new Error(`exited with ${code} before serving:\n${out}`)));
  });
}

describe('printfarm serve', () => {
  let dir: string;
  beforeEach(() => (dir = tempDir()));
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  test('serves on the given port and data dir, prints the URLs, and stops cleanly on SIGTERM', async () => {
    // Flags win over the environment: PORT and DATA_DIR here point elsewhere.
    const { child, url, output } = await serve(['--port', '0', '--host', '127.0.0.1', '--data-dir', dir], { PORT: '1', DATA_DIR: '/nonexistent/x' });
    expect(output()).toContain('/docs');
    expect(output()).toContain('/redoc');
    const health = await fetch(`${url}/api/v1/health`);
    expect(health.status).toBe(200);
    expect(fs.existsSync(path.join(dir, 'printfarm.db'))).toBe(true);
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });

  test('environment variables work without flags', async () => {
    const { child, url } = await serve([], { PORT: '0', HOST: '127.0.0.1', DATA_DIR: dir });
    expect((await fetch(`${url}/api/v1/health`)).status).toBe(200);
    expect(fs.existsSync(path.join(dir, 'printfarm.db'))).toBe(true);
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGINT');
    expect(await exited).toBe(0);
  });

  test('bad configuration exits with status 2 and says what is wrong', () => {
    const bad = spawnSync(process.execPath, [BIN, 'serve', '--port', 'eighty'], { encoding: 'utf8', env: { PATH: process.env.PATH } });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/PORT.*whole number/);
    const badEnv = spawnSync(process.execPath, [BIN, 'serve', '--port', '0', '--data-dir', dir], {
      encoding: 'utf8',
      env: { PATH: process.env.PATH, GCODE_RENDER_MAX_LINES: '5' },
    });
    expect(badEnv.status).toBe(2);
    expect(badEnv.stderr).toMatch(/GCODE_RENDER_MAX_LINES/);
    const unknown = spawnSync(process.execPath, [BIN, 'frobnicate'], { encoding: 'utf8' });
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toContain('Usage');
  });
});

describe('printfarm simulate', () => {
  test('--json prints exactly one line with ready printer bodies and control URLs; --announce sends SSDP announcements; stops on SIGTERM', async () => {
    const udp = dgram.createSocket('udp4');
    const heard: Buffer[] = [];
    udp.on('message', (m) => heard.push(m));
    await new Promise<void>((resolve) => udp.bind(0, '127.0.0.1', () => resolve()));
    const udpPort = (udp.address() as AddressInfo).port;
    const child = spawn(process.execPath, [BIN, 'simulate', '--bambu', '1', '--prusa', '1', '--klipper', '1', '--speed', '50', '--json', '--announce', String(udpPort)], { env: { PATH: process.env.PATH } });
    let out = '';
    const line = await new Promise<string>((resolve, reject) => {
      child.stdout!.on('data', (c: Buffer) => {
        out += c.toString();
        if (out.includes('\n')) resolve(out.slice(0, out.indexOf('\n')));
      });
      child.once('exit', (code) => reject(new Error(`exited with ${code}: ${out}`)));
    });
    const { printers } = JSON.parse(line);
    expect(printers.map((p: { printer: { type: string } }) => p.printer.type)).toEqual(['bambu_lab', 'prusa_core', 'klipper']);
    expect(printers[0].printer).toMatchObject({ ip_address: '127.0.0.1', serial_number: expect.any(String), access_code: expect.any(String), mqtt_port: expect.any(Number), ftps_port: expect.any(Number) });
    expect(printers[1].printer).toMatchObject({ ip_address: '127.0.0.1', access_code: expect.any(String), http_port: expect.any(Number) });
    expect(printers[2].printer).toMatchObject({ ip_address: '127.0.0.1', model: expect.any(String), http_port: expect.any(Number) });
    for (const p of printers) {
      const state = await (await fetch(`${p.control_url}/state`)).json();
      const printable = p.printer.type === 'klipper' ? /\.gcode$/ : /\.gcode\.3mf$|\.3MF$/i;
      expect(state).toMatchObject({ status: expect.any(String), progress: expect.any(Number), files: expect.arrayContaining([expect.stringMatching(printable)]) });
    }
    // The Bambu printer announces itself like a real one, with its model code and port overrides.
    const announced = await until(() => heard.map((m) => parseBambuAnnouncement(m)).find((a) => a?.serial_number === printers[0].printer.serial_number), 'an announcement', 10_000);
    expect(announced).toMatchObject({ ip_address: '127.0.0.1', model: printers[0].printer.model, ports: { mqtt: printers[0].printer.mqtt_port, ftps: printers[0].printer.ftps_port } });
    udp.close();
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(out.trim().split('\n')).toHaveLength(1);
    const bad = spawnSync(process.execPath, [BIN, 'simulate', '--announce', 'lots'], { encoding: 'utf8' });
    expect(bad.status).not.toBe(0);
    expect(bad.stderr).toMatch(/--announce must be a UDP port/);
  });
});
