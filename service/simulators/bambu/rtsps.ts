/**
 * The simulated X1-family camera: RTSP 1.0 over TLS (RTSPS, port 322 on a
 * real printer) at `/streaming/live/1`, user `bblp` + the access code,
 * H.264 from a child ffmpeg (bambu/h264-feed.ts) as RTP interleaved on the
 * RTSP connection (RTP/AVP/TCP; UDP is refused with 461, as a printer
 * behind TLS has no use for it).
 *
 * Requests: OPTIONS (no credentials needed), DESCRIBE (SDP with one H.264
 * track), SETUP, PLAY, TEARDOWN, GET_PARAMETER (keep-alive). Every other
 * request needs credentials: a 401 carries a Digest challenge with the
 * realm live555 uses (Bambu's firmware serves RTSP with live555); Digest
 * and Basic answers are accepted. A viewer starts at the next IDR picture;
 * one that does not read is skipped to the next IDR instead of buffering
 * without bound.
 *
 * Counters for tests: `connections` (TLS connections accepted),
 * `auth_failures` (wrong credentials), `plays`, and `players` (sessions
 * playing now).
 */
import { randomBytes } from 'node:crypto';
import type tls from 'node:tls';
import { GatedTlsListener, type LinkMode } from './gate';
import type { AccessUnit, H264Feed } from './h264-feed';
import { RtpH264Packetizer, RTP_PAYLOAD_TYPE } from './rtp-h264';
import { authorized, digestChallenge, RtspProtocolError, RtspReader, rtspResponse, type RtspCredentials, type RtspRequest } from './rtsp-wire';

export const RTSP_STREAM_PATH = '/streaming/live/1';
const TRACK = 'track1';
/** Bytes a viewer may leave unread before pictures are skipped (to the next IDR). */
const MAX_UNREAD_BYTES = 1024 * 1024;
const SESSION_TIMEOUT_S = 60;

export interface SimRtspsOptions {
  key: string;
  cert: string;
  credentials: RtspCredentials;
  feed: H264Feed;
  /** The stalled-camera fault, asked for every picture: viewers stay connected and get none. */
  stalled?: () => boolean;
}

export class SimRtsps {
  /** frames_sent: pictures sent, counted once per viewer (as the port-6000 camera counts its frames). */
  readonly stats = { connections: 0, auth_failures: 0, plays: 0, frames_sent: 0, skipped_pictures: 0 };
  readonly sessions = new Set<RtspConnection>();
  mode: LinkMode = 'online';
  private readonly listener: GatedTlsListener;
  private closed = false;

  constructor(readonly options: SimRtspsOptions) {
    this.listener = new GatedTlsListener({ key: options.key, cert: options.cert }, (socket) => {
      if (this.closed) {
        socket.destroy();
        return;
      }
      this.stats.connections++;
      const session = new RtspConnection(this, socket);
      this.sessions.add(session);
      socket.once('close', () => this.sessions.delete(session));
    });
  }

  listen(port = 0): Promise<number> {
    return this.listener.listen(port);
  }

  get port(): number {
    return this.listener.port;
  }

  /** Sessions receiving the stream now. */
  get players(): number {
    let n = 0;
    for (const s of this.sessions) if (s.playing) n++;
    return n;
  }

  async setMode(mode: LinkMode): Promise<void> {
    this.mode = mode;
    await this.listener.setMode(mode);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const s of [...this.sessions]) s.destroy();
    await this.listener.close();
  }
}

class RtspConnection {
  playing = false;
  private readonly reader = new RtspReader();
  private readonly nonce = randomBytes(16).toString('hex');
  private readonly sessionId = randomBytes(4).toString('hex').toUpperCase();
  private readonly packetizer: RtpH264Packetizer;
  private setUp = false;
  private unsubscribe: (() => void) | null = null;
  /** False until an IDR picture went out (and again after pictures were skipped). */
  private synced = false;
  private readonly clockBase = randomBytes(4).readUInt32BE(0);
  private readonly clockStart = Date.now();
  private channel = 0;

  constructor(
    private readonly server: SimRtsps,
    private readonly socket: tls.TLSSocket,
  ) {
    this.packetizer = new RtpH264Packetizer();
    socket.on('error', () => undefined);
    socket.on('close', () => this.stopPlaying());
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
  }

  destroy(): void {
    this.stopPlaying();
    this.socket.destroy();
  }

  private onData(chunk: Buffer): void {
    // After a 400 the connection is closing: what else the client sends is not read.
    if (this.socket.writableEnded) return;
    let requests: RtspRequest[];
    try {
      requests = this.reader.push(chunk);
    } catch (err) {
      this.stopPlaying();
      if (err instanceof RtspProtocolError) this.socket.end(rtspResponse(400, '0'));
      else this.destroy();
      return;
    }
    for (const request of requests) {
      if (this.socket.destroyed) return;
      this.handle(request);
    }
  }

  private send(status: number, request: RtspRequest, headers: Record<string, string> = {}, body = ''): void {
    this.socket.write(rtspResponse(status, request.cseq, headers, body));
  }

