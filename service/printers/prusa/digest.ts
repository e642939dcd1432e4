/**
 * HTTP Digest authentication as PrusaLink speaks it (client side).
 *
 * Buddy firmware (MK4/MK4S, Core One, XL, MINI) challenges with
 * `Digest realm="Printer API", nonce="<16 hex>", stale=false|true` and no
 * qop, so the response is the RFC 2069 form MD5(HA1:nonce:HA2). Prusa-Link on
 * a Raspberry Pi may offer `qop="auth"` (RFC 2617): then the client adds a
 * cnonce and a nonce count. Both are handled here; nothing here does I/O.
 */
import { createHash, randomBytes } from 'node:crypto';

export interface DigestChallenge {
  realm: string;
  nonce: string;
  /** qop values the server offers (empty for RFC 2069 servers such as Buddy). */
  qop: string[];
  opaque: string | null;
  algorithm: string | null;
  /** true when the server rejected only because our nonce expired. */
  stale: boolean;
}

export interface DigestInput {
  username: string;
  password: string;
  realm: string;
  method: string;
  uri: string;
  nonce: string;
  /** 'auth' for RFC 2617, absent for RFC 2069. */
  qop?: string | null;
  nc?: string;
  cnonce?: string;
}

export const md5 = (text: string): string => createHash('md5').update(text, 'utf8').digest('hex');

/** The `response` value of an Authorization header. */
export function digestResponse(input: DigestInput): string {
  const ha1 = md5(`${input.username}:${input.realm}:${input.password}`);
  const ha2 = md5(`${input.method.toUpperCase()}:${input.uri}`);
  if (input.qop) return md5(`${ha1}:${input.nonce}:${input.nc}:${input.cnonce}:${input.qop}:${ha2}`);
  return md5(`${ha1}:${input.nonce}:${ha2}`);
}

/**
 * Parses `key=value, key="quoted, value"` lists of auth headers (after the
 * scheme word) in one forward pass: the header comes from the printer, and the
 * global regular expression this replaces was quadratic on a long bare word.
 */
export function parseAuthParams(text: string): Record<string, string> {
  const out: Record<string, string> = Object.create(null);
  const s = text.length > MAX_AUTH_PARAMS ? text.slice(0, MAX_AUTH_PARAMS) : text;
  const n = s.length;
  let i = 0;
  while (i < n) {
    if (!isTokenChar(s.charCodeAt(i))) {
      i++;
      continue;
    }
    const keyStart = i;
    while (i < n && isTokenChar(s.charCodeAt(i))) i++;
    const key = s.slice(keyStart, i).toLowerCase();
    let j = skipSpace(s, i);
    if (s[j] !== '=') continue;
    j = skipSpace(s, j + 1);
    if (s[j] === '"') {
      let value = '';
      let k = j + 1;
      while (k < n && s[k] !== '"') {
        const escaped = s[k] === '\\' && k + 1 < n;
        value += escaped ? s[k + 1] : s[k];
        k += escaped ? 2 : 1;
      }
      if (k < n) {
        out[key] = value;
        i = k + 1;
        continue;
      }
    }
    // A bare token (or an unterminated quote, read as written up to a space or comma).
    let k = j;
    while (k < n && !isSpace(s.charCodeAt(k)) && s[k] !== ',') k++;
    out[key] = s.slice(j, k);
    i = Math.max(k, i);
  }
  return out;
}

/** More than any real challenge (realm, nonce, qop, opaque, algorithm, stale). */
const MAX_AUTH_PARAMS = 4096;
const isSpace = (c: number) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
const isTokenChar = (c: number) => (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95 || c === 45;
function skipSpace(s: string, from: number): number {
  let i = from;
  while (i < s.length && isSpace(s.charCodeAt(i))) i++;
  return i;
}

/** The Digest challenge among the WWW-Authenticate headers, or null when the server offers none. */
export function parseDigestChallenge(header: string | string[] | undefined): DigestChallenge | null {
  const values = Array.isArray(header) ? header : header ? [header] : [];
  for (const value of values) {
    const m = /^\s*Digest\s+(.*)$/is.exec(value);
    if (!m) continue;
    const p = parseAuthParams(m[1]);
    if (!p.nonce) continue;
    return {
      realm: p.realm ?? '',
      nonce: p.nonce,
      qop: (p.qop ?? '')
        .split(',')
        .map((q) => q.trim().toLowerCase())
        .filter(Boolean),
      opaque: p.opaque ?? null,
      algorithm: p.algorithm ?? null,
      stale: (p.stale ?? '').toLowerCase() === 'true',
    };
  }
  return null;
}

/**
 * One Digest conversation: the cached challenge plus the nonce count, so
 * that every request reuses the nonce until the printer calls it stale.
 */
export class DigestSession {
  private nc = 0;

  constructor(
    readonly challenge: DigestChallenge,
    private readonly username: string,
    private readonly password: string,
    private readonly cnonce: () => string = () => randomBytes(8).toString('hex'),
  ) {}

  /** The Authorization header value for one request. */
  authorization(method: string, uri: string): string {
    const c = this.challenge;
    const qop = c.qop.includes('auth') ? 'auth' : null;
    const parts = [`username="${this.username}"`, `realm="${c.realm}"`, `nonce="${c.nonce}"`, `uri="${uri}"`];
    let response: string;
    if (qop) {
      const nc = (++this.nc).toString(16).padStart(8, '0');
      const cnonce = this.cnonce();
      response = digestResponse({ username: this.username, password: this.password, realm: c.realm, method, uri, nonce: c.nonce, qop, nc, cnonce });
      parts.push(`qop=${qop}`, `nc=${nc}`, `cnonce="${cnonce}"`);
    } else {
      response = digestResponse({ username: this.username, password: this.password, realm: c.realm, method, uri, nonce: c.nonce });
    }
    parts.push(`response="${response}"`);
    if (c.opaque !== null) parts.push(`opaque="${c.opaque}"`);
    if (c.algorithm) parts.push(`algorithm=${c.algorithm}`);
    return `Digest ${parts.join(', ')}`;
  }
}
