// Every answer goes back to the caller: msg.apiError is null on success, else {status, code, message}
// (the service's error body, or the network error the http request node reported).
const status = msg.statusCode;
if (typeof status === 'number' && status >= 200 && status < 300) {
  msg.apiError = null;
} else {
  const body = msg.payload && typeof msg.payload === 'object' ? msg.payload.error : null;
  msg.apiError = {
    status: typeof status === 'number' ? status : 0,
    code: (body && body.code) || String(status || 'NETWORK_ERROR'),
    message: (body && body.message) || String(msg.payload || 'no answer from the Printfarm service').slice(0, 300),
  };
}
return msg;
