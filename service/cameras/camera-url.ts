/** A printer's camera_url: which kind of source it names, and how it is shown without its credentials. */
import type { CameraSource } from './source';

export const CAMERA_URL_PROTOCOLS = ['http:', 'https:', 'rtsp:', 'rtsps:'];
const MASK = '****';

/** Why `value` is not a usable camera URL, or null. */
export function cameraUrlProblem(value: string): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'is not a URL';
  }
  if (!CAMERA_URL_PROTOCOLS.includes(url.protocol)) return 'must be an http, https, rtsp or rtsps URL';
  if (!url.hostname) return 'needs a host';
  return null;
}

/**
 * http(s) URLs that name a single picture (mjpg-streamer's ?action=snapshot, /snapshot, /snap, *.jpg)
 * are polled; other http(s) URLs are read as MJPEG streams (either source also takes the other answer).
 */
export function cameraUrlKind(value: string): CameraSource['kind'] {
  const url = new URL(value);
  if (url.protocol === 'rtsp:' || url.protocol === 'rtsps:') return 'rtsp';
  const where = `${url.pathname}${url.search}`.toLowerCase();
  return /snapshot|snap\b|\/snap|still|\.jpe?g$|image\.cgi|action=snapshot/.test(where) ? 'snapshot' : 'mjpeg';
}

/** Query parameters that carry a camera's credentials (Foscam-style `?usr=admin&pwd=…`, tokens): secrets like a password. */
const SECRET_PARAMS = /^(pwd|pw|pass|passwd|password|token|access_token|auth|key|api_?key|secret|sig|signature|access_code)$/i;

/** `url`'s credential-carrying query parameters, as [name, value]. */
const secretParams = (url: URL): [string, string][] => [...url.searchParams].filter(([name, value]) => value && SECRET_PARAMS.test(name));

/** The values of `url`'s credential-carrying query parameters. */
export const querySecrets = (url: URL): string[] => secretParams(url).map(([, value]) => value);

/** Replaces the value of each credential-carrying query parameter of `url` by `mask`; says whether there was one. */
export function maskQuerySecrets(url: URL, mask = MASK): boolean {
  const found = secretParams(url);
  for (const [name] of found) url.searchParams.set(name, mask);
  return found.length > 0;
}

/** The URL with any user name, password and credential query parameter replaced by ****: what list and detail responses show. */
export function maskCameraUrl(value: string | null): string | null {
  if (!value) return value;
  try {
    const url = new URL(value);
    const query = maskQuerySecrets(url);
    if (!url.username && !url.password && !query) return value;
    if (url.username || url.password) {
      url.username = MASK;
      url.password = url.password ? MASK : '';
    }
    return url.toString();
  } catch {
    return value;
  }
}

/** True when `value` is what maskCameraUrl shows for `stored` (a client writing back a shown URL changes nothing). */
export function isMaskedForm(value: string, stored: string | null): boolean {
  return stored !== null && value !== stored && maskCameraUrl(stored) === value;
}
