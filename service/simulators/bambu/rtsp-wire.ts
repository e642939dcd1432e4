/**
 * RTSP 1.0 on the wire (RFC 2326) for the simulated camera: requests are
 * text headers like HTTP/1.1; on the same connection the client may send
 * interleaved binary frames (`$`, channel, 16-bit length: its RTCP
 * receiver reports), which are skipped. Everything is bounded: a header
 * block over 8 KiB or a body over 64 KiB ends the connection.
 */
import { createHash } from 'node:crypto';

export interface RtspRequest {
  method: string;
  uri: string;
  /** Header names in lower case; a repeated header keeps its last value. */
  headers: Map<string, string>;
  cseq: string;
}

const MAX_HEADER_BYTES = 8 * 1024;
const MAX_BODY_BYTES = 64 * 1024;
const HEADER_END = Buffer.from('\r\n\r\n');

export class RtspProtocolError extends Error {}

/** Cuts the client's byte stream into requests. */
export class RtspReader {
  private buffer: Buffer = Buffer.alloc(0);

  /** The requests completed by `chunk`; throws RtspProtocolError for a stream that is no RTSP. */
  push(chunk: Buffer): RtspRequest[] {
    this.buffer = this.buffer.length ? Buffer.concat([this.buffer, chunk]) : chunk;
    const requests: RtspRequest[] = [];
    for (;;) {
      if (this.buffer.length === 0) break;
      if (this.buffer[0] === 0x24) {
        if (this.buffer.length < 4) break;
        const size = 4 + this.buffer.readUInt16BE(2);
        if (this.buffer.length < size) break;
        this.buffer = this.buffer.subarray(size);
        continue;
      }
      const end = this.buffer.indexOf(HEADER_END);
      if (end < 0) {
        if (this.buffer.length > MAX_HEADER_BYTES) throw new RtspProtocolError('request header too large');
        break;
      }
      if (end > MAX_HEADER_BYTES) throw new RtspProtocolError('request header too large');
      const request = parseHead(this.buffer.subarray(0, end).toString('latin1'));
      const bodyLength = Number(request.headers.get('content-length') ?? '0');
      if (!Number.isInteger(bodyLength) || bodyLength < 0 || bodyLength > MAX_BODY_BYTES) throw new RtspProtocolError('bad Content-Length');
      const total = end + HEADER_END.length + bodyLength;
      if (this.buffer.length < total) break;
      this.buffer = this.buffer.subarray(total);
      requests.push(request);
    }
    return requests;
  }
}

function parseHead(text: string): RtspRequest {
  const [line, ...lines] = text.split('\r\n');
  const match = /^([A-Z_]+) (\S+) RTSP\/1\.0$/.exec(line);
  if (!match) throw new RtspProtocolError('not an RTSP/1.0 request line');
  const headers = new Map<string, string>();
  for (const raw of lines) {
    const colon = raw.indexOf(':');
    if (colon <= 0) continue;
    headers.set(raw.slice(0, colon).trim().toLowerCase(), raw.slice(colon + 1).trim());
  }
  return { method: match[1], uri: match[2], headers, cseq: headers.get('cseq') ?? '0' };
}

const REASONS: Record<number, string> = {
  200: 'OK',
  400: 'Bad Request',
  401: 'Unauthorized',
  404: 'Stream Not Found',
  405: 'Method Not Allowed',
  454: 'Session Not Found',
  455: 'Method Not Valid in This State',
  461: 'Unsupported Transport',
  501: 'Not Implemented',
};

/** One response: status line, CSeq, Date, the given headers, then the body (with its Content-Length). */
export function rtspResponse(status: number, cseq: string, headers: Record<string, string> = {}, body = ''): Buffer {
  const lines = [`RTSP/1.0 ${status} ${REASONS[status] ?? 'Error'}`, `CSeq: ${cseq}`, `Date: ${new Date().toUTCString()}`];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  if (body) lines.push(`Content-Length: ${Buffer.byteLength(body)}`);
  return Buffer.from(`${lines.join('\r\n')}\r\n\r\n${body}`, 'latin1');
}

// --- Authentication

/** The realm live555 (the RTSP server of Bambu's X1 firmware) announces. */
export const RTSP_REALM = 'LIVE555 Streaming Media';

export interface RtspCredentials {
  user: string;
  password: string;
}

/** The challenge of a 401: Digest, as live555 sends it (no qop). */
export function digestChallenge(nonce: string): string {
  return `Digest realm="${RTSP_REALM}", nonce="${nonce}"`;
}

const md5 = (text: string) => createHash('md5').update(text, 'utf8').digest('hex');

/** Checks an Authorization header: Digest (RFC 2069/2617, against this connection's nonce) or Basic. */
export function authorized(header: string | undefined, method: string, nonce: string, expected: RtspCredentials): boolean {
  if (!header) return false;
  const space = header.indexOf(' ');
  const scheme = header.slice(0, space).toLowerCase();
  const rest = header.slice(space + 1);
  if (scheme === 'basic') {
    const decoded = Buffer.from(rest.trim(), 'base64').toString('utf8');
    return decoded === `${expected.user}:${expected.password}`;
  }
  if (scheme !== 'digest') return false;
  const params = digestParams(rest);
  if (params.username !== expected.user || params.realm !== RTSP_REALM || params.nonce !== nonce || !params.uri || !params.response) return false;
  const ha1 = md5(`${expected.user}:${RTSP_REALM}:${expected.password}`);
  const ha2 = md5(`${method}:${params.uri}`);
  const want = params.qop ? md5(`${ha1}:${nonce}:${params.nc}:${params.cnonce}:${params.qop}:${ha2}`) : md5(`${ha1}:${nonce}:${ha2}`);
  return want === params.response.toLowerCase();
}

function digestParams(text: string): Record<string, string> {
  const params: Record<string, string> = {};
  const pattern = /([a-zA-Z]+)\s*=\s*(?:"([^"]*)"|([^\s,]+))/g;
  let match: RegExpExecArray | null;
  while ((match = pattern.exec(text))) params[match[1].toLowerCase()] = match[2] ?? match[3];
  return params;
}
