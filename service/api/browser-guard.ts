/**
 * Keeps web pages from driving the farm. The API has no authentication by design (spec section 5),
 * which is fine for curl, scripts, Node-RED and Home Assistant on a trusted LAN, but a browser runs
 * code from any site: a page could POST to /printers/{id}/stop, read /ws, or, through DNS
 * rebinding, read the whole API under its own name. So:
 *  - a Host that is not ours (an IP address, localhost, this machine's names, ALLOWED_HOSTS) gets 421;
 *  - a state-changing request (or a /ws upgrade) from another origin (its Origin, else its Referer) gets
 *    403, unless that origin is listed in ALLOWED_ORIGINS; listed origins also get CORS answers so their pages can read;
 *  - every answer says `X-Content-Type-Options: nosniff`.
 * Clients that send no Origin (anything but a browser) are not affected.
 */
import { isIP } from 'node:net';
import os from 'node:os';
import type { IncomingMessage } from 'node:http';
import type { RequestHandler } from 'express';
import { ApiError, sendError } from '../http/errors';
import { compileTrust, forwardedValue, forwardedValues, type TrustFn } from '../util/proxy-trust';

export interface BrowserGuardOptions {
  /**
   * Origins whose pages may change things: `http://host:port` exactly, `:1880` for "this service's
   * host name on port 1880" (a Node-RED dashboard beside the service), or `*` for any origin.
   */
  allowedOrigins?: readonly string[];
  /** Extra Host names: `printfarm.example.com` exactly, `.example.com` for it and its subdomains, or `*` for any. */
  allowedHosts?: readonly string[];
  /** Which proxies in front are trusted (TRUST_PROXY): behind them the public host is X-Forwarded-Host. */
  trustProxy?: TrustFn;
}

/** Methods that only read: a cross-origin page cannot read their answers without CORS, which we give to listed origins only. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Splits the comma- or space-separated list of an environment variable. */
export function parseList(text: string | undefined): string[] {
  return (text ?? '')
    .split(/[\s,]+/)
    .map((s) => s.trim())
    .filter(Boolean);
}

/** `host[:port]` -> lower-case host name without brackets, port or trailing dot; null when unparsable. */
function hostName(hostHeader: string): string | null {
  try {
    const name = new URL(`http://${hostHeader}`).hostname.toLowerCase();
    return name.replace(/\.$/, '').replace(/^\[(.*)\]$/, '$1');
  } catch {
    return null;
  }
}

function machineNames(): Set<string> {
  const full = os.hostname().toLowerCase().replace(/\.$/, '');
  const short = full.split('.')[0];
  return new Set([full, short, `${short}.local`]);
}

export class BrowserGuard {
  private readonly origins: Set<string>;
  private readonly sameHostPorts: Set<string>;
  private readonly anyOrigin: boolean;
  private readonly hosts: Set<string>;
  private readonly hostSuffixes: string[];
  private readonly anyHost: boolean;
  private readonly names = machineNames();
  private readonly trust: TrustFn;

  constructor(options: BrowserGuardOptions = {}) {
    const origins = options.allowedOrigins ?? [];
    this.anyOrigin = origins.includes('*');
    this.sameHostPorts = new Set(origins.filter((o) => /^:\d{1,5}$/.test(o)).map((o) => o.slice(1)));
    this.origins = new Set(origins.filter((o) => o !== '*' && !o.startsWith(':')).map(normalizeOrigin).filter((o): o is string => o !== null));
    const hosts = (options.allowedHosts ?? []).map((h) => h.toLowerCase().replace(/\.$/, ''));
    this.anyHost = hosts.includes('*');
    this.hostSuffixes = hosts.filter((h) => h.startsWith('.'));
    this.hosts = new Set(hosts.filter((h) => h !== '*' && !h.startsWith('.')));
    this.trust = options.trustProxy ?? compileTrust(false);
  }

  /**
   * Whether the Host names us. Besides IP literals, localhost and this machine's names, single-label
   * names (a Docker service, a LAN name from the router) and the non-public suffixes `.local`,
   * `.localhost` and `.home.arpa` are ours: no site on the internet can make a browser send them.
   */
  hostAllowed(hostHeader: string | undefined): boolean {
    if (hostHeader === undefined || this.anyHost) return true;
    const name = hostName(hostHeader);
    if (name === null || name === '') return false;
    if (isIP(name) || this.names.has(name) || this.hosts.has(name)) return true;
    if (!name.includes('.')) return true;
    if (/\.(localhost|local|home\.arpa)$/.test(name)) return true;
    return this.hostSuffixes.some((suffix) => name.endsWith(suffix) || name === suffix.slice(1));
  }

  /**
   * The public host of the request: behind trusted proxies the X-Forwarded-Host entry the outermost of them
   * added, counted from the right like X-Forwarded-For (a left-hand entry may be the client's own).
   */
  private publicHost(req: IncomingMessage): string | undefined {
    return forwardedValue(req, 'x-forwarded-host', this.trust) || req.headers.host;
  }

