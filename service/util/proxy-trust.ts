/**
 * Which reverse proxies in front of a service are trusted (TRUST_PROXY, the aggregator's --trust-proxy),
 * and what that makes of the X-Forwarded-* headers.
 *
 * A proxy appends to X-Forwarded-For the address it was reached from and passes on whatever the client
 * sent before it, so only the right-hand entries, added by our own proxies, can be believed. The chain
 * read from the right is [socket peer, last X-Forwarded-For entry, the one before, ...]; the client is
 * the first address in it that is not a trusted proxy. Express walks the chain the same way for `req.ip`
 * when given the function `compileTrust` returns, so raw requests (a /ws upgrade) and Express routes agree.
 *
 * The setting: `true` is one proxy in front (the right-most entry is the client: trusting every hop, as
 * Express's own `true` does, let any client pick its address by sending the header itself); a number is
 * that many proxies; addresses or subnets (comma-separated) trust exactly those peers, wherever they sit.
 */
import type { IncomingMessage } from 'node:http';
import { BlockList, isIP } from 'node:net';

export type TrustProxySetting = boolean | number | string;

/** Whether the address at `hop` of the chain (0: the socket peer, 1: the right-most X-Forwarded-For entry...) is a trusted proxy. */
export type TrustFn = (address: string, hop: number) => boolean;

const ADDRESS_LIST = /^[0-9a-f.:/, ]{1,1000}$/i;

/** Parses the text of the setting; throws an Error that names what is accepted (never a secret: this is no secret). */
export function parseTrustProxy(raw: string): TrustProxySetting {
  const v = raw.trim().toLowerCase();
  if (['true', 'yes', 'on'].includes(v)) return true;
  if (['false', 'no', 'off', ''].includes(v)) return false;
  if (/^\d{1,2}$/.test(v)) return Number(v);
  if (!ADDRESS_LIST.test(v)) throw new Error('must be true, false, a proxy count or the proxies\' addresses');
  compileTrust(v); // an address or subnet that does not parse is refused at start, not on the first request
  return v;
}

/** `::ffff:10.0.0.1` (an IPv4 peer of a dual-stack socket) is 10.0.0.1. */
function plain(address: string): string {
  return address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address;
}

export function compileTrust(setting: TrustProxySetting): TrustFn {
  if (setting === false || setting === 0) return () => false;
  if (setting === true) return (_address, hop) => hop < 1;
  if (typeof setting === 'number') return (_address, hop) => hop < setting;
  const list = new BlockList();
  for (const entry of setting.split(/[\s,]+/).filter(Boolean)) {
    const [address, bits] = entry.split('/');
    const family = isIP(plain(address));
    if (family === 0) throw new Error(`"${entry}" is no IP address or subnet`);
    const type = family === 4 ? 'ipv4' : 'ipv6';
    if (bits === undefined) list.addAddress(plain(address), type);
    else {
      const prefix = Number(bits);
      if (!/^\d{1,3}$/.test(bits) || prefix > (family === 4 ? 32 : 128)) throw new Error(`"${entry}" has no valid prefix length`);
      list.addSubnet(plain(address), prefix, type);
    }
  }
  return (address) => {
    const a = plain(address);
    const family = isIP(a);
    return family !== 0 && list.check(a, family === 4 ? 'ipv4' : 'ipv6');
  };
}

/** The comma-separated entries of a header, however many times it was sent. */
function headerList(req: IncomingMessage, name: string): string[] {
  const value = req.headers[name];
  const text = Array.isArray(value) ? value.join(',') : (value ?? '');
  return text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

/**
 * The client's place in the chain: 0 when the socket peer is no trusted proxy (the headers are the
 * client's own words), else how many trusted proxies the request passed before reaching us.
 */
export function trustedHops(req: IncomingMessage, trust: TrustFn): number {
  const chain = [req.socket.remoteAddress ?? '', ...headerList(req, 'x-forwarded-for').reverse()];
  let hop = 0;
  while (hop < chain.length - 1 && trust(chain[hop], hop)) hop++;
  return hop;
}

/** The client address of a raw request: what Express makes `req.ip` with the same trust function. */
export function forwardedClient(req: IncomingMessage, trust: TrustFn): string | undefined {
  const chain = [req.socket.remoteAddress ?? '', ...headerList(req, 'x-forwarded-for').reverse()];
  return chain[trustedHops(req, trust)] || req.socket.remoteAddress;
}

/**
 * The value a trusted proxy put in a list header such as X-Forwarded-Host or X-Forwarded-Proto: the entry
 * appended by the outermost trusted proxy (the one the client reached), counted from the right as in
 * X-Forwarded-For; a proxy that sets the header instead of appending leaves one entry, which is then it.
 * Undefined when the socket peer is no trusted proxy or the header is absent.
 */
export function forwardedValue(req: IncomingMessage, name: string, trust: TrustFn): string | undefined {
  if (!trust(req.socket.remoteAddress ?? '', 0)) return undefined;
  const values = headerList(req, name);
  if (values.length === 0) return undefined;
  const hops = Math.max(1, trustedHops(req, trust));
  return values[Math.max(0, values.length - hops)];
}

/** Every entry of a list header, when the socket peer is a trusted proxy (none otherwise). */
export function forwardedValues(req: IncomingMessage, name: string, trust: TrustFn): string[] {
  return trust(req.socket.remoteAddress ?? '', 0) ? headerList(req, name) : [];
}
