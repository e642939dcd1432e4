/**
 * How a Buddy printer checks who is asking (PROTOCOLS.md §6): HTTP Digest as
 * user `maker` with realm "Printer API", a 16-hex nonce valid ~5 s, no qop
 * (RFC 2069), `stale=true` for an expired nonce; or `X-Api-Key` with the same
 * password. Options copy Prusa-Link on a Pi (realm "Administrator", qop) and
 * older firmware (X-Api-Key only).
 */
import type http from 'node:http';
import { createHash, randomBytes } from 'node:crypto';
import { parseParams, sendError } from './http-util';

const USER = 'maker';

const md5 = (s: string) => createHash('md5').update(s, 'utf8').digest('hex');

export interface AuthOptions {
  password: string;
  apiKeyOnly?: boolean;
  qop?: boolean;
  realm?: string;
  nonceTtlMs?: number;
}

export interface AuthStats {
  unauthorized: number;
  stale_nonces: number;
  digest_ok: number;
  api_key_ok: number;
}

export class BuddyAuth {
  private readonly nonces = new Map<string, number>();
  private readonly password: string;

  constructor(
    private readonly options: AuthOptions,
    private readonly stats: AuthStats,
  ) {
    this.password = options.password;
  }

  /** Checks Digest or X-Api-Key; answers 401 itself and returns false when the request may not pass. */
  authorized(req: http.IncomingMessage, res: http.ServerResponse): boolean {
    const apiKey = req.headers['x-api-key'];
    if (typeof apiKey === 'string') {
      if (apiKey === this.password) {
        this.stats.api_key_ok++;
        return true;
      }
      return this.challenge(req, res, false);
    }
    const auth = req.headers.authorization;
    if (this.options.apiKeyOnly || !auth || !/^Digest\s/i.test(auth)) return this.challenge(req, res, false);
    const p = parseParams(auth.replace(/^Digest\s+/i, ''));
    const realm = this.realm;
    const issued = p.nonce ? this.nonces.get(p.nonce) : undefined;
    if (p.username !== USER || p.realm !== realm || p.uri !== req.url || issued === undefined || !p.response)
      return this.challenge(req, res, false);
    const ha1 = md5(`${USER}:${realm}:${this.password}`);
    const ha2 = md5(`${req.method}:${p.uri}`);
    let expected: string;
    if (this.options.qop) {
      if (p.qop !== 'auth' || !p.nc || !p.cnonce) return this.challenge(req, res, false);
      expected = md5(`${ha1}:${p.nonce}:${p.nc}:${p.cnonce}:auth:${ha2}`);
    } else {
      expected = md5(`${ha1}:${p.nonce}:${ha2}`); // Buddy: RFC 2069, no qop
    }
    if (p.response.toLowerCase() !== expected) return this.challenge(req, res, false);
    if (Date.now() - issued > this.nonceTtl) {
      this.stats.stale_nonces++;
      return this.challenge(req, res, true);
    }
    this.stats.digest_ok++;
    return true;
  }

  private get realm(): string {
    return this.options.realm ?? 'Printer API';
  }

  private get nonceTtl(): number {
    return this.options.nonceTtlMs ?? 5000;
  }

  private challenge(req: http.IncomingMessage, res: http.ServerResponse, stale: boolean): false {
    this.stats.unauthorized++;
    if (!this.options.apiKeyOnly) {
      const nonce = randomBytes(8).toString('hex');
      this.rememberNonce(nonce);
      const qop = this.options.qop ? ', qop="auth"' : '';
      res.setHeader('WWW-Authenticate', `Digest realm="${this.realm}", nonce="${nonce}"${qop}, stale=${stale ? 'true' : 'false'}`);
    }
    sendError(req, res, 401, 'Unauthorized', 'Invalid credentials');
    return false;
  }

  private rememberNonce(nonce: string): void {
    const now = Date.now();
    this.nonces.set(nonce, now);
    if (this.nonces.size > 512) {
      for (const [n, t] of this.nonces) {
        if (now - t > this.nonceTtl * 20 || this.nonces.size > 512) this.nonces.delete(n);
        else break;
      }
    }
  }
}
