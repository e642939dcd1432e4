// The picture, or the service's status without its body (404 until the thumbnail exists).
const ok = msg.statusCode === 200 && Buffer.isBuffer(msg.payload);
msg.headers = ok ? { 'content-type': 'image/png', 'cache-control': 'public, max-age=300' } : { 'cache-control': 'no-store' };
if (!ok) {
  msg.statusCode = typeof msg.statusCode === 'number' ? msg.statusCode : 502;
  msg.payload = '';
}
return msg;
