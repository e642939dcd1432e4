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

const STATUS_FRAME = Buffer.from('{"type":"printer_status"');
const PRINTER_ID = Buffer.from('"data":{"printer_id":"');
const NOZZLE = Buffer.from('"temperatures":{"nozzle":');

/**
 * A printer_status frame's printer id and nozzle temperature, read off its bytes as the service and the relay
 * write it (fleet-status.ts statusEvent, fleet-relay.ts frameOf); the frame parsed whole when it is shaped
 * otherwise. 'other' for another type of frame, null for a printer_status without an id or a numeric nozzle
 * temperature. Parsing every frame whole made each reader scavenge about once a second for up to 4 ms, and
 * a reader's pause delays the arrival times of its side's frames only.
 */
export function readStatusFrame(data: Buffer): { id: string; nozzle: number } | 'other' | null {
  if (data.length > STATUS_FRAME.length && data.compare(STATUS_FRAME, 0, STATUS_FRAME.length, 0, STATUS_FRAME.length) === 0) {
    const idAt = data.indexOf(PRINTER_ID);
    const idEnd = idAt < 0 ? -1 : data.indexOf(0x22, idAt + PRINTER_ID.length);
    const nozzleAt = data.indexOf(NOZZLE);
    // An id with an escape in it is left to the parser.
    const escape = idAt < 0 ? -1 : data.indexOf(0x5c, idAt + PRINTER_ID.length);
    if (idEnd > 0 && nozzleAt > 0 && (escape < 0 || escape > idEnd)) {
      const nozzle = numberAt(data, nozzleAt + NOZZLE.length);
      if (nozzle !== null) return { id: data.toString('latin1', idAt + PRINTER_ID.length, idEnd), nozzle };
    }
  }
  let frame: { type?: string; data?: { printer_id?: unknown; temperatures?: { nozzle?: unknown } } };
  try {
    frame = JSON.parse(data.toString('utf8'));
  } catch {
    return 'other';
  }
  if (frame?.type !== 'printer_status') return 'other';
  const id = frame.data?.printer_id;
  const nozzle = frame.data?.temperatures?.nozzle;
  return typeof id === 'string' && typeof nozzle === 'number' ? { id, nozzle } : null;
}

/** A JSON number of at most 24 characters starting at `at`, up to the next `,` or `}`; null otherwise. */
function numberAt(data: Buffer, at: number): number | null {
  let end = at;
  while (end < data.length && end - at <= 24 && data[end] !== 0x2c && data[end] !== 0x7d) end++;
  if (end === at || end >= data.length || end - at > 24) return null;
  const text = data.toString('latin1', at, end);
  const value = Number(text);
  return text.trim() === text && Number.isFinite(value) ? value : null;
}

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
    const frame = readStatusFrame(data);
    if (frame === 'other') return;
    if (!frame) {
      unmatched++;
      return;
    }
    batch.ids.push(frame.id);
    batch.nozzles.push(frame.nozzle);
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
