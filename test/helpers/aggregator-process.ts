/**
 * `printfarm aggregator` as a child process (bin/printfarm.js, i.e. the built dist/): resolves once it
 * prints where it serves. Needs `npm run build`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

const BIN = path.join(__dirname, '../../bin/printfarm.js');

export interface AggregatorProcess {
  /** http://127.0.0.1:PORT */
  url: string;
  child: ChildProcess;
  output(): string;
  /** SIGTERM; resolves with the exit code. */
  stop(): Promise<number | null>;
}

/** `printfarm aggregator <args>` on 127.0.0.1 and a free port (the flags go after `args`, so they win), with only `env` and PATH. */
export function startAggregatorProcess(args: string[], env: NodeJS.ProcessEnv, startMs = 30_000): Promise<AggregatorProcess> {
  const child = spawn(process.execPath, [BIN, 'aggregator', ...args, '--port', '0', '--host', '127.0.0.1'], {
    env: { PATH: process.env.PATH, LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`aggregator did not start:\n${out}`));
    }, startMs);
    child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const m = out.match(/Health\s+(http:\/\/\S+)\/health/);
      if (!m) return;
      clearTimeout(timer);
      resolve({
        url: m[1],
        child,
        output: () => out,
        stop: async () => {
          if (child.exitCode === null) child.kill('SIGTERM');
          return exited;
        },
      });
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`aggregator exited (${code}):\n${out}`));
    });
  });
}
