/**
 * What went wrong, from what ffmpeg wrote to stderr before it gave up, as a
 * CameraError an operator can act on. ffmpeg repeats the input URL in its
 * messages, credentials included: every message passes through redact()
 * first, so an access code never reaches a log, an event or a response.
 */
import { CameraError } from './source';

/** The URL without its password (user kept), for messages. */
export function publicUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return redact(url, null);
  }
}

/** `text` with any `scheme://user:password@` password and the literal secret masked. */
export function redact(text: string, secret: string | null): string {
  let out = text.replace(/([a-z][a-z0-9+.-]*:\/\/[^:@/\s]*):[^@/\s]*@/gi, '$1:***@');
  if (secret && secret.length >= 3) out = out.split(secret).join('***');
  return out;
}

/** The password of a URL, decoded (null when there is none). */
export function urlSecret(url: string): string | null {
  try {
    const password = new URL(url).password;
    return password ? decodeURIComponent(password) : null;
  } catch {
    return null;
  }
}

/** The last meaningful line ffmpeg wrote (for the message's detail), redacted and bounded. */
function lastLine(stderr: string, secret: string | null): string {
  const lines = stderr
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter(Boolean);
  const line = lines[lines.length - 1] ?? '';
  return redact(line, secret).slice(0, 300);
}

/**
 * The CameraError for an ffmpeg that exited on its own. `target` names the
 * camera (URL without password); `framesSeen` tells a stream that ended
 * from one that never began.
 */
export function ffmpegFailure(stderr: string, exit: { code: number | null; signal: string | null }, target: string, secret: string | null, framesSeen: boolean): CameraError {
  const text = stderr.toLowerCase();
  const detail = lastLine(stderr, secret);
  const why = detail ? ` (ffmpeg: ${detail})` : '';
  if (/\b401\b|unauthori[sz]ed|authorization failed/.test(text)) {
    return new CameraError('AUTH', `the camera at ${target} refused the credentials (RTSP 401 Unauthorized): check the printer's access code`);
  }
  if (/connection refused/.test(text)) {
    return new CameraError('OFFLINE', `the camera at ${target} refused the connection: is the printer on, and is its LAN live view enabled?`);
  }
  if (/no route to host|network is unreachable|host is unreachable|connection timed out|name or service not known|temporary failure in name resolution|could not resolve/.test(text)) {
    return new CameraError('OFFLINE', `the camera at ${target} cannot be reached${why}`);
  }
  if (/\b404\b|not found/.test(text)) {
    return new CameraError('PROTOCOL', `the camera at ${target} has no such stream (RTSP 404)${why}`);
  }
  if (/tls|gnutls|ssl|handshake|certificate/.test(text)) {
    return new CameraError('PROTOCOL', `TLS with the camera at ${target} failed${why}`);
  }
  if (/connection reset|broken pipe|end of file|eof/.test(text)) {
    return new CameraError('OFFLINE', `the camera at ${target} closed the connection${why}`);
  }
  if (framesSeen && exit.code === 0) {
    return new CameraError('OFFLINE', `the camera at ${target} ended the stream`);
  }
  const how = exit.signal ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`;
  return new CameraError('PROTOCOL', `ffmpeg reading the camera at ${target} ${how}${why}`);
}
