/**
 * The addresses a PrusaLink scan may probe: "192.168.1.0/24", "10.0.0.7", "127.0.0.1:8080", "[::1]:8080".
 * Only private (10/8, 172.16/12, 192.168/16, fc00::/7), link-local (169.254/16, fe80::/10) and loopback
 * (127/8, ::1) addresses: the service is no port scanner for the internet. At most MAX_ADDRESSES a scan.
 */
import { isIPv4, isIPv6 } from 'node:net';

export const MAX_ADDRESSES = 1024;

export interface ProbeTarget {
  ip: string;
  port: number;
}

export class TargetError extends Error {
  constructor(
    readonly target: string,
    message: string,
  ) {
    super(message);
  }
}

function v4ToInt(ip: string): number {
  return ip.split('.').reduce((n, part) => n * 256 + Number(part), 0);
}

function intToV4(n: number): string {
  return [24, 16, 8, 0].map((shift) => Math.floor(n / 2 ** shift) % 256).join('.');
}

export function isScannableV4(ip: string): boolean {
  const [a, b] = ip.split('.').map(Number);
  return a === 10 || a === 127 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168) || (a === 169 && b === 254);
}

export function isScannableV6(ip: string): boolean {
  const lower = ip.toLowerCase();
  return lower === '::1' || /^f[cd][0-9a-f]{0,2}:/.test(lower) || /^fe[89ab][0-9a-f]?:/.test(lower);
}

/** One target -> its addresses; throws TargetError for a malformed or public one. */
function expand(raw: string, budget: number): ProbeTarget[] {
  const text = raw.trim();
  let host = text;
  let port = 80;
  const v6 = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(text);
  const v4port = /^([^:/]+):(\d{1,5})$/.exec(text);
  if (v6) {
    host = v6[1];
    if (v6[2]) port = Number(v6[2]);
  } else if (v4port) {
    host = v4port[1];
    port = Number(v4port[2]);
  }
  if (!(port >= 1 && port <= 65535)) throw new TargetError(raw, `"${raw}": port must be 1 to 65535`);
  if (isIPv6(host)) {
    if (!isScannableV6(host)) throw new TargetError(raw, `"${raw}" is not a private, link-local or loopback address`);
    return [{ ip: host, port }];
  }
  const cidr = /^(\d{1,3}(?:\.\d{1,3}){3})\/(\d{1,2})$/.exec(host);
  const base = cidr ? cidr[1] : host;
  if (!isIPv4(base)) throw new TargetError(raw, `"${raw}" is not an IPv4 address, an IPv4 network (a.b.c.d/n) or a bracketed IPv6 address`);
  const bits = cidr ? Number(cidr[2]) : 32;
  if (bits < 8 || bits > 32) throw new TargetError(raw, `"${raw}": the prefix must be 8 to 32`);
  const size = 2 ** (32 - bits);
  const first = Math.floor(v4ToInt(base) / size) * size;
  const last = first + size - 1;
  if (!isScannableV4(intToV4(first)) || !isScannableV4(intToV4(last))) throw new TargetError(raw, `"${raw}" is not a private, link-local or loopback network`);
  // A /24 has 254 hosts: its network and broadcast addresses are left out.
  const from = size >= 4 ? first + 1 : first;
  const to = size >= 4 ? last - 1 : last;
  if (to - from + 1 > budget) throw new TargetError(raw, `more than ${MAX_ADDRESSES} addresses in one scan`);
  const out: ProbeTarget[] = [];
  for (let n = from; n <= to; n++) out.push({ ip: intToV4(n), port });
  return out;
}

/** Every target's addresses, each once; throws TargetError for the first bad one. */
export function expandTargets(targets: readonly string[]): ProbeTarget[] {
  const seen = new Set<string>();
  const out: ProbeTarget[] = [];
  for (const target of targets) {
    for (const t of expand(target, MAX_ADDRESSES - out.length)) {
      const key = `${t.ip}|${t.port}`;
      if (seen.has(key)) continue;
      seen.add(key);
      out.push(t);
    }
  }
  return out;
}
