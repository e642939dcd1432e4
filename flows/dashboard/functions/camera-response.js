// The printer node's snapshot (a JPEG Buffer) back to the browser; its state messages stop here.
if (msg.event !== 'snapshot' || !msg.res || !Buffer.isBuffer(msg.payload)) return null;
msg.statusCode = 200;
msg.headers = { 'content-type': 'image/jpeg', 'cache-control': 'no-store' };
return msg;
