/**
 * GET /health tells whether RTSPS cameras can be decoded: with ffmpeg, its
 * version; without, the Debian package to install. It never shows where
 * ffmpeg lives (the route is open).
 */
import { ffmpegStatus, resetFfmpegStatus } from '../../service/cameras/ffmpeg';
import { startService, type Harness } from '../helpers/service';

const saved = process.env.FFMPEG_PATH;
let h: Harness | null = null;

afterEach(async () => {
  await h?.close();
  h = null;
  if (saved === undefined) delete process.env.FFMPEG_PATH;
  else process.env.FFMPEG_PATH = saved;
  resetFfmpegStatus();
});

test('without ffmpeg, /health says RTSPS cameras have no picture and names the package', async () => {
  process.env.FFMPEG_PATH = '/nonexistent/ffmpeg';
  resetFfmpegStatus();
  h = await startService();
  const res = await h.get('/api/v1/health');
  expect(res.status).toBe(200);
  expect(res.body.status).toBe('healthy');
  expect(res.body.ffmpeg).toEqual({ available: false, version: null, message: expect.stringMatching(/RTSPS cameras .* have no picture: .*apt-get install ffmpeg/) });
});

test('with the system ffmpeg (where installed), /health gives its version and not its path', async () => {
  resetFfmpegStatus();
  const status = ffmpegStatus();
  h = await startService();
  const res = await h.get('/api/v1/health');
  expect(res.body.ffmpeg.available).toBe(status.available);
  if (status.available) {
    expect(res.body.ffmpeg.version).toBe(status.version);
    expect(res.body.ffmpeg.message).toContain(`ffmpeg ${status.version}`);
    expect(JSON.stringify(res.body)).not.toContain(status.path!);
  } else {
    expect(res.body.ffmpeg.message).toContain('apt-get install ffmpeg');
  }
});
