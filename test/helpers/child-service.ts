/**
 * `printfarm serve` as a child process (bin/printfarm.js, i.e. the built
 * dist/), for tests that must kill the service the hard way (SIGKILL) and
 * start it again on the same data dir. Every child started here is tracked;
 * `killChildren()` in afterEach guarantees none outlives its test.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { jsonRequest, type JsonResponse } from './service';

const BIN = path.join(__dirname, '../../bin/printfarm.js');
const live = new Set<ChildService>();

export interface ChildService {
  child: ChildProcess;
  /** http://127.0.0.1:PORT (without /api/v1). */
  base: string;
  dataDir: string;
  /** Everything the child wrote so far (stdout and stderr). */
  output(): string;
  request(method: string, urlPath: string, body?: unknown): Promise<JsonResponse>;
  get(urlPath: string): Promise<JsonResponse>;
  post(urlPath: string, body?: unknown): Promise<JsonResponse>;
  /** Sends `signal` and resolves once the process is gone (exit code, or the signal that ended it). */
  kill(signal?: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function exited(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
}

/** Starts `printfarm serve --port 0 --host 127.0.0.1 --data-dir DIR` and resolves once it prints its URL. */
export async function spawnService(dataDir: string, env: NodeJS.ProcessEnv = {}, startMs = 20_000): Promise<ChildService> {
  const child = spawn(process.execPath, [BIN, 'serve', '--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir], {
    env: { PATH: process.env.PATH, LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  // Read both pipes to the end: a child whose pipe fills up blocks.
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (out += c.toString()));

  const request = (method: string, urlPath: string, body?: unknown) => jsonRequest(handle.base, method, urlPath, body);
  const handle: ChildService = {
    child,
    base: '',
    dataDir,
    output: () => out,
    request,
    get: (p) => request('GET', p),
    post: (p, b) => request('POST', p, b),
    async kill(signal = 'SIGKILL') {
      const gone = exited(child);
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      const result = await gone;
      live.delete(handle);
      return result;
    },
  };
  live.add(handle);

  handle.base = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => done(new Error(`printfarm serve printed no URL within ${startMs} ms:\n${out}`)), startMs);
    const onData = () => {
      const m = out.match(/REST API\s+(http:\/\/\S+)\/api\/v1/);
      if (m) done(null, m[1]);
    };
    const onExit = (code: number | null) => done(new Error(`printfarm serve exited with ${code} before serving:\n${out}`));
    function done(err: Error | null, url?: string) {
      clearTimeout(timer);
      child.stdout!.off('data', onData);
      child.off('exit', onExit);
      if (err) {
        void handle.kill('SIGKILL');
        reject(err);
      } else resolve(url!);
    }
    child.stdout!.on('data', onData);
    child.once('exit', onExit);
    onData();
  });
  return handle;
}

/** SIGKILLs every child still running (afterEach / afterAll). */
export async function killChildren(): Promise<void> {
  await Promise.all([...live].map((c) => c.kill('SIGKILL')));
}
