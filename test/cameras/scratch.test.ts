import { selfSignedTls } from '../../service/simulators/bambu/options';
import { SimRtspsCamera } from '../../service/simulators/bambu/rtsps-camera';
import { spawn } from 'child_process';

test('scratch', async () => {
  const tls = await selfSignedTls('x');
  const cam = new SimRtspsCamera({ label: 'Sim X1C', accessCode: '12345678', ...tls });
  expect(await cam.start()).toBe(true);
  const t0 = Date.now();
  const c = spawn('ffmpeg', ['-hide_banner', '-nostdin', '-loglevel', 'verbose', '-rtsp_transport', 'tcp', '-analyzeduration', '1000000', '-probesize', '1000000', '-i', cam.url(), '-frames:v', '2', '-f', 'image2pipe', '-c:v', 'mjpeg', 'pipe:1'], { stdio: ['ignore', 'pipe', 'pipe'] });
  c.stderr.on('data', (d) => { for (const l of String(d).split('\n')) if (l.trim()) console.log(Date.now() - t0, l); });
  c.stdout.on('data', (d) => console.log(Date.now() - t0, 'OUT', d.length));
  await new Promise((r) => c.on('close', r));
  await cam.stop();
});
