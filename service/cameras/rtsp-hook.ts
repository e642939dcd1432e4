/**
 * HOOK for the RTSPS source (X1 / X1C / X1E / H2D / H2S / P2S and rtsp(s)
 * camera_url): the `cameras-rtsp` branch replaces this function with its
 * ffmpeg-based source (and the 501 CAMERA_UNSUPPORTED / GET /health note when
 * ffmpeg is missing). Until it is merged, RTSP cameras answer 501.
 */
import { CameraError, type CameraSource } from './source';

export interface RtspSourceOptions {
  /** rtsp:// or rtsps:// URL, credentials included. */
  url: string;
  /** Frames per second to decode at most. */
  maxFps: number;
  /** How long connecting may take (ms). */
  connectTimeoutMs: number;
}

export function createRtspSource(options: RtspSourceOptions): CameraSource {
  void options;
  throw new CameraError('UNSUPPORTED', 'RTSP(S) cameras need the ffmpeg-based source, which this build does not include yet');
}
