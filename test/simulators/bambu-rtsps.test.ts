/**
 * The simulated X1C's RTSPS server as an RTSP 1.0 client sees it, byte by
 * byte over a real TLS socket: what needs credentials, the 401 challenge,
 * the SDP, transports, sessions, and (where ffmpeg is installed) the
 * interleaved RTP it plays: H.264 in single NAL units and FU-A fragments,
 * starting with SPS, PPS and an IDR picture.
 */
import tls from 'node:tls';
import { selfSignedTls } from '../../service/simulators/bambu/options';
import { SimRtspsCamera } from '../../service/simulators/bambu/rtsps-camera';
import { RTSP_REALM } from '../../service/simulators/bambu/rtsp-wire';
import { eventually, ffmpegUnavailable } from '../helpers/ffmpeg';

jest.setTimeout(30_000);

const missing = ffmpegUnavailable();
if (missing) console.warn(`RTSPS streaming test skipped: ${missing}`);
const itFfmpeg = missing ? it.skip : it;

interface Reply {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** A bare RTSP client: one request at a time; interleaved packets are collected apart. */
class RawClient {
  readonly packets: Buffer[] = [];
  private buffer = Buffer.alloc(0);
  private waiting: ((reply: Reply) => void) | null = null;
  private cseq = 0;

  private constructor(readonly socket: tls.TLSSocket) {
    socket.on('data', (chunk: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, chunk]);
      this.drain();
    });
  }

  static connect(port: number): Promise<RawClient> {
    return new Promise((resolve, reject) => {
      const socket = tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => resolve(new RawClient(socket)));
      socket.once('error', reject);
    });
  }

  request(method: string, uri: string, headers: Record<string, string> = {}): Promise<Reply> {
    const lines = [`${method} ${uri} RTSP/1.0`, `CSeq: ${++this.cseq}`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
    return new Promise((resolve) => {
      this.waiting = resolve;
      this.socket.write(`${lines.join('\r\n')}\r\n\r\n`);
    });
  }

  close(): void {
    this.socket.destroy();
  }

  private drain(): void {
    for (;;) {
      if (this.buffer.length >= 4 && this.buffer[0] === 0x24) {
        const size = 4 + this.buffer.readUInt16BE(2);
        if (this.buffer.length < size) return;
        this.packets.push(this.buffer.subarray(0, size));
        this.buffer = this.buffer.subarray(size);
        continue;
      }
      const end = this.buffer.indexOf('\r\n\r\n');
      if (end < 0) return;
      const [statusLine, ...lines] = this.buffer.subarray(0, end).toString('latin1').split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines) headers[line.slice(0, line.indexOf(':')).toLowerCase()] = line.slice(line.indexOf(':') + 1).trim();
      const length = Number(headers['content-length'] ?? 0);
      if (this.buffer.length < end + 4 + length) return;
      const body = this.buffer.subarray(end + 4, end + 4 + length).toString('latin1');
      this.buffer = this.buffer.subarray(end + 4 + length);
      const reply = { status: Number(statusLine.split(' ')[1]), headers, body };
      const waiting = this.waiting;
      this.waiting = null;
      waiting?.(reply);
    }
  }
}

const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

let camera: SimRtspsCamera;
let url: string;
const clients: RawClient[] = [];
const client = async () => {
  const c = await RawClient.connect(camera.port);
  clients.push(c);
  return c;
};

beforeAll(async () => {
  // Until PLAY nothing runs ffmpeg, so without it a stand-in status lets the server listen.
  const ffmpeg = missing ? { available: true, path: '/nonexistent/ffmpeg', version: null, message: '' } : undefined;
  camera = new SimRtspsCamera({ label: 'Raw X1C', accessCode: '24681357', ...(await selfSignedTls('raw')), ffmpeg });
  expect(await camera.start()).toBe(true);
  url = `rtsps://127.0.0.1:${camera.port}/streaming/live/1`;
});
afterEach(() => {
  for (const c of clients.splice(0)) c.close();
});
afterAll(() => camera.stop());

