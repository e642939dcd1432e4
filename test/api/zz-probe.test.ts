import http from 'node:http';
import net from 'node:net';
import { prusa, startService } from '../helpers/service';

test('probe', async () => {
  const h = await startService();
  const show = (label: string, r: { status: number; text: string; headers: Headers }) => console.log(label, r.status, r.headers.get('allow'), r.text.slice(0, 300));
  show('options', await h.request('OPTIONS', '/api/v1/settings'));
  show('options unknown', await h.request('OPTIONS', '/api/v1/nope'));
  show('patch', await h.request('PATCH', '/api/v1/printers', {}));
  show('head', await h.request('HEAD', '/api/v1/health'));
  show('baddecode', await h.get('/api/v1/printers/%E0%A4%A'));
  show('nul', await h.post('/api/v1/printers', prusa('n1', { name: 'a\u0000b' })));
  show('nul get', await h.get('/api/v1/printers/n1'));
  show('lone', await h.request('POST', '/api/v1/printers', JSON.stringify(prusa('l1')).replace('"Prusa l1"', '"\\ud800x"')));
  show('lone get', await h.get('/api/v1/printers/l1'));
  let deep = '1';
  for (let i = 0; i < 20000; i++) deep = `{"a":${deep}}`;
  show('deep', await h.request('POST', '/api/v1/jobs', `{"printer_id":"n1","job_name":"x","customer_info":${deep}}`));
  let deepArr = '1';
  deepArr = '['.repeat(200000) + ']'.repeat(200000);
  show('deeparr', await h.request('POST', '/api/v1/jobs', `{"printer_id":"n1","job_name":"x","customer_info":{"a":${deepArr}}}`));
  show('utf16', await h.request('POST', '/api/v1/printers', prusa('u1'), { 'content-type': 'application/json; charset=utf-16' }));
  show('gzip', await h.request('POST', '/api/v1/printers', prusa('u1'), { 'content-encoding': 'gzip' }));
  show('br', await h.request('POST', '/api/v1/printers', prusa('u1'), { 'content-encoding': 'zstd' }));
  // long url
  show('long url', await h.get('/api/v1/printers/' + 'a'.repeat(20000)).catch((e) => ({ status: -1, text: String(e), headers: new Headers() })));
  show('long header', await h.request('GET', '/api/v1/health', undefined, { 'x-big': 'a'.repeat(20000) }).catch((e) => ({ status: -1, text: String(e), headers: new Headers() })));
  // raw bad http
  const raw = await new Promise<string>((resolve) => {
    const s = net.connect(h.service.port, '127.0.0.1', () => s.write('GARBAGE / HTTP/1.1\r\n\r\n'));
    let out = '';
    s.on('data', (d) => (out += d));
    s.on('close', () => resolve(out));
  });
  console.log('raw', JSON.stringify(raw));
  void http;
  await h.close();
});
