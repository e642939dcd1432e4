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

/** Parses `key=value, key="quoted, value"` lists of auth headers (after the scheme word). */
export function parseAuthParams(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  const re = /([A-Za-z0-9_-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]*))/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(text))) out[m[1].toLowerCase()] = m[2] !== undefined ? m[2].replace(/\\(.)/g, '$1') : m[3];
  return out;
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
