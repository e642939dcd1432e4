import net from 'node:net';

const LABEL = /^(?!-)[A-Za-z0-9-]{1,63}(?<!-)$/;

/** True for an IPv4/IPv6 address or a DNS host name (RFC 1123); false for URLs, ports, spaces... */
export function isHost(value: string): boolean {
  if (net.isIP(value)) return true;
  if (value.length > 253) return false;
  const labels = value.replace(/\.$/, '').split('.');
  // An all-digit last label is a mistyped IPv4 address (e.g. 192.168.1.300), not a host name.
  return labels.every((l) => LABEL.test(l)) && !/^\d+$/.test(labels[labels.length - 1]);
}
