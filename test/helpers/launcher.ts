/**
 * Runs `npm start`'s launcher (scripts/start-node-red.js) as a child process
 * on free ports in a temp user dir, and stops it as Ctrl+C would.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

export interface RunningNodeRed {
  url: string;
  child: ChildProcess;
  output: () => string;
  /** SIGTERM, then waits for the exit (code). */
  stop(): Promise<number | null>;
}

export function startNodeRed(options: { userDir: string; flows?: string; demo?: boolean; env?: Record<string, string> }, timeoutMs = 30_000): Promise<RunningNodeRed> {
  const script = path.join(__dirname, '..', '..', 'scripts', 'start-node-red.js');
  const child = spawn(process.execPath, [script, ...(options.demo ? ['--demo'] : [])], {
    env: {
      ...process.env,
      NODE_RED_PORT: '0',
      NODE_RED_HOST: '127.0.0.1',
      NODE_RED_USER_DIR: options.userDir,
      NODE_RED_LOG_LEVEL: 'warn',
      PRINTFARM_PORT: '0',
      ...(options.flows ? { PRINTFARM_FLOWS: options.flows } : {}),
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`Node-RED did not start in ${timeoutMs} ms:\n${out}`));
    }, timeoutMs);
    const onData = () => {
      const m = /Node-RED editor (http:\/\/\S+)/.exec(out);
      if (!m) return;
      clearTimeout(timer);
      child.stdout!.off('data', onData);
      resolve({
        url: m[1].replace(/\/$/, ''),
        child,
        output: () => out,
        stop: async () => {
          if (child.exitCode === null) child.kill('SIGTERM');
          return exited;
        },
      });
    };
    child.stdout!.on('data', onData);
    exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`Node-RED exited (${code}) before it started:\n${out}`));
    });
  });
}
