/**
 * The PrusaLink camera: `GET /api/v1/cameras` once (an empty list means the
 * printer has no camera), then `GET /api/v1/cameras/snap` for each picture,
 * with the printer's own Digest or X-Api-Key authentication (the driver's
 * HTTP client: same deadlines, same 4 MiB answer bound, same no-fallback rule).
 */
import { DriverError } from '../printers/driver';
import { PrusaHttpClient, type AuthMethod } from '../printers/prusa/http';
import { CameraMissing } from './errors';
import { PollingSource } from './polling';
import { CameraError, type CameraSource } from './source';

export interface PrusaLinkCameraOptions {
  host: string;
  port: number;
  password: string;
  authMethod: AuthMethod;
  timeoutMs: number;
  pollMs: number;
}

export class PrusaLinkCameraSource extends PollingSource implements CameraSource {
  readonly kind = 'prusalink' as const;
  private readonly http: PrusaHttpClient;
  private listed = false;

  constructor(options: PrusaLinkCameraOptions) {
    super(options.pollMs);
    this.http = new PrusaHttpClient({ host: options.host, port: options.port, username: 'maker', password: options.password, authMethod: options.authMethod, timeoutMs: options.timeoutMs });
  }

  protected async fetchOnce(signal: AbortSignal): Promise<Buffer | null> {
    try {
      if (!this.listed) {
        const list = await this.http.json<unknown>('/api/v1/cameras', { signal });
        const cameras = Array.isArray(list) ? list : Array.isArray((list as { camera_list?: unknown })?.camera_list) ? (list as { camera_list: unknown[] }).camera_list : [];
        if (cameras.length === 0) throw new CameraMissing('the printer reports no camera (GET /api/v1/cameras is empty)');
        this.listed = true;
      }
      const answer = await this.http.request('GET', '/api/v1/cameras/snap', { signal, headers: { accept: 'image/jpeg, image/png' } });
      return answer.status === 204 || answer.body.length === 0 ? null : answer.body;
    } catch (err) {
      throw cameraErrorOf(err);
    }
  }

  protected stop(): void {
    super.stop();
    this.http.close();
  }
}

function cameraErrorOf(err: unknown): unknown {
  if (!(err instanceof DriverError)) return err;
  switch (err.code) {
    case 'AUTH':
      return new CameraError('AUTH', `PrusaLink refused the access code (${err.message})`);
    case 'OFFLINE':
      return new CameraError('OFFLINE', err.message);
    case 'TIMEOUT':
      return new CameraError('TIMEOUT', err.message);
    case 'NOT_FOUND':
      return new CameraMissing('the printer has no camera (PrusaLink answers 404)');
    default:
      return new CameraError('PROTOCOL', err.message);
  }
}
