import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { tempDir } from '../helpers/service';

const BIN = path.join(__dirname, '../../bin/printfarm.js');

describe('printfarm aggregator', () => {
  let dir: string;
  beforeEach(() => (dir = tempDir('printfarm-aggregator-cli-')));
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  test('serves with the submit keys of AGGREGATOR_SUBMIT_KEY, the admin key of AGGREGATOR_ADMIN_KEY and its own database in --data-dir, and stops on SIGTERM', async () => {
    const child = spawn(process.execPath, [BIN, 'aggregator', '--port', '0', '--host', '127.0.0.1', '--data-dir', dir], {
      env: { PATH: process.env.PATH, AGGREGATOR_SUBMIT_KEY: 'key-one, key-two', AGGREGATOR_ADMIN_KEY: 'admin-key' },
    });
    let out = '';
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout!.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        const m = out.match(/Health\s+(http:\/\/\S+)\/health/);
        if (m) resolve(m[1]);
      });
      child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
      child.once('exit', (code) => reject(new Error(`exited with ${code}:\n${out}`)));
    });
    expect(out).toContain('/docs');
    expect((await fetch(`${url}/health`)).status).toBe(200);
    expect((await fetch(`${url}/stats/summary`)).status).toBe(401);
    expect((await fetch(`${url}/stats/summary`, { headers: { 'x-api-key': 'key-two' } })).status).toBe(403);
    expect((await fetch(`${url}/stats/summary`, { headers: { 'x-api-key': 'admin-key' } })).status).toBe(200);
    expect(fs.existsSync(path.join(dir, 'aggregator.db'))).toBe(true);
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });

  test('refuses to start without a submit key (exit 2)', () => {
    const run = spawnSync(process.execPath, [BIN, 'aggregator', '--port', '0', '--data-dir', dir], { env: { PATH: process.env.PATH }, encoding: 'utf8' });
    expect(run.status).toBe(2);
    expect(run.stderr).toMatch(/needs at least one submit key: --submit-key KEY or AGGREGATOR_SUBMIT_KEY/);
  });
});
