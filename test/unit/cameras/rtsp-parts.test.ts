/**
 * The pieces of the RTSP camera that need no network: what ffmpeg's stderr
 * means for an operator (never with the access code in it), where ffmpeg is
 * looked for, the arguments it gets, and the simulator's RTP packetising
 * (RFC 6184 FU-A) and RTSP authentication (Digest as live555 asks, Basic).
 */
import { createHash } from 'node:crypto';
import { probeFfmpeg } from '../../../service/cameras/ffmpeg';
import { isMaskedForm, maskCameraUrl } from '../../../service/cameras/camera-url';
import { ffmpegFailure, publicUrl, redact, urlSecrets } from '../../../service/cameras/ffmpeg-failure';
import { hasFpsMode, rtspFfmpegArgs } from '../../../service/cameras/rtsp';
import { fragments, RtpH264Packetizer } from '../../../service/simulators/bambu/rtp-h264';
import { authorized, digestChallenge, RTSP_REALM, RtspReader } from '../../../service/simulators/bambu/rtsp-wire';

const URL_WITH_CODE = 'rtsps://bblp:31415926@192.168.1.50:322/streaming/live/1';
const target = publicUrl(URL_WITH_CODE);
const fail = (stderr: string, code: number | null = 1, frames = false) => ffmpegFailure(stderr, { code, signal: null }, target, ['31415926'], frames);

describe('ffmpeg failures as CameraErrors', () => {
  test('the URL in messages has no password', () => {
    expect(target).toBe('rtsps://bblp:***@192.168.1.50:322/streaming/live/1');
    expect(redact(`[in#0] ${URL_WITH_CODE}: error 31415926`, ['31415926'])).not.toContain('31415926');
  });

  test('a password in the query (Foscam-style ?usr=&pwd=) stays out of messages and of the shown URL', () => {
    const url = 'rtsp://192.168.1.60:554/videoMain?usr=admin&pwd=hunter22&channel=1';
    expect(publicUrl(url)).toBe('rtsp://192.168.1.60:554/videoMain?usr=admin&pwd=***&channel=1');
    expect(maskCameraUrl(url)).toBe('rtsp://192.168.1.60:554/videoMain?usr=admin&pwd=****&channel=1');
    expect(isMaskedForm(maskCameraUrl(url)!, url)).toBe(true);
    const err = ffmpegFailure(`[rtsp @ 0x1] method DESCRIBE failed: 404\n${url}: Server returned 404 Not Found`, { code: 1, signal: null }, publicUrl(url), urlSecrets(url), false);
    expect(err.message).toContain('404');
    expect(err.message).not.toContain('hunter22');
  });

  test('401 is AUTH and says to check the access code', () => {
    const err = fail(`[rtsp @ 0x55] method DESCRIBE failed: 401 Unauthorized\n${URL_WITH_CODE}: Server returned 401 Unauthorized (authorization failed)\n`);
    expect(err.code).toBe('AUTH');
    expect(err.message).toMatch(/access code/);
    expect(err.message).not.toContain('31415926');
  });

  test('refused is OFFLINE, unreachable is OFFLINE, 404 and TLS are PROTOCOL', () => {
    expect(fail(`[tcp @ 0x1] Connection to tcp://192.168.1.50:322 failed: Connection refused\n${URL_WITH_CODE}: Connection refused`).code).toBe('OFFLINE');
    expect(fail(`${URL_WITH_CODE}: No route to host`).code).toBe('OFFLINE');
    expect(fail('[rtsp @ 0x1] method DESCRIBE failed: 404 Stream Not Found').code).toBe('PROTOCOL');
    const tls = fail(`[tls @ 0x1] Error in the pull function.\n${URL_WITH_CODE}: Input/output error`);
    expect(tls.code).toBe('PROTOCOL');
    expect(tls.message).not.toContain('31415926');
  });

  test('a stream that ended after frames is OFFLINE; anything else says how ffmpeg ended', () => {
    expect(fail('', 0, true).code).toBe('OFFLINE');
    const odd = fail('something new 31415926', 1);
    expect(odd.code).toBe('PROTOCOL');
    expect(odd.message).toMatch(/exited with code 1/);
    expect(odd.message).not.toContain('31415926');
  });
});

describe('finding ffmpeg', () => {
  test('none on PATH: unavailable, naming the Debian package', () => {
    const status = probeFfmpeg({ PATH: '/nonexistent-dir' });
    expect(status).toMatchObject({ available: false, path: null, version: null });
    expect(status.message).toContain('apt-get install ffmpeg');
  });

  test('FFMPEG_PATH that is no executable: unavailable, saying so', () => {
    const status = probeFfmpeg({ FFMPEG_PATH: '/nonexistent/ffmpeg', PATH: process.env.PATH });
    expect(status.available).toBe(false);
    expect(status.message).toMatch(/FFMPEG_PATH=\/nonexistent\/ffmpeg is not an executable file.*apt-get install ffmpeg/);
  });

  test('-fps_mode from 5.1 on, -vsync before; the rate filter never duplicates, wide pictures are scaled down', () => {
    expect(hasFpsMode('5.1.9-0+deb12u1')).toBe(true);
    expect(hasFpsMode('n6.1')).toBe(true);
    expect(hasFpsMode('4.4.2-0ubuntu0.22.04.1')).toBe(false);
    expect(hasFpsMode('N-112345-gdeadbeef')).toBe(true);
    const args = rtspFfmpegArgs(URL_WITH_CODE, { maxFps: 2, quality: 5, maxWidth: 1280, version: '4.4.2' });
    expect(args).toEqual(expect.arrayContaining(['-rtsp_transport', 'tcp', '-vsync', 'passthrough', '-f', 'image2pipe', '-loglevel', 'error']));
    expect(args[args.indexOf('-vf') + 1]).toBe("select='isnan(prev_selected_t)+gt(floor(t*2),floor(prev_selected_t*2))',scale=w='min(iw,1280)':h=-2");
  });
});

