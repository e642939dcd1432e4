/**
 * What went wrong, from what ffmpeg wrote to stderr before it gave up, as a
 * CameraError an operator can act on. ffmpeg repeats the input URL in its
 * messages, credentials included: every message passes through redact()
 * first, so an access code never reaches a log, an event or a response.
 */
import { maskQuerySecrets, querySecrets } from './camera-url';
import { CameraError } from './source';

/** The URL without its password and credential query parameters (user kept), for messages. */
export function publicUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    maskQuerySecrets(parsed, '***');
    return parsed.toString();
  } catch {
    return redact(url, []);
  }
}

/** `text` with any `scheme://user:password@` password and the literal secrets masked. */
export function redact(text: string, secrets: readonly string[]): string {
  let out = text.replace(/([a-z][a-z0-9+.-]*:\/\/[^:@/\s]*):[^@/\s]*@/gi, '$1:***@');
  for (const secret of secrets) if (secret.length >= 3) out = out.split(secret).join('***');
  return out;
}

/** The secrets a URL carries, decoded: its password and its credential query parameters' values (ffmpeg repeats them). */
export function urlSecrets(url: string): string[] {
  try {
    const parsed = new URL(url);
    const secrets = querySecrets(parsed);
    if (parsed.password) secrets.push(decodeURIComponent(parsed.password));
    return secrets;
  } catch {
    return [];
  }
}

/** The last meaningful line ffmpeg wrote (for the message's detail), redacted and bounded. */
function lastLine(stderr: string, secrets: readonly string[]): string {
  const lines = stderr
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter(Boolean);
  const line = lines[lines.length - 1] ?? '';
  return redact(line, secrets).slice(0, 300);
}

/**
 * The CameraError for an ffmpeg that exited on its own. `target` names the
 * camera (URL without password); `framesSeen` tells a stream that ended
 * from one that never began.
 */
export function ffmpegFailure(stderr: string, exit: { code: number | null; signal: string | null }, target: string, secrets: readonly string[], framesSeen: boolean): CameraError {
  const text = stderr.toLowerCase();
  const detail = lastLine(stderr, secrets);
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
