/**
 * What the camera tests share: a service with real drivers and short camera
 * timings, waiting for a printer to connect, and an MJPEG stream client over
 * a plain HTTP request that counts the JPEG parts it reads.
 */
import http from 'node:http';
import { driverFactory } from '../../service/printers/drivers';
import { MjpegParser } from '../../service/cameras/mjpeg-parser';
import { until } from './farm';
import { startService, type Harness } from './service';

/** A service with the real drivers, camera_timeout_s 2 and camera_idle_s 1 unless `env` says otherwise. */
export function cameraService(env: Record<string, string> = {}): Promise<Harness> {
  return startService({
    env: { CAMERA_TIMEOUT_S: '2', CAMERA_IDLE_S: '1', ...env },
    driverFactory: driverFactory({ backoffBaseMs: 100, backoffMaxMs: 1000 }),
    fleet: { watchdogMs: 3000, commandTimeoutMs: 3000, pollMs: 200, connectTimeoutMs: 4000 },
  });
}

/** Adds a printer and waits until the service is connected to it. */
export async function addConnected(h: Harness, printer: Record<string, unknown>): Promise<string> {
  const created = await h.post('/api/v1/printers', printer);
  if (created.status !== 201) throw new Error(`printer not created: ${created.status} ${created.text}`);
  const id = created.body.id as string;
  await until(async () => (await h.get(`/api/v1/printers/${id}`)).body.connection_status === 'connected', `printer ${id} connected`);
  return id;
}

export interface StreamClient {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** JPEG parts read so far. */
  parts: Buffer[];
  /** The error body when the answer was not a stream. */
  body: string;
  /** Resolves when the service ended the answer (or the connection closed). */
  ended: Promise<void>;
  close(): void;
}

/** Opens GET `path` on the service and reads its MJPEG parts until close(). Resolves once the answer's headers came (and, for a stream, its first part). */
export function openStream(base: string, path: string, headers: Record<string, string> = {}): Promise<StreamClient> {
  return new Promise((resolve, reject) => {
    const req = http.get(`${base}${path}`, { headers, agent: false }, (res) => {
      const ended = new Promise<void>((done) => res.once('close', () => done()));
      const client: StreamClient = { status: res.statusCode ?? 0, headers: res.headers, parts: [], body: '', ended, close: () => req.destroy() };
      if (client.status !== 200) {
        res.setEncoding('utf8');
        res.on('data', (t: string) => (client.body += t));
        res.once('end', () => resolve(client));
        return;
      }
      let first = true;
      const parser = new MjpegParser('printfarm-frame', 8 * 1024 * 1024, (jpeg) => {
        client.parts.push(jpeg);
        if (first) {
          first = false;
          resolve(client);
        }
      });
      res.on('data', (chunk: Buffer) => parser.push(chunk));
    });
    req.once('error', reject);
  });
}

/** Waits for `probe` with a deadline. */
export { until };
