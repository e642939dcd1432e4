/**
 * `npm start` (scripts/start-node-red.js) no longer hands the editor, which
 * deploys flows that run code with the farm's rights, to anyone on the LAN:
 * with no settings it listens on 127.0.0.1 only; beyond loopback, or when the
 * embedded service has access control, the editor's admin API wants a login
 * whose password is in a file only its owner reads.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startNodeRed, type RunningNodeRed } from '../helpers/launcher';
import { tempDir } from '../helpers/service';

/** An address of this machine other than loopback (what a LAN client connects to). */
const lanAddress = Object.values(os.networkInterfaces())
  .flat()
  .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;
const withLan = lanAddress ? test : test.skip;
if (!lanAddress) process.stderr.write('note: start-node-red LAN tests skipped: this machine has no non-loopback IPv4 address\n');

const portOf = (run: RunningNodeRed) => new URL(run.url).port;

async function token(base: string, password: string): Promise<Response> {
  return fetch(`${base}/auth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_id: 'node-red-admin', grant_type: 'password', scope: '*', username: 'admin', password }),
  });
}

describe('npm start: who may use the editor', () => {
  let userDir: string;
  let run: RunningNodeRed | null = null;
  beforeEach(() => {
    userDir = tempDir('printfarm-editor-');
  });
  afterEach(async () => {
    await run?.stop();
    run = null;
    fs.rmSync(userDir, { recursive: true, force: true });
  });

  withLan('with no settings the editor answers on loopback only, and no LAN address reaches its admin API', async () => {
    run = await startNodeRed({ userDir, env: { NODE_RED_HOST: '' } });
    expect(run.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(run.output()).toContain('login      none: the editor answers on this machine only');
    // The admin API answers here without a login (GET /settings: /flows may say 400 while the flows still start).
    expect((await fetch(`${run.url}/settings`)).status).toBe(200);
    await expect(fetch(`http://${lanAddress}:${portOf(run)}/settings`)).rejects.toThrow();
    expect(fs.existsSync(path.join(userDir, 'admin-password.txt'))).toBe(false);
  }, 60_000);

  withLan('opened to the network, the admin API wants the login whose password is in a 0600 file', async () => {
    run = await startNodeRed({ userDir, env: { NODE_RED_HOST: '0.0.0.0' } });
    const file = path.join(userDir, 'admin-password.txt');
    const password = fs.readFileSync(file, 'utf8').trim();
    expect(password.length).toBeGreaterThanOrEqual(20);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(run.output()).toContain(`login      user "admin", password in ${file}`);
    expect(run.output()).not.toContain(password);

    const lan = `http://${lanAddress}:${portOf(run)}`;
    expect((await fetch(`${lan}/flows`)).status).toBe(401);
    expect((await fetch(`${lan}/flows`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '[]' })).status).toBe(401);
    expect((await token(lan, 'not the password')).status).toBe(403);
    const granted = await token(lan, password);
    expect(granted.status).toBe(200);
    const { access_token } = (await granted.json()) as { access_token: string };
    expect((await fetch(`${lan}/flows`, { headers: { authorization: `Bearer ${access_token}` } })).status).toBe(200);
  }, 60_000);

  test('when the embedded service has tokens, the editor wants a login on loopback too (NODE_RED_ADMIN_PASSWORD)', async () => {
    const password = 'correct horse battery staple';
    run = await startNodeRed({ userDir, env: { AUTH_TOKENS: 'admin:0123456789abcdef0123', NODE_RED_ADMIN_PASSWORD: password } });
    expect(run.output()).toContain('password in NODE_RED_ADMIN_PASSWORD (the embedded service has access control on)');
    expect((await fetch(`${run.url}/flows`)).status).toBe(401);
    expect((await token(run.url, password)).status).toBe(200);
    expect(fs.existsSync(path.join(userDir, 'admin-password.txt'))).toBe(false);
  }, 60_000);
});

describe('npm start: the banner', () => {
  const userDir = tempDir('printfarm-banner-');
  let run: RunningNodeRed | null = null;
  afterAll(async () => {
    await run?.stop();
    fs.rmSync(userDir, { recursive: true, force: true });
  });

  test('is printed once the flows have started, so its dashboard link answers (Node-RED starts them after RED.start() resolves)', async () => {
    // An mqtt in node without its broker says so while the flows start: the banner must come after that line.
    const flows = path.join(userDir, 'seed-flows.json');
    fs.writeFileSync(flows, JSON.stringify([{ id: 'f1', type: 'tab', label: 'banner' }, { id: 'm1', type: 'mqtt in', z: 'f1', topic: 'x', qos: '0', datatype: 'auto', broker: '', wires: [[]] }]));
    run = await startNodeRed({ userDir: path.join(userDir, 'nr'), flows });
    const out = run.output();
    const started = out.indexOf('missing broker configuration');
    expect(started).toBeGreaterThanOrEqual(0);
    expect(started).toBeLessThan(out.indexOf('Node-RED editor'));
  }, 60_000);
});
