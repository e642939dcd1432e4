/**
 * The RTSP(S) source as the camera plan (plan.ts) creates it: Bambu X1 /
 * X1C / X1E / H2D / H2S / P2S and rtsp(s) camera_url, read by the system
 * ffmpeg (rtsp.ts). Without ffmpeg the source fails at start() with
 * UNSUPPORTED naming the package (501 CAMERA_UNSUPPORTED).
 */
export { createRtspSource, type RtspSourceOptions } from './rtsp';
