/**
 * The simulated Moonraker's JSON-RPC 2.0 methods over its WebSocket: server
 * info, identify, webcams, Klippy's info, objects list/query/subscribe, print
 * start/pause/resume/cancel, file list and metadata, the job history. Errors are JSON-RPC
 * error objects with Moonraker's codes (400, 404, -32601...).
 */
import type WebSocket from 'ws';
import type { KlipperSimulator } from './simulator';
import { objectStatus, Subscription } from './objects';

export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/** One WebSocket client of the simulator: its subscription and its identity. */
export interface SimClient {
  ws: WebSocket;
  subscription: Subscription | null;
  id: number;
}

const objectsParam = (params: Record<string, unknown>): Record<string, string[] | null> => {
  const o = params.objects;
  if (!o || typeof o !== 'object' || Array.isArray(o)) throw new RpcError(400, "Invalid argument 'objects'");
  return Object.fromEntries(Object.entries(o as Record<string, unknown>).map(([k, v]) => [k, Array.isArray(v) ? v.filter((f): f is string => typeof f === 'string') : null]));
};

export function handleRpc(sim: KlipperSimulator, client: SimClient, method: string, params: Record<string, unknown>): unknown {
  const m = sim.machine;
  m.advance();
  const read = (name: string) => (sim.hasObject(name) ? objectStatus(m, name, { nozzleDiameter: sim.nozzleDiameter }) : undefined);
  const klippyReady = () => {
    if (m.klippy !== 'ready') throw new RpcError(503, `Klippy Host not ready (${m.klippy})`);
  };
  const klippyUp = () => {
    if (m.klippy === 'disconnected' || m.klippy === 'startup') throw new RpcError(503, 'Klippy Disconnected');
  };
  switch (method) {
    case 'server.info':
      return sim.serverInfo();
    case 'server.connection.identify':
      return { connection_id: client.id };
    case 'server.webcams.list':
      if (sim.options.cameraServed) return { webcams: [{ name: 'cam', enabled: true, service: 'mjpegstreamer-adaptive', snapshot_url: `${sim.url}/webcam/?action=snapshot`, stream_url: `${sim.url}/webcam/?action=stream` }] };
      return { webcams: sim.options.camera ? [{ name: 'cam', enabled: true, service: 'mjpegstreamer', snapshot_url: '/webcam/?action=snapshot', stream_url: '/webcam/?action=stream' }] : [] };
    case 'printer.info':
      klippyUp();
      return { state: m.klippy, state_message: m.klippyMessage, hostname: 'sim-klipper', software_version: sim.klipperVersion, cpu_info: 'simulated' };
    case 'printer.objects.list':
      klippyUp();
      return { objects: sim.objectNames() };
    case 'printer.objects.query':
    case 'printer.objects.subscribe': {
      klippyUp();
      const wanted = objectsParam(params);
      const subscription = new Subscription(wanted);
      const status = subscription.full(read);
      if (method === 'printer.objects.subscribe') {
        client.subscription = Object.keys(wanted).length ? subscription : null;
        sim.stats.subscribes++;
      }
      return { eventtime: sim.eventtime(), status };
    }
    case 'printer.print.start': {
      klippyReady();
      const filename = typeof params.filename === 'string' ? params.filename.replace(/^\/+/, '') : '';
      if (!sim.files.get(filename)) throw new RpcError(400, `File ${filename} does not exist`);
      if (!sim.startPrint(filename, 'api')) throw new RpcError(400, 'Printer is busy');
      return 'ok';
    }
    case 'printer.print.pause':
    case 'printer.print.resume':
    case 'printer.print.cancel': {
      klippyReady();
      if (sim.faults.reject_commands) throw new RpcError(400, 'Command refused');
      const ok = method.endsWith('pause') ? m.pause() : method.endsWith('resume') ? m.resume() : m.cancel();
      if (!ok) throw new RpcError(400, `Cannot ${method.split('.').pop()} in state ${m.state}`);
      sim.pushNow();
      return 'ok';
    }
    case 'server.spoolman.get_spool_id':
      if (sim.options.spool === undefined) throw new RpcError(-32601, `Method not found: ${method}`);
      return { spool_id: sim.spool?.id ?? null };
    case 'server.spoolman.proxy': {
      const s = sim.spool;
      if (sim.options.spool === undefined) throw new RpcError(-32601, `Method not found: ${method}`);
      if (!s || params.path !== `/v1/spool/${s.id}`) return { response: null, error: { status_code: 404, message: 'Spool not found' } };
      return { response: { id: s.id, filament: { id: 1, name: `Generic ${s.material}`, material: s.material, color_hex: s.color_hex, weight: s.weight }, remaining_weight: s.remaining_weight, used_weight: s.weight - s.remaining_weight, archived: false }, error: null };
    }
    case 'server.history.list':
      if (sim.options.noHistory) throw new RpcError(-32601, `Method not found: ${method}`);
      try {
        return sim.history.list(params);
      } catch (err) {
        throw new RpcError(400, (err as Error).message);
      }
    case 'server.history.get_job': {
      const job = sim.options.noHistory ? null : sim.history.get(params.uid);
      if (!job) throw new RpcError(sim.options.noHistory ? -32601 : 404, sim.options.noHistory ? `Method not found: ${method}` : `Invalid job uid: ${String(params.uid)}`);
      return { job };
    }
    case 'server.files.list':
      return sim.files.list().map((f) => ({ path: f.path, modified: f.modified, size: f.data.length, permissions: 'rw' }));
    case 'server.files.metadata': {
      const meta = sim.files.metadata(typeof params.filename === 'string' ? params.filename : '');
      if (!meta) throw new RpcError(404, 'Metadata not available');
      return meta;
    }
    default:
      throw new RpcError(-32601, `Method not found: ${method}`);
  }
}