describe('RTP packetising of H.264 (RFC 6184)', () => {
  test('a NAL unit that fits is one packet; a large one is FU-A fragments that rebuild it', () => {
    const small = Buffer.from([0x67, 1, 2, 3]);
    expect(fragments(small, 1400)).toEqual([{ payload: [small], end: true }]);
    const idr = Buffer.concat([Buffer.from([0x65]), Buffer.alloc(3000, 7)]);
    const parts = fragments(idr, 1400);
    expect(parts).toHaveLength(3);
    const payloads = parts.map((p) => Buffer.concat(p.payload));
    expect(payloads.every((p) => p.length <= 1400)).toBe(true);
    expect(payloads.map((p) => p[0])).toEqual([0x7c, 0x7c, 0x7c]); // NRI of the IDR, type 28
    expect(payloads.map((p) => p[1])).toEqual([0x85, 0x05, 0x45]); // S, -, E; type 5
    const rebuilt = Buffer.concat([Buffer.from([(payloads[0][0] & 0xe0) | (payloads[0][1] & 0x1f)]), ...payloads.map((p) => p.subarray(2))]);
    expect(rebuilt.equals(idr)).toBe(true);
  });

  test('interleaved packets: $ channel length, RTP v2, sequence counts up, marker on the picture’s last packet', () => {
    const packetizer = new RtpH264Packetizer(2, 1400);
    const first = packetizer.sequence;
    const packets = packetizer.picture([Buffer.from([0x67, 1]), Buffer.from([0x68, 2]), Buffer.concat([Buffer.from([0x65]), Buffer.alloc(2000)])], 123456);
    expect(packets).toHaveLength(4);
    for (const [i, p] of packets.entries()) {
      expect(p[0]).toBe(0x24);
      expect(p[1]).toBe(2);
      expect(p.readUInt16BE(2)).toBe(p.length - 4);
      expect(p[4]).toBe(0x80);
      expect(p[5] & 0x7f).toBe(96);
      expect(p.readUInt16BE(6)).toBe((first + i) & 0xffff);
      expect(p.readUInt32BE(8)).toBe(123456);
      expect(p.readUInt32BE(12)).toBe(packetizer.ssrc);
    }
    expect(packets.map((p) => p[5] >> 7)).toEqual([0, 0, 0, 1]);
  });
});

describe('RTSP authentication and framing (simulator)', () => {
  const md5 = (s: string) => createHash('md5').update(s).digest('hex');
  const creds = { user: 'bblp', password: '12345678' };

  test('the challenge is Digest with live555’s realm; a correct Digest answer passes, a wrong one does not', () => {
    expect(digestChallenge('abc')).toBe(`Digest realm="${RTSP_REALM}", nonce="abc"`);
    const uri = 'rtsps://127.0.0.1:322/streaming/live/1';
    const answer = (password: string, nonce = 'abc') =>
      `Digest username="bblp", realm="${RTSP_REALM}", nonce="${nonce}", uri="${uri}", response="${md5(`${md5(`bblp:${RTSP_REALM}:${password}`)}:${nonce}:${md5(`DESCRIBE:${uri}`)}`)}"`;
    expect(authorized(answer('12345678'), 'DESCRIBE', 'abc', creds)).toBe(true);
    expect(authorized(answer('00000000'), 'DESCRIBE', 'abc', creds)).toBe(false);
    expect(authorized(answer('12345678', 'other-nonce'), 'DESCRIBE', 'abc', creds)).toBe(false);
    expect(authorized(answer('12345678'), 'PLAY', 'abc', creds)).toBe(false);
  });

  test('Basic is accepted too; nothing, or a wrong password, is not', () => {
    const basic = (s: string) => `Basic ${Buffer.from(s).toString('base64')}`;
    expect(authorized(basic('bblp:12345678'), 'DESCRIBE', 'n', creds)).toBe(true);
    expect(authorized(basic('bblp:1234567'), 'DESCRIBE', 'n', creds)).toBe(false);
    expect(authorized(undefined, 'DESCRIBE', 'n', creds)).toBe(false);
  });

  test('requests split anywhere come out whole; interleaved RTCP between them is skipped; a huge header is refused', () => {
    const wire = Buffer.concat([
      Buffer.from('OPTIONS rtsps://h/streaming/live/1 RTSP/1.0\r\nCSeq: 1\r\n\r\n'),
      Buffer.from([0x24, 1, 0, 3, 9, 9, 9]),
      Buffer.from('GET_PARAMETER rtsps://h/streaming/live/1 RTSP/1.0\r\nCSeq: 2\r\nContent-Length: 4\r\n\r\nabcd'),
    ]);
    for (let at = 1; at < wire.length; at++) {
      const reader = new RtspReader();
      const got = [...reader.push(wire.subarray(0, at)), ...reader.push(wire.subarray(at))];
      expect(got.map((r) => `${r.method} ${r.cseq}`)).toEqual(['OPTIONS 1', 'GET_PARAMETER 2']);
    }
    expect(() => new RtspReader().push(Buffer.alloc(9000, 0x41))).toThrow(/too large/);
  });
});
