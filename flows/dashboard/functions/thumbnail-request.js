// GET /printfarm-dashboard/thumbnail/:file_id -> the service's GET /files/{id}/thumbnail, fetched
// here so that the browser only ever talks to Node-RED.
const id = String((msg.req && msg.req.params && msg.req.params.file_id) || '');
if (!/^[A-Za-z0-9_.-]{1,64}$/.test(id)) {
  msg.statusCode = 400;
  msg.payload = 'bad file id';
  return [null, msg];
}
const base = String(env.get('PRINTFARM_API_URL') || 'http://127.0.0.1:8000/api/v1').replace(/\/+$/, '');
msg.url = `${base}/files/${encodeURIComponent(id)}/thumbnail`;
msg.method = 'GET';
msg.headers = {};
const token = env.get('PRINTFARM_API_TOKEN');
if (token) msg.headers.authorization = `Bearer ${token}`;
delete msg.payload;
return [msg, null];