test('OPTIONS needs no credentials; DESCRIBE without them is 401 with a Digest challenge', async () => {
  const c = await client();
  const options = await c.request('OPTIONS', url);
  expect(options.status).toBe(200);
  expect(options.headers.public).toMatch(/DESCRIBE.*SETUP.*TEARDOWN.*PLAY/);
  const describe = await c.request('DESCRIBE', url, { Accept: 'application/sdp' });
  expect(describe.status).toBe(401);
  expect(describe.headers['www-authenticate']).toMatch(new RegExp(`^Digest realm="${RTSP_REALM}", nonce="[0-9a-f]{32}"$`));
});

test('a wrong access code is 401 and counted; a right one gets the SDP of one H.264 track', async () => {
  const c = await client();
  const before = camera.stats.auth_failures;
  expect((await c.request('DESCRIBE', url, { Authorization: basic('bblp', '00000000') })).status).toBe(401);
  expect(camera.stats.auth_failures).toBe(before + 1);
  const ok = await c.request('DESCRIBE', url, { Authorization: basic('bblp', '24681357'), Accept: 'application/sdp' });
  expect(ok.status).toBe(200);
  expect(ok.headers['content-type']).toBe('application/sdp');
  expect(ok.headers['content-base']).toBe(`${url}/`);
  expect(ok.body).toMatch(/^v=0\r\n/);
  expect(ok.body).toMatch(/\r\nm=video 0 RTP\/AVP 96\r\n/);
  expect(ok.body).toMatch(/\r\na=rtpmap:96 H264\/90000\r\n/);
  expect(ok.body).toMatch(/\r\na=fmtp:96 packetization-mode=1/);
  expect(ok.body).toMatch(/\r\na=control:track1\r\n/);
});

test('another path is 404; UDP transport is 461; PLAY of an unknown session is 454', async () => {
  const c = await client();
  const auth = { Authorization: basic('bblp', '24681357') };
  expect((await c.request('DESCRIBE', url.replace('/live/1', '/live/2'), auth)).status).toBe(404);
  expect((await c.request('SETUP', `${url}/track1`, { ...auth, Transport: 'RTP/AVP;unicast;client_port=5000-5001' })).status).toBe(461);
  expect((await c.request('PLAY', url, { ...auth, Session: 'DEADBEEF' })).status).toBe(454);
  expect((await c.request('RECORD', url, auth)).status).toBe(405);
});

itFfmpeg('SETUP over TCP and PLAY: RTP on the interleaved channel, starting at SPS, PPS, IDR; TEARDOWN ends it', async () => {
  const c = await client();
  const auth = { Authorization: basic('bblp', '24681357') };
  const setup = await c.request('SETUP', `${url}/track1`, { ...auth, Transport: 'RTP/AVP/TCP;unicast;interleaved=0-1' });
  expect(setup.status).toBe(200);
  expect(setup.headers.transport).toMatch(/^RTP\/AVP\/TCP;unicast;interleaved=0-1;ssrc=[0-9A-F]{8}$/);
  const session = setup.headers.session.split(';')[0];
  const play = await c.request('PLAY', url, { ...auth, Session: session });
  expect(play.status).toBe(200);
  expect(play.headers['rtp-info']).toMatch(new RegExp(`^url=${url}/track1;seq=\\d+;rtptime=\\d+$`));
  expect(await eventually(() => c.packets.some((p) => (p[5] & 0x80) !== 0), 20_000)).toBe(true);
  expect(camera.stats.players).toBe(1);
  expect(camera.stats.frames_sent).toBeGreaterThan(0);

  const first = c.packets[0];
  expect([first[0], first[1], first[4], first[5] & 0x7f]).toEqual([0x24, 0, 0x80, 96]);
  // NAL types of the payloads: 7 (SPS) and 8 (PPS) first, then the IDR (5) whole or as FU-A (28) fragments.
  const types = c.packets.map((p) => p[16] & 0x1f);
  expect(types.slice(0, 2)).toEqual([7, 8]);
  const idr = c.packets.find((p) => (p[16] & 0x1f) === 5 || ((p[16] & 0x1f) === 28 && (p[17] & 0x1f) === 5));
  expect(idr).toBeDefined();
  const sequences = c.packets.map((p) => p.readUInt16BE(6));
  expect(sequences.every((s, i) => i === 0 || s === ((sequences[i - 1] + 1) & 0xffff))).toBe(true);

  expect((await c.request('TEARDOWN', url, { ...auth, Session: session })).status).toBe(200);
  expect(await eventually(() => camera.stats.players === 0 && !camera.stats.encoder_running)).toBe(true);
});
