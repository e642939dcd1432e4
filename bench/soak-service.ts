/**
 * The service under soak as a child process (`printfarm serve`): its own memory (VmRSS from
 * /proc), and a full garbage collection asked for through its inspector before each memory
 * checkpoint.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { WebSocket } from 'ws';
import { type MemoryCheckpoint, sleep } from './soak-support';

export class ServiceProcess {
  child!: ChildProcess;
  base = '';
  private tail = '';
  readonly errors: string[] = [];
  private exited: Promise<number | null> = Promise.resolve(null);
  private inspectorUrl = '';
  private inspector: WebSocket | null = null;
  private inspectorId = 0;
  private readonly inspectorWaiters = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();

  static async start(argv: string[], dataDir: string): Promise<ServiceProcess> {
    const s = new ServiceProcess();
    await s.spawn(argv, dataDir);
    return s;
  }

  get pid(): number {
    return this.child.pid ?? 0;
  }

  private spawn(argv: string[], dataDir: string): Promise<void> {
    // --inspect (loopback, any port): the run asks the service for a full garbage collection before it
    // measures memory at the checkpoints, see gcCheckpoint().
    this.child = spawn(process.execPath, ['--inspect=127.0.0.1:0', ...argv, 'serve', '--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir], {
      env: {
        PATH: process.env.PATH,
        LOG_LEVEL: 'warn',
        // The fastest PrusaLink poll the settings allow (5 s); the default is 30 s.
        MONITORING_INTERVAL: '5',
        UPDATE_CHECK_URL: 'http://127.0.0.1:9/unreachable',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const child = this.child;
    this.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
    let line = '';
    const onOutput = (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      this.tail = (this.tail + text).slice(-8000);
      line += text;
      let nl: number;
      while ((nl = line.indexOf('\n')) >= 0) {
        const one = line.slice(0, nl);
        line = line.slice(nl + 1);
        // pino: level 50 error, 60 fatal.
        const m = one.match(/^\{"level":(\d+)/);
        if (m && Number(m[1]) >= 50 && this.errors.length < 20) this.errors.push(one.slice(0, 500));
      }
    };
    child.stdout!.on('data', onOutput);
    child.stderr!.on('data', onOutput);
    return new Promise<void>((resolve, reject) => {
      const onData = () => {
        const m = this.tail.match(/REST API\s+(http:\/\/\S+)\/api\/v1/);
        const inspector = this.tail.match(/Debugger listening on (ws:\/\/\S+)/);
        if (m && inspector) {
          this.base = m[1];
          this.inspectorUrl = inspector[1];
          child.stdout!.off('data', onData);
          child.stderr!.off('data', onData);
          child.off('exit', onExit);
          resolve();
        }
      };
      const onExit = (code: number | null) => reject(new Error(`service exited with ${code} before serving:\n${this.tail}`));
      child.stdout!.on('data', onData);
      child.stderr!.on('data', onData);
      child.once('exit', onExit);
    });
  }

  /** Resident set size in kB, from /proc (Linux). */
  rssKb(): number {
    const status = fs.readFileSync(`/proc/${this.pid}/status`, 'utf8');
    const m = status.match(/^VmRSS:\s+(\d+)\s+kB/m);
    return m ? Number(m[1]) : NaN;
  }

  output(): string {
    return this.tail;
  }

  /** Calls a method of the service's inspector (Chrome DevTools Protocol). */
  private async inspect(method: string): Promise<any> {
    if (!this.inspector) {
      const socket = new WebSocket(this.inspectorUrl);
      socket.on('message', (raw: Buffer) => {
        const msg = JSON.parse(raw.toString('utf8')) as { id?: number; result?: unknown; error?: { message: string } };
        const waiter = msg.id === undefined ? undefined : this.inspectorWaiters.get(msg.id);
        if (!waiter) return;
        this.inspectorWaiters.delete(msg.id!);
        if (msg.error) waiter.reject(new Error(`${method}: ${msg.error.message}`));
        else waiter.resolve(msg.result);
      });
      await new Promise<void>((resolve, reject) => {
        socket.once('open', () => resolve());
        socket.once('error', reject);
      });
      this.inspector = socket;
    }
    const id = ++this.inspectorId;
    const answer = new Promise((resolve, reject) => this.inspectorWaiters.set(id, { resolve, reject }));
    this.inspector.send(JSON.stringify({ id, method }));
    return answer;
  }

  /**
   * Memory the service holds on to: RSS and V8 heap after a full garbage collection. V8 lets
   * garbage pile up in the old generation between major collections (here the RSS climbs 40-70 MB
   * in a saw-tooth over ~1.5 minutes at 20 requests/s, then drops back), so RSS samples alone
   * compare two points on that saw-tooth; after a full collection only what is retained counts.
   */
  async gcCheckpoint(): Promise<MemoryCheckpoint> {
    await this.inspect('HeapProfiler.collectGarbage');
    await this.inspect('HeapProfiler.collectGarbage');
    // Let V8's memory reducer hand freed pages back before reading RSS.
    await sleep(300);
    const heap = (await this.inspect('Runtime.getHeapUsage')) as { usedSize: number; totalSize: number };
    return { rssKb: this.rssKb(), heapUsedKb: Math.round(heap.usedSize / 1024) };
  }

  private async closeInspector(): Promise<void> {
    const socket = this.inspector;
    this.inspector = null;
    for (const w of this.inspectorWaiters.values()) w.reject(new Error('inspector closed'));
    this.inspectorWaiters.clear();
    if (!socket || socket.readyState === WebSocket.CLOSED) return;
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.close();
    const cut = setTimeout(() => socket.terminate(), 2000);
    await closed;
    clearTimeout(cut);
  }

  async stop(): Promise<number | null> {
    // A process with a debugger attached waits for it to go before it exits.
    await this.closeInspector();
    if (this.child.exitCode !== null || this.child.signalCode !== null) return this.child.exitCode;
    this.child.kill('SIGTERM');
    const kill = setTimeout(() => this.child.kill('SIGKILL'), 15_000);
    const code = await this.exited;
    clearTimeout(kill);
    return code;
  }
}
