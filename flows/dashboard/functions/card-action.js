// A button on a printer card. pause, resume, stop: to the printer node (output 1, topic = printer id).
// plate-cleared: POST /printers/{id}/plate-cleared through the API (output 2).
const id = String(msg.topic || '');
if (!/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/.test(id)) return null;
const who = msg.printer_name || id;
if (msg.action === 'pause' || msg.action === 'resume' || msg.action === 'stop') {
  return [{ topic: id, payload: msg.action, printer_name: who }, null];
}
if (msg.action === 'plate-cleared') {
  return [null, { topic: id, path: `/printers/${encodeURIComponent(id)}/plate-cleared`, method: 'POST', payload: {}, printer_name: who, action: msg.action }];
}
return null;
