/**
 * The one camera a simulated Bambu printer has, chosen by its model as the
 * real printers do: "JPEG over TLS" (bambu/camera.ts, port 6000 on a real
 * A1 / A1 mini / P1P / P1S) or RTSPS (bambu/rtsps-camera.ts, port 322 on a
 * real X1 / X1C / X1E / H2D / H2S / P2S). Both answer the same calls (port,
 * setEnabled, setLink, close, stats), so the simulator, its control API and
 * GET /state treat them alike.
 */
import { SimCamera } from './camera';
import type { SimPrinter } from './printer';
import { hasRtspsCamera, SimRtspsCamera } from './rtsps-camera';

export type PrinterCamera = SimCamera | SimRtspsCamera;

export interface PrinterCameraOptions {
  key: string;
  cert: string;
  faults: { camera_stalled: boolean };
  /** Port to listen on (default 0: any free port). */
  port?: number;
  /** Port-6000 camera only: picture size, frame interval, send-time stamps. */
  size?: { width: number; height: number };
  intervalMs?: number;
  stamp?: boolean;
}

/** The listening camera of `sim`'s model, or null for a model without one. An RTSPS camera without ffmpeg is returned switched off (its unavailableReason says why). */
export async function openPrinterCamera(
  sim: { name: string; model: string; accessCode: string; printer: SimPrinter; status: string },
  o: PrinterCameraOptions,
): Promise<PrinterCamera | null> {
  if (hasRtspsCamera(sim.model)) {
    const camera = new SimRtspsCamera({
      label: sim.name,
      caption: () => `${sim.status} ${sim.printer.progress} %`,
      accessCode: sim.accessCode,
      key: o.key,
      cert: o.cert,
      faults: o.faults,
      port: o.port,
    });
    await camera.start();
    return camera;
  }
  if (SimCamera.servedBy(sim.model)) return SimCamera.open(sim, o);
  return null;
}

/** The port a client reaches the camera on, or null while there is none (an RTSPS camera that never started: no ffmpeg). */
export function cameraPort(camera: PrinterCamera | null): number | null {
  return camera && camera.port > 0 ? camera.port : null;
}

/** Why the camera cannot run here (an RTSPS camera without ffmpeg), or null. */
export function cameraUnavailable(camera: PrinterCamera | null): string | null {
  return camera instanceof SimRtspsCamera ? camera.unavailableReason : null;
}

/** GET /state's camera keys: where it listens, whether it is on, its protocol, why it cannot run. */
export function cameraState(camera: PrinterCamera | null): Record<string, string | number | boolean | null> {
  return {
    camera_port: cameraPort(camera) ?? 0,
    camera_enabled: camera?.isEnabled ?? false,
    camera_protocol: camera === null ? null : camera instanceof SimRtspsCamera ? 'rtsps' : 'jpeg_tls',
    camera_unavailable: cameraUnavailable(camera),
  };
}

/** GET /state's camera counters (zeros without a camera); an RTSPS camera adds plays, who watches now and whether its encoder runs. */
export function cameraStats(camera: PrinterCamera | null): Record<string, number | boolean> {
  const counters = {
    camera_connections: camera?.stats.connections ?? 0,
    camera_open_connections: camera?.openConnections ?? 0,
    camera_auth_failures: camera?.stats.auth_failures ?? 0,
    camera_frames_sent: camera?.stats.frames_sent ?? 0,
  };
  if (!(camera instanceof SimRtspsCamera)) return counters;
  const { plays, players, encoder_running } = camera.stats;
  return { ...counters, camera_plays: plays, camera_players: players, camera_encoder_running: encoder_running };
}
