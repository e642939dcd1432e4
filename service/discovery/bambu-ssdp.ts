/**
 * Bambu Lab's SSDP announcements, as pure functions: a printer broadcasts `NOTIFY * HTTP/1.1` to
 * 255.255.255.255:2021 every few seconds (and answers an `M-SEARCH` with `HTTP/1.1 200 OK`) carrying
 * `Location` (its IP), `USN` (serial number) and `DevModel/DevName/DevConnect/DevBind/DevVersion.bambu.com`.
 * Anything malformed, oversized or foreign is null: a datagram is never trusted further than this parser.
 */
import { isIPv4 } from 'node:net';

export const BAMBU_SSDP_ST = 'urn:bambulab-com:device:3dprinter:1';
/** Real announcements are about 400 bytes. */
export const MAX_DATAGRAM_BYTES = 2048;

/** DevModel.bambu.com -> model; an unknown code is kept as it is. */
export const BAMBU_MODEL_CODES: Record<string, string> = {
  'BL-P001': 'X1C',
  'BL-P002': 'X1',
  C13: 'X1E',
  C11: 'P1P',
  C12: 'P1S',
  N7: 'P2S',
  N2S: 'A1',
  N1: 'A1 mini',
  O1D: 'H2D',
  O1E: 'H2D Pro',
  O2D: 'H2D Pro',
  O1C: 'H2C',
  O1C2: 'H2C',
  O1S: 'H2S',
};

/** The model code a printer of `model` announces (the simulators announce like the real thing). */
export function modelCodeOf(model: string): string {
  return Object.entries(BAMBU_MODEL_CODES).find(([, m]) => m.toLowerCase() === model.toLowerCase())?.[0] ?? model;
}

export interface BambuAnnouncement {
  serial_number: string;
  ip_address: string;
  model: string;
  model_code: string;
  name: string | null;
  /** "lan" (LAN-only mode) or "cloud". */
  connect: string | null;
  /** "free" or "occupied" (bound to a Bambu account). */
  bind: string | null;
  version: string | null;
  /** Port overrides announced by the simulators (`Ports.printfarm.dev: mqtt=1;ftps=2`); real printers send none. */
  ports: { mqtt?: number; ftps?: number };
}

/** A header value: printable, trimmed, at most `max` characters. */
function clean(value: string | undefined, max: number): string | null {
  if (value === undefined) return null;
  const text = value.replace(/[\x00-\x1f\x7f]/g, '').trim();
  return text ? text.slice(0, max) : null;
}

function ports(value: string | null): BambuAnnouncement['ports'] {
  const out: BambuAnnouncement['ports'] = {};
  for (const part of (value ?? '').split(';')) {
    const m = /^\s*(mqtt|ftps)=(\d{1,5})\s*$/.exec(part);
    const n = m ? Number(m[2]) : 0;
    if (m && n > 0 && n < 65536) out[m[1] as 'mqtt' | 'ftps'] = n;
  }
  return out;
}

/** One datagram -> the printer it announces, or null. */
export function parseBambuAnnouncement(datagram: Buffer): BambuAnnouncement | null {
  if (datagram.length === 0 || datagram.length > MAX_DATAGRAM_BYTES) return null;
  const lines = datagram.toString('latin1').split(/\r?\n/);
  const start = lines[0]?.trim() ?? '';
  if (!/^NOTIFY \* HTTP\/1\.1$/i.test(start) && !/^HTTP\/1\.1 200 OK$/i.test(start)) return null;
  const headers = new Map<string, string>();
  for (const line of lines.slice(1, 41)) {
    const at = line.indexOf(':');
    if (at <= 0) continue;
    const key = line.slice(0, at).trim().toLowerCase();
    if (!headers.has(key)) headers.set(key, line.slice(at + 1));
  }
  const target = clean(headers.get('nt') ?? headers.get('st'), 100);
  if (target?.toLowerCase() !== BAMBU_SSDP_ST) return null;
  // Location is the bare IP on Bambu printers; a URL form is accepted too.
  const location = clean(headers.get('location'), 200)?.replace(/^[a-z]+:\/\//i, '').replace(/[:/].*$/, '') ?? '';
  const serial = clean(headers.get('usn'), 64)?.replace(/^uuid:/i, '') ?? '';
  if (!isIPv4(location) || !/^[A-Z0-9]{6,32}$/i.test(serial)) return null;
  const code = clean(headers.get('devmodel.bambu.com'), 32);
  if (!code) return null;
  return {
    serial_number: serial.toUpperCase(),
    ip_address: location,
    model: BAMBU_MODEL_CODES[code] ?? code,
    model_code: code,
    name: clean(headers.get('devname.bambu.com'), 64),
    connect: clean(headers.get('devconnect.bambu.com'), 16),
    bind: clean(headers.get('devbind.bambu.com'), 16),
    version: clean(headers.get('devversion.bambu.com'), 32),
    ports: ports(clean(headers.get('ports.printfarm.dev'), 64)),
  };
}

/** What a Bambu printer broadcasts (the simulators send this). */
export function bambuAnnouncement(a: { serial: string; ip: string; modelCode: string; name: string; version?: string; ports?: { mqtt?: number; ftps?: number } }): Buffer {
  const lines = [
    'NOTIFY * HTTP/1.1',
    'HOST: 239.255.255.250:1990',
    'Server: UPnP/1.0',
    `Location: ${a.ip}`,
    `NT: ${BAMBU_SSDP_ST}`,
    `USN: ${a.serial}`,
    'Cache-Control: max-age=1800',
    `DevModel.bambu.com: ${a.modelCode}`,
    `DevName.bambu.com: ${a.name}`,
    'DevConnect.bambu.com: lan',
    'DevBind.bambu.com: free',
    `DevVersion.bambu.com: ${a.version ?? '01.08.00.00'}`,
    'DevSignal.bambu.com: -40',
  ];
  const p = a.ports ?? {};
  if (p.mqtt || p.ftps) lines.push(`Ports.printfarm.dev: ${[p.mqtt ? `mqtt=${p.mqtt}` : '', p.ftps ? `ftps=${p.ftps}` : ''].filter(Boolean).join(';')}`);
  return Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1');
}

/** What we send to make printers answer now. */
export function bambuSearch(): Buffer {
  return Buffer.from(['M-SEARCH * HTTP/1.1', 'HOST: 239.255.255.250:1990', 'MAN: "ssdp:discover"', 'MX: 2', `ST: ${BAMBU_SSDP_ST}`, '', ''].join('\r\n'), 'latin1');
}
