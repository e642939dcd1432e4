// One request to the Printfarm service, made here on the server (the browser never calls the API):
// msg.path ("/printers"), msg.method (GET), msg.payload (the JSON body). The base URL comes from the
// environment variable PRINTFARM_API_URL (npm start sets it to the embedded service), else the
// embedded service's default address.
const base = String(env.get('PRINTFARM_API_URL') || 'http://127.0.0.1:8000/api/v1').replace(/\/+$/, '');
msg.url = base + msg.path;
msg.method = msg.method || 'GET';
msg.headers = { accept: 'application/json' };
// With access control on (AUTH_TOKENS), an operator token lets the dashboard read and act.
const token = env.get('PRINTFARM_API_TOKEN');
if (token) msg.headers.authorization = `Bearer ${token}`;
if (msg.method === 'GET' || msg.method === 'DELETE') delete msg.payload;
else {
  msg.headers['content-type'] = 'application/json';
  if (msg.payload === undefined || typeof msg.payload !== 'object') msg.payload = {};
}
delete msg.statusCode;
return msg;
