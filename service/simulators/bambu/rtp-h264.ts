/**
 * H.264 over RTP (RFC 6184, packetization-mode 1) for RTSP over TCP
 * (RFC 2326 §10.12, "interleaved"): a NAL unit that fits travels as one
 * packet, a larger one is cut into FU-A fragments; the marker bit ends each
 * picture. Every RTP packet goes out as `$`, channel, 16-bit length, packet.
 */
import { randomInt } from 'node:crypto';

export const RTP_PAYLOAD_TYPE = 96;
/** RTP payload per packet, as over UDP on an Ethernet MTU (a real camera does the same over TCP). */
export const RTP_MAX_PAYLOAD = 1400;

const FU_A = 28;

export class RtpH264Packetizer {
  readonly ssrc = randomInt(0, 2 ** 32);
  /** The sequence number of the next packet (random start, RFC 3550 §5.1). */
  sequence = randomInt(0, 2 ** 16);

  constructor(
    public channel = 0,
    private readonly maxPayload = RTP_MAX_PAYLOAD,
  ) {}

  /** The interleaved packets of one picture (its NAL units in order) at `timestamp` (90 kHz). */
  picture(nals: Buffer[], timestamp: number): Buffer[] {
    const packets: Buffer[] = [];
    nals.forEach((nal, index) => {
      const last = index === nals.length - 1;
      for (const { payload, end } of fragments(nal, this.maxPayload)) packets.push(this.packet(payload, timestamp, last && end));
    });
    return packets;
  }

  private packet(payload: Buffer[], timestamp: number, marker: boolean): Buffer {
    const size = payload.reduce((n, p) => n + p.length, 0);
    const out = Buffer.alloc(4 + 12 + size);
    out[0] = 0x24; // '$'
    out[1] = this.channel;
    out.writeUInt16BE(12 + size, 2);
    out[4] = 0x80; // version 2, no padding, no extension, no CSRC
    out[5] = (marker ? 0x80 : 0) | RTP_PAYLOAD_TYPE;
    out.writeUInt16BE(this.sequence, 6);
    out.writeUInt32BE(timestamp >>> 0, 8);
    out.writeUInt32BE(this.ssrc, 12);
    let at = 16;
    for (const p of payload) at += p.copy(out, at);
    this.sequence = (this.sequence + 1) & 0xffff;
    return out;
  }
}

/** A NAL unit as RTP payloads: itself when it fits, else FU-A fragments. `end` marks the last one. */
export function fragments(nal: Buffer, maxPayload: number): Array<{ payload: Buffer[]; end: boolean }> {
  if (nal.length <= maxPayload) return [{ payload: [nal], end: true }];
  const header = nal[0];
  const indicator = (header & 0xe0) | FU_A;
  const type = header & 0x1f;
  const body = nal.subarray(1);
  const step = maxPayload - 2;
  const out: Array<{ payload: Buffer[]; end: boolean }> = [];
  for (let at = 0; at < body.length; at += step) {
    const first = at === 0;
    const end = at + step >= body.length;
    const fuHeader = (first ? 0x80 : 0) | (end ? 0x40 : 0) | type;
    out.push({ payload: [Buffer.from([indicator, fuHeader]), body.subarray(at, at + step)], end });
  }
  return out;
}
