/**
 * The IPC side of a bench worker process (bench/fleet-worker.ts,
 * bench/nodered-worker.ts): one loop for start / sample / close, the CPU,
 * memory and event-loop sample taken in the worker itself (so the parent and
 * the simulators are not counted), and the rule that the worker closes and
 * exits when its parent goes away.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';

/** What a worker runs once started. */
export interface WorkerRunning {
  port: number;
  close(): Promise<void>;
}

/** The sample every worker takes; a worker may add its own fields. */
export interface WorkerSample {
  ev: 'sample';
  id: number;
  cpuUs: number;
  wallMs: number;
  rssMb: number;
  loopP99Ms: number;
}

type BaseCommand = { cmd: 'start' } | { cmd: 'sample'; id: number } | { cmd: 'close' };
type BaseEvent = { ev: 'ready'; port: number } | WorkerSample | { ev: 'closed' } | { ev: 'error'; message: string };

export function serveBenchWorker<C extends BaseCommand, R extends WorkerRunning>(options: {
  start(msg: Extract<C, { cmd: 'start' }>): Promise<R>;
  /** Fields this worker adds to each sample (taken after the CPU time and wall clock). */
  sampleExtra(running: R | null): Record<string, number>;
}): void {
  const send = (event: BaseEvent) => process.send?.(event);
  let running: R | null = null;
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();

  process.on('message', (raw: unknown) => {
    const msg = raw as C;
    void (async () => {
      try {
        switch (msg.cmd) {
          case 'start':
            running = await options.start(msg as Extract<C, { cmd: 'start' }>);
            return send({ ev: 'ready', port: running.port });
          case 'sample': {
            const cpu = process.cpuUsage();
            const loopP99Ms = loop.percentile(99) / 1e6;
            loop.reset();
            const cpuUs = cpu.user + cpu.system;
            const wallMs = performance.now();
            const extra = options.sampleExtra(running);
            return send({ ev: 'sample', id: (msg as { id: number }).id, cpuUs, wallMs, ...extra, rssMb: Math.round(process.memoryUsage().rss / 1e6), loopP99Ms });
          }
          case 'close':
            await running?.close();
            running = null;
            send({ ev: 'closed' });
            process.disconnect?.();
            return;
        }
      } catch (err) {
        send({ ev: 'error', message: (err as Error).stack ?? String(err) });
      }
    })();
  });

  // The parent decides when to stop (Ctrl+C reaches the whole process group): close through IPC or on disconnect.
  process.on('SIGINT', () => undefined);
  // The parent went away: close (the temp dir goes too) and do not linger.
  process.on('disconnect', () => {
    setTimeout(() => process.exit(1), 15_000).unref();
    if (running) void running.close().finally(() => process.exit(0));
    else process.exit(0);
  });
}
