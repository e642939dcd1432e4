/**
 * One /ws client of bench/fleet in a thread of its own (worker_threads): it
 * reads one measured process's frames and notes when each arrived, on the
 * machine's monotonic clock (process.hrtime, shared by every thread and
 * process), and hands them to the ledger in the main thread in batches.
 *
 * Why a thread per client: the service and its baseline answer the same
 * reports at about the same time. Read by one thread, the frames of whichever
 * side came first (in a burst, a whole chunk of them) were parsed and matched
 * before the other side's frames were even timed, so the slower side's
 * latency also held the bench's own work on the faster side's frames.
 *
 * Messages to the parent: {ev:'open'}, {ev:'frames', ids, nozzles, at},
 * {ev:'dropped', code} (the service closed the client), {ev:'error', message}.
 * From the parent: {cmd:'close'}.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { WebSocket } from 'ws';

export interface ReceiverData {
  port: number;
}

export type ReceiverEvent =
  | { ev: 'open' }
  | { ev: 'frames'; ids: string[]; nozzles: number[]; at: number[] }
  /** A printer_status frame without a printer id or a numeric nozzle temperature. */
  | { ev: 'unmatched'; count: number }
  | { ev: 'dropped'; code: number }
  | { ev: 'error'; message: string };

/** How often the frames noted so far go to the main thread (their times are taken as they arrive). */
const FLUSH_MS = 20;

function run(port: number): void {
  const parent = parentPort!;
  let batch: { ids: string[]; nozzles: number[]; at: number[] } = { ids: [], nozzles: [], at: [] };
  let unmatched = 0;
  let closing = false;
  const flush = () => {
    if (batch.ids.length) parent.postMessage({ ev: 'frames', ...batch } satisfies ReceiverEvent);
    if (unmatched) parent.postMessage({ ev: 'unmatched', count: unmatched } satisfies ReceiverEvent);
    batch = { ids: [], nozzles: [], at: [] };
    unmatched = 0;
  };
  const flusher = setInterval(flush, FLUSH_MS);
  const ws = new WebSocket(`ws://127.0.0.1:${port}/ws`);
  ws.on('open', () => parent.postMessage({ ev: 'open' } satisfies ReceiverEvent));
  ws.on('message', (data: Buffer) => {
    const at = Number(process.hrtime.bigint()) / 1e6;
    let frame: { type?: string; data?: { printer_id?: unknown; temperatures?: { nozzle?: unknown } } };
    try {
      frame = JSON.parse(data.toString('utf8'));
    } catch {
      return;
    }
    if (frame.type !== 'printer_status') return;
    const id = frame.data?.printer_id;
    const nozzle = frame.data?.temperatures?.nozzle;
    if (typeof id !== 'string' || typeof nozzle !== 'number') {
      unmatched++;
      return;
    }
    batch.ids.push(id);
    batch.nozzles.push(nozzle);
    batch.at.push(at);
  });
  ws.on('error', (err) => parent.postMessage({ ev: 'error', message: err.message } satisfies ReceiverEvent));
  ws.on('close', (code: number) => {
    clearInterval(flusher);
    flush();
    if (!closing) parent.postMessage({ ev: 'dropped', code } satisfies ReceiverEvent);
    parent.close();
  });
  parent.on('message', (m: { cmd?: string }) => {
    if (m?.cmd !== 'close') return;
    closing = true;
    if (ws.readyState === WebSocket.CLOSED) return parent.close();
    ws.close();
    setTimeout(() => ws.terminate(), 2000).unref();
  });
}

if (parentPort && workerData) run((workerData as ReceiverData).port);
