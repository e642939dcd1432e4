// GET /printfarm-dashboard/camera/:printer/snapshot|stream -> the printer node's camera topics, so that
// the browser only ever talks to Node-RED (the service may listen on 127.0.0.1; its token stays here).
// "stream" is answered by the printer node itself (it relays the MJPEG stream while the browser reads).
const params = (msg.req && msg.req.params) || {};
const id = String(params.printer || '');
const kind = String(params.kind || '');
if (!/^[A-Za-z0-9_.-]{1,64}$/.test(id) || (kind !== 'snapshot' && kind !== 'stream')) {
  msg.statusCode = 400;
  msg.headers = { 'cache-control': 'no-store' };
  msg.payload = 'bad camera address';
  return [null, msg];
}
msg.topic = kind;
msg.printer_id = id;
delete msg.payload;
return [msg, null];
