// A snapshot the service could not give (no camera, printer offline, camera error): the card shows
// its placeholder. The reason goes to the browser as text, never into the notifications.
if (!msg.res) return null;
msg.statusCode = 502;
msg.headers = { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' };
msg.payload = String((msg.error && msg.error.message) || 'camera error').slice(0, 300);
return msg;
