/**
 * Which camera a printer gives, decided from its configuration:
 * - a camera_url overrides everything (http(s) MJPEG stream or snapshot, rtsp(s));
 * - Bambu A1 / A1 mini / P1P / P1S: "JPEG over TLS" on camera_port (6000);
 * - Bambu X1 / X1C / X1E / H2D / H2S / P2S (or camera_port 322): RTSPS through ffmpeg;
 * - PrusaLink: /api/v1/cameras/snap with the printer's own authentication,
 *   when the printer reports a camera;
 * - Klipper: the webcam Moonraker lists (server.webcams.list, as the driver reports it), else none.
 */
import type { PrinterRecord } from '../db/repositories/printers';
import { modelFromSerial } from '../printers/bambu/model';
import { BambuTlsSource } from './bambu-tls';
import { cameraUrlKind } from './camera-url';
import type { ChannelPlan } from './channel';
import { HttpCameraSource } from './http-camera';
import { PrusaLinkCameraSource } from './prusalink';
import { createRtspSource } from './rtsp-hook';

export const JPEG_TLS_PORT = 6000;
export const RTSPS_PORT = 322;

/** The printer fields a camera depends on. */
export type CameraConfig = Pick<
  PrinterRecord,
  'id' | 'type' | 'model' | 'ip_address' | 'serial_number' | 'access_code' | 'http_port' | 'auth_method' | 'camera_port' | 'camera_url' | 'is_active' | 'connection_status'
>;

export interface PlanOptions {
  connectTimeoutMs: number;
  maxFps: number;
  /** What the printer's driver reports (undefined before its first report). */
  hasCamera: boolean | undefined;
  /** The camera URL the printer names itself (Klipper: Moonraker's webcam), when its driver reports one. */
  reportedUrl?: string | null;
}

export type CameraPlan = (ChannelPlan & { fps: number }) | { unavailable: string; kind: ChannelPlan['kind'] | null };

/** Bambu models whose camera is RTSPS on port 322. */
export function isRtspModel(model: string | null): boolean {
  return /^(X1|H2|P2|X2)/i.test((model ?? '').trim());
}

/** The camera port a Bambu printer uses by default: 322 for the RTSPS models, 6000 for the others. */
export function defaultCameraPort(model: string | null): number {
  return isRtspModel(model) ? RTSPS_PORT : JPEG_TLS_PORT;
}

export function cameraPlan(c: CameraConfig, o: PlanOptions): CameraPlan {
  const key = (...parts: unknown[]) => JSON.stringify([c.id, ...parts]);
  // A Klipper printer's own camera is the webcam Moonraker lists: read like a camera_url, which still wins.
  const url = c.camera_url || (c.type === 'klipper' ? o.reportedUrl : null);
  if (url) {
    const kind = cameraUrlKind(url);
    if (!c.is_active) return { unavailable: 'the printer is inactive', kind };
    if (kind === 'rtsp') return { kind, fps: o.maxFps, key: key(url), create: () => createRtspSource({ url, maxFps: o.maxFps, connectTimeoutMs: o.connectTimeoutMs }) };
    const httpKind = kind === 'snapshot' ? 'snapshot' : 'mjpeg';
    return {
      kind: httpKind,
      fps: httpKind === 'snapshot' ? Math.min(1, o.maxFps) : o.maxFps,
      key: key(url),
      create: () => new HttpCameraSource({ url, kind: httpKind, timeoutMs: o.connectTimeoutMs, pollMs: 1000 / Math.min(1, o.maxFps) }),
    };
  }
  if (c.type === 'bambu_lab') {
    const model = c.model ?? modelFromSerial(c.serial_number);
    const port = c.camera_port ?? defaultCameraPort(model);
    // A simulator or NAT moves the port: the model still tells the protocol, unless the port is one of the two real ones.
    const rtsp = port === RTSPS_PORT || (port !== JPEG_TLS_PORT && isRtspModel(model));
    const kind = rtsp ? 'rtsp' : 'bambu_tls';
    if (o.hasCamera === false) return { unavailable: 'the printer reports no camera', kind };
    if (!c.is_active) return { unavailable: 'the printer is inactive', kind };
    const code = c.access_code ?? '';
    if (rtsp) {
      const url = `rtsps://bblp:${encodeURIComponent(code)}@${c.ip_address.includes(':') ? `[${c.ip_address}]` : c.ip_address}:${port}/streaming/live/1`;
      return { kind, fps: o.maxFps, key: key(kind, c.ip_address, port, code), create: () => createRtspSource({ url, maxFps: o.maxFps, connectTimeoutMs: o.connectTimeoutMs }) };
    }
    return {
      kind,
      fps: Math.min(1, o.maxFps),
      key: key(kind, c.ip_address, port, code, c.serial_number),
      create: () => new BambuTlsSource({ host: c.ip_address, port, accessCode: code, serial: c.serial_number, connectTimeoutMs: o.connectTimeoutMs }),
    };
  }
  // Klipper without a webcam in Moonraker's list: camera_url names one.
  if (c.type === 'klipper') return { unavailable: "Moonraker lists no webcam: set camera_url to the webcam's MJPEG stream or snapshot URL (as in Mainsail or Fluidd)", kind: null };
  // PrusaLink: the driver tells from /api/v1/info whether a camera is there; until it does, the printer is asked.
  if (o.hasCamera === false) return { unavailable: 'the printer reports no camera', kind: 'prusalink' };
  if (!c.is_active) return { unavailable: 'the printer is inactive', kind: 'prusalink' };
  return {
    kind: 'prusalink',
    fps: Math.min(1, o.maxFps),
    key: key('prusalink', c.ip_address, c.http_port, c.access_code, c.auth_method),
    create: () =>
      new PrusaLinkCameraSource({
        host: c.ip_address,
        port: c.http_port ?? 80,
        password: c.access_code ?? '',
        authMethod: c.auth_method === 'api_key' ? 'api_key' : 'digest',
        timeoutMs: o.connectTimeoutMs,
        pollMs: 1000 / Math.min(1, o.maxFps),
      }),
  };
}
