/**
 * The system ffmpeg, which decodes the H.264 of RTSP(S) cameras (Bambu X1 /
 * X1C / X1E / H2D / H2S / P2S, rtsp(s) camera_url) into JPEG frames.
 *
 * Printfarm never downloads a binary: ffmpeg is Debian's package (`apt-get
 * install ffmpeg`), found at `FFMPEG_PATH` or on `PATH`. The probe (a file
 * check, then `ffmpeg -version` once, bounded to 5 s) is cached for the
 * process: /health and every camera ask, and a package installed later is
 * seen after a restart.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

export interface FfmpegStatus {
  available: boolean;
  /** Absolute path of the executable, or null when none was found. */
  path: string | null;
  /** e.g. "5.1.9-0+deb12u1", or null when unknown. */
  version: string | null;
  /** One sentence for an operator: what was found, or what to install. */
  message: string;
}

/** What to do when ffmpeg is missing: the Debian package, or where to point FFMPEG_PATH. */
export const FFMPEG_INSTALL_HINT = 'apt-get install ffmpeg (the Debian/Ubuntu package), or set FFMPEG_PATH to an ffmpeg executable';

const VERSION_TIMEOUT_MS = 5000;

let cached: FfmpegStatus | null = null;

function isExecutableFile(file: string): boolean {
  try {
    if (!fs.statSync(file).isFile()) return false;
    fs.accessSync(file, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The ffmpeg on `PATH` (first match, as a shell would find it), or null. */
function onPath(pathVariable: string | undefined): string | null {
  const names = process.platform === 'win32' ? ['ffmpeg.exe', 'ffmpeg'] : ['ffmpeg'];
  for (const dir of (pathVariable ?? '').split(path.delimiter)) {
    if (!dir) continue;
    for (const name of names) {
      const candidate = path.resolve(dir, name);
      if (isExecutableFile(candidate)) return candidate;
    }
  }
  return null;
}

/** The first line of `ffmpeg -version` says "ffmpeg version <v> Copyright ...". */
function versionOf(file: string): string | null {
  try {
    const out = execFileSync(file, ['-hide_banner', '-version'], {
      timeout: VERSION_TIMEOUT_MS,
      maxBuffer: 256 * 1024,
      stdio: ['ignore', 'pipe', 'ignore'],
      encoding: 'utf8',
    });
    return /ffmpeg version (\S+)/.exec(out)?.[1] ?? null;
  } catch {
    return null;
  }
}

/** Looks for ffmpeg as `env` describes it (no cache). */
export function probeFfmpeg(env: NodeJS.ProcessEnv = process.env): FfmpegStatus {
  const configured = env.FFMPEG_PATH?.trim();
  const file = configured ? path.resolve(configured) : onPath(env.PATH);
  if (!file) {
    return { available: false, path: null, version: null, message: `ffmpeg is not installed: ${FFMPEG_INSTALL_HINT}` };
  }
  if (!isExecutableFile(file)) {
    return { available: false, path: null, version: null, message: `FFMPEG_PATH=${configured} is not an executable file: ${FFMPEG_INSTALL_HINT}` };
  }
  const version = versionOf(file);
  if (!version) {
    return { available: false, path: file, version: null, message: `${file} does not run as ffmpeg (ffmpeg -version failed): ${FFMPEG_INSTALL_HINT}` };
  }
  return { available: true, path: file, version, message: `ffmpeg ${version} at ${file}` };
}

/** The process's ffmpeg (FFMPEG_PATH, else PATH), probed once and cached. */
export function ffmpegStatus(): FfmpegStatus {
  cached ??= probeFfmpeg();
  return { ...cached };
}

/** Forgets the cached probe (tests; a service that wants to notice a fresh install). */
export function resetFfmpegStatus(): void {
  cached = null;
}

/** What GET /health tells about ffmpeg (no path when it works; a broken FFMPEG_PATH is named, so an admin's only with access control on). */
export interface FfmpegHealth {
  available: boolean;
  version: string | null;
  message: string;
}

const RTSP_CAMERAS = 'RTSPS cameras (Bambu X1, X1C, X1E, H2D, H2S, P2S) and rtsp(s) camera URLs';

export function ffmpegHealth(status: FfmpegStatus = ffmpegStatus()): FfmpegHealth {
  if (status.available) return { available: true, version: status.version, message: `${RTSP_CAMERAS} are decoded with ffmpeg ${status.version}` };
  return { available: false, version: null, message: `${RTSP_CAMERAS} have no picture: ${status.message}` };
}
