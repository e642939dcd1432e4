/**
 * The simulated PrusaLink printer's camera, for printers started with
 * `camera: true`: `GET /api/v1/cameras` lists one camera and
 * `GET /api/v1/cameras/snap` answers a JPEG that shows the printer's name,
 * state and progress (camera-picture.ts). Without a camera the list is empty
 * and snap is 404. `POST /camera {"enabled": false}` disconnects it (listed
 * as not connected, snap 503); the `camera_stalled` fault makes snap requests
 * hang without an answer.
 */
import type http from 'node:http';
import { PictureCache, type PictureFacts } from '../camera-picture';
import { HttpError, sendJson } from './http-util';

export class PrusaSimCamera {
  enabled = true;
  readonly stats = { snaps: 0 };
  private readonly pictures = new PictureCache();
  private readonly held = new Set<http.ServerResponse>();

  constructor(
    private readonly present: boolean,
    private readonly facts: () => PictureFacts,
    private readonly stalled: () => boolean,
  ) {}

  list(res: http.ServerResponse): void {
    if (!this.present) return sendJson(res, 200, []);
    const config = { path: '/dev/video0', name: 'Simulated camera', driver: 'V4L2', resolution: '320x180' };
    sendJson(res, 200, [{ camera_id: 'sim-camera-1', config, connected: this.enabled, detected: true, stored: true, linked: false }]);
  }

  snap(res: http.ServerResponse): void {
    if (!this.present) throw new HttpError(404, 'Not Found', 'No camera');
    if (!this.enabled) throw new HttpError(503, 'Service Unavailable', 'The camera is not connected');
    if (this.stalled()) {
      this.held.add(res);
      res.once('close', () => this.held.delete(res));
      return;
    }
    const jpeg = this.pictures.get(this.facts());
    this.stats.snaps++;
    res.writeHead(200, { 'Content-Type': 'image/jpeg', 'Content-Length': String(jpeg.length), 'Cache-Control': 'no-cache' });
    res.end(jpeg);
  }

  /** Ends the requests a stall holds (the stall ended, the simulator closes). */
  release(): void {
    for (const res of this.held) res.socket?.destroy();
    this.held.clear();
  }
}