  private handle(request: RtspRequest): void {
    const { method } = request;
    if (method === 'OPTIONS') {
      this.send(200, request, { Public: 'OPTIONS, DESCRIBE, SETUP, TEARDOWN, PLAY, GET_PARAMETER' });
      return;
    }
    if (!['DESCRIBE', 'SETUP', 'PLAY', 'TEARDOWN', 'GET_PARAMETER'].includes(method)) {
      this.send(405, request, { Allow: 'OPTIONS, DESCRIBE, SETUP, TEARDOWN, PLAY, GET_PARAMETER' });
      return;
    }
    const header = request.headers.get('authorization');
    if (!authorized(header, method, this.nonce, this.server.options.credentials)) {
      if (header) this.server.stats.auth_failures++;
      this.send(401, request, { 'WWW-Authenticate': digestChallenge(this.nonce) });
      return;
    }
    const path = pathOf(request.uri);
    if (path !== RTSP_STREAM_PATH && path !== `${RTSP_STREAM_PATH}/${TRACK}`) {
      this.send(404, request);
      return;
    }
    if (method === 'DESCRIBE') this.describe(request);
    else if (method === 'SETUP') this.setup(request);
    else if (method === 'PLAY') this.play(request);
    else if (method === 'TEARDOWN') {
      this.stopPlaying();
      this.send(200, request, { Session: this.sessionId });
      this.socket.end();
    } else this.send(200, request, { Session: this.sessionId });
  }

  private describe(request: RtspRequest): void {
    const base = `${request.uri.replace(/[?#].*$/, '').replace(/\/$/, '')}/`;
    this.send(200, request, { 'Content-Base': base, 'Content-Type': 'application/sdp' }, sdp(this.server.options.feed));
  }

  private setup(request: RtspRequest): void {
    const transport = request.headers.get('transport') ?? '';
    if (!/RTP\/AVP\/TCP/i.test(transport)) {
      this.send(461, request);
      return;
    }
    const channels = /interleaved=(\d+)(?:-(\d+))?/i.exec(transport);
    this.channel = channels ? Math.min(254, Number(channels[1])) : 0;
    this.packetizer.channel = this.channel;
    this.setUp = true;
    this.send(200, request, {
      Transport: `RTP/AVP/TCP;unicast;interleaved=${this.channel}-${this.channel + 1};ssrc=${this.packetizer.ssrc.toString(16).toUpperCase().padStart(8, '0')}`,
      Session: `${this.sessionId};timeout=${SESSION_TIMEOUT_S}`,
    });
  }

  private play(request: RtspRequest): void {
    const session = (request.headers.get('session') ?? '').split(';')[0].trim();
    if (session !== this.sessionId) {
      this.send(454, request);
      return;
    }
    if (!this.setUp) {
      this.send(455, request);
      return;
    }
    const url = `${request.uri.replace(/[?#].*$/, '').replace(/\/$/, '')}/${TRACK}`;
    this.send(200, request, {
      Range: 'npt=0.000-',
      Session: this.sessionId,
      'RTP-Info': `url=${url};seq=${this.packetizer.sequence};rtptime=${this.rtpTime()}`,
    });
    if (this.playing) return;
    this.playing = true;
    this.server.stats.plays++;
    this.unsubscribe = this.server.options.feed.subscribe((unit) => this.onPicture(unit));
  }

  private rtpTime(): number {
    return (this.clockBase + (Date.now() - this.clockStart) * 90) >>> 0;
  }

  private onPicture(unit: AccessUnit): void {
    if (!this.playing || this.socket.destroyed || this.server.mode !== 'online') return;
    if (this.server.options.stalled?.()) {
      // Back from the stall, a viewer resumes at an IDR picture.
      this.synced = false;
      return;
    }
    if (this.socket.writableLength > MAX_UNREAD_BYTES) {
      this.server.stats.skipped_pictures++;
      this.synced = false;
      return;
    }
    if (!this.synced && !unit.keyframe) return;
    this.synced = true;
    const packets = this.packetizer.picture(unit.nals, this.rtpTime());
    this.socket.cork();
    for (const p of packets) this.socket.write(p);
    this.socket.uncork();
    this.server.stats.frames_sent++;
  }

  private stopPlaying(): void {
    this.playing = false;
    const unsubscribe = this.unsubscribe;
    this.unsubscribe = null;
    unsubscribe?.();
  }
}

/** The path of an rtsp(s):// URL (or of an absolute path), without query. */
function pathOf(uri: string): string {
  const match = /^(?:rtsps?:\/\/[^/?#]*)?([^?#]*)/i.exec(uri);
  return (match?.[1] || '/').replace(/\/$/, '') || '/';
}

/** One H.264 video track; sprop-parameter-sets once the encoder has shown its SPS and PPS. */
function sdp(feed: H264Feed): string {
  const fmtp = ['packetization-mode=1'];
  if (feed.sps && feed.pps) {
    fmtp.push(`profile-level-id=${feed.sps.subarray(1, 4).toString('hex').toUpperCase()}`);
    fmtp.push(`sprop-parameter-sets=${feed.sps.toString('base64')},${feed.pps.toString('base64')}`);
  }
  return [
    'v=0',
    `o=- ${Date.now()} 1 IN IP4 127.0.0.1`,
    's=Printfarm simulated camera',
    't=0 0',
    'a=control:*',
    'a=range:npt=0-',
    `m=video 0 RTP/AVP ${RTP_PAYLOAD_TYPE}`,
    'c=IN IP4 0.0.0.0',
    `a=rtpmap:${RTP_PAYLOAD_TYPE} H264/90000`,
    `a=fmtp:${RTP_PAYLOAD_TYPE} ${fmtp.join(';')}`,
    `a=framerate:${feed.fps}`,
    `a=x-dimensions:${feed.width},${feed.height}`,
    `a=control:${TRACK}`,
    '',
  ].join('\r\n');
}
