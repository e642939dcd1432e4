/**
 * The process under measurement in bench/camera.ts, forked once per mode so
 * that its CPU (process.cpuUsage, taken in the process itself) is counted
 * alone:
 *
 * - mode "service": the real service (createService, real Bambu drivers,
 *   SQLite in a temp dir deleted at the end, camera_max_viewers raised for
 *   the run); the parent registers the printers and opens the streams
 *   through the REST API.
 * - mode "relay": the baseline, a bare TLS-to-HTTP relay: per printer one TLS
 *   connection to the camera (auth packet, the same frame reader as the
 *   service), and every frame written as a multipart part to that printer's
 *   HTTP viewers, on the same paths as the service. No hub, no rate cap, no
 *   backpressure bookkeeping, no access control, no request log: what the
 *   service does on top is the difference.
 */
import http from 'node:http';
import tls from 'node:tls';
import { authPacket, BambuFrameReader, DEFAULT_MAX_FRAME_BYTES } from '../service/cameras/bambu-protocol';
import { startBenchService } from './bench-service';
import { serveBenchWorker } from './worker-ipc';

export interface CameraBenchPrinter {
  id: string;
  access_code: string;
  camera_port: number;
}

export type CameraWorkerCommand =
  | { cmd: 'start'; mode: 'service' | 'relay'; printers: CameraBenchPrinter[]; viewers: number }
  | { cmd: 'sample'; id: number }
  | { cmd: 'close' };

interface Running {
  port: number;
  close(): Promise<void>;
}

/** The real service, with camera_max_viewers raised to the run's number of streams. */
function startService(viewers: number): Promise<Running> {
  return startBenchService({ CAMERA_MAX_VIEWERS: String(Math.max(20, viewers)) });
}

const BOUNDARY = 'printfarm-frame';

async function startRelay(printers: CameraBenchPrinter[]): Promise<Running> {
  const viewers = new Map<string, Set<http.ServerResponse>>();
  const sockets = printers.map((p) => {
    viewers.set(p.id, new Set());
    const socket = tls.connect({ host: '127.0.0.1', port: p.camera_port, rejectUnauthorized: false, maxVersion: 'TLSv1.2' }, () => socket.write(authPacket(p.access_code)));
    const reader = new BambuFrameReader(DEFAULT_MAX_FRAME_BYTES, (jpeg) => {
      const head = Buffer.from(`--${BOUNDARY}\r\nContent-Type: image/jpeg\r\nContent-Length: ${jpeg.length}\r\n\r\n`, 'latin1');
      for (const res of viewers.get(p.id)!) {
        res.write(head);
        res.write(jpeg);
        res.write('\r\n');
      }
    });
    socket.on('data', (chunk: Buffer) => reader.push(chunk));
    socket.on('error', () => undefined);
    return socket;
  });
  const server = http.createServer((req, res) => {
    const id = /^\/api\/v1\/printers\/([^/]+)\/camera\/stream$/.exec(req.url ?? '')?.[1];
    const set = id ? viewers.get(id) : undefined;
    if (!set) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'Content-Type': `multipart/x-mixed-replace; boundary=${BOUNDARY}`, 'Cache-Control': 'no-store' });
    set.add(res);
    res.once('close', () => set.delete(res));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    close: async () => {
      for (const s of sockets) s.destroy();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}

serveBenchWorker<CameraWorkerCommand, Running>({
  start: (msg) => (msg.mode === 'service' ? startService(msg.viewers) : startRelay(msg.printers)),
  sampleExtra: () => ({}),
});