  /** Whether `origin` may act here: our own origin, a listed one, or the same host on a listed port. */
  originAllowed(origin: string, req: IncomingMessage): boolean {
    if (this.anyOrigin) return true;
    let url: URL;
    try {
      url = new URL(origin);
    } catch {
      return false; // "null" (sandboxed frames, file: pages) and garbage
    }
    if (!/^https?:$/.test(url.protocol)) return false;
    const own = this.publicHost(req);
    if (own !== undefined && url.host === safeHost(own)) return true;
    if (this.origins.has(url.origin)) return true;
    const port = url.port || (url.protocol === 'https:' ? '443' : '80');
    return own !== undefined && this.sameHostPorts.has(port) && url.hostname === hostNameOf(own);
  }

  /**
   * Every host name the request names: Host and, behind a trusted proxy, each X-Forwarded-Host. All must be
   * ours. A rebound page is same-origin to the browser, so it may set X-Forwarded-Host itself; a proxy that
   * passes Host on and leaves that header alone (nginx's usual `proxy_set_header Host $host`) forwarded
   * "X-Forwarded-Host: localhost" beside the attacker's Host, and judging the forwarded name alone let it read the API.
   */
  private namedHosts(req: IncomingMessage): (string | undefined)[] {
    return [req.headers.host, ...forwardedValues(req, 'x-forwarded-host', this.trust)];
  }

  /** Why the request is refused, or null. Shared by HTTP requests and /ws upgrades. */
  check(req: IncomingMessage, changesState: boolean): ApiError | null {
    const foreign = this.namedHosts(req).find((host) => !this.hostAllowed(host));
    if (foreign !== undefined || !this.hostAllowed(this.publicHost(req))) {
      return new ApiError(421, 'HOST_NOT_ALLOWED', 'This service does not answer to that host name; add it to ALLOWED_HOSTS', { host: foreign ?? this.publicHost(req) ?? null });
    }
    if (!changesState) return null;
    const origin = req.headers.origin;
    if (origin !== undefined) {
      if (this.originAllowed(origin, req)) return null;
      return new ApiError(403, 'ORIGIN_NOT_ALLOWED', 'Requests from web pages of other origins are refused; add the origin to ALLOWED_ORIGINS', { origin });
    }
    // Browsers that send no Origin on a form POST (older ones, some privacy settings) still name the page in
    // Referer: a foreign page there is refused just the same. Non-browser clients send neither.
    const page = refererOrigin(req.headers.referer);
    if (page !== null && !this.originAllowed(page, req)) {
      return new ApiError(403, 'ORIGIN_NOT_ALLOWED', 'Requests from web pages of other origins are refused; add the origin to ALLOWED_ORIGINS', { origin: page });
    }
    if (req.headers['sec-fetch-site'] === 'cross-site') {
      return new ApiError(403, 'ORIGIN_NOT_ALLOWED', 'Cross-site requests from web pages are refused; add the origin to ALLOWED_ORIGINS', { origin: null });
    }
    return null;
  }

  /** The Express side: nosniff on every answer, the checks, and CORS for allowed origins (so a listed page can read the answers). */
  middleware(): RequestHandler {
    return (req, res, next) => {
      res.setHeader('X-Content-Type-Options', 'nosniff');
      const refusal = this.check(req, !SAFE_METHODS.has(req.method));
      if (refusal) return sendError(res, refusal);
      const origin = req.headers.origin;
      if (origin !== undefined && this.originAllowed(origin, req)) {
        res.setHeader('Access-Control-Allow-Origin', origin);
        res.setHeader('Vary', 'Origin');
        res.setHeader('Access-Control-Expose-Headers', 'X-Request-Id, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, Retry-After');
        if (req.method === 'OPTIONS' && req.headers['access-control-request-method']) {
          res.setHeader('Access-Control-Allow-Methods', 'GET, POST, PUT, PATCH, DELETE');
          res.setHeader('Access-Control-Allow-Headers', 'Content-Type, Authorization, X-Request-Id');
          res.setHeader('Access-Control-Max-Age', '600');
          return void res.status(204).end();
        }
      }
      next();
    };
  }
}

/** `Host` as a URL would print it (default port dropped, lower case), or '' when unparsable. */
function safeHost(hostHeader: string): string {
  try {
    return new URL(`http://${hostHeader}`).host;
  } catch {
    return '';
  }
}

function hostNameOf(hostHeader: string): string {
  try {
    return new URL(`http://${hostHeader}`).hostname;
  } catch {
    return '';
  }
}

/** The origin of a Referer (its scheme, host and port), or null when there is none to judge. */
function refererOrigin(referer: string | undefined): string | null {
  if (!referer || !URL.canParse(referer)) return null;
  const url = new URL(referer);
  return /^https?:$/.test(url.protocol) ? url.origin : null;
}

function normalizeOrigin(origin: string): string | null {
  try {
    const url = new URL(origin);
    return /^https?:$/.test(url.protocol) ? url.origin : null;
  } catch {
    return null;
  }
}
