// A button on a printer card. pause, resume, stop: to the printer node (output 1, topic = printer id).
// plate-cleared: POST /printers/{id}/plate-cleared through the API (output 2).
// The Add printer dialog: discovery-scan (POST /discovery/scan with the typed networks) and add-printer
// (POST /printers {discovered, access_code, name}) through the API (output 2).
if (msg.action === 'discovery-scan') {
  const targets = (Array.isArray(msg.targets) ? msg.targets : []).map(String).filter(Boolean).slice(0, 16);
  return [null, { path: '/discovery/scan', method: 'POST', payload: { targets }, printer_name: targets.join(', ') || 'the network', action: msg.action }];
}
if (msg.action === 'add-printer') {
  const p = msg.payload || {};
  const body = { discovered: String(p.discovered || ''), access_code: String(p.access_code || '') };
  if (p.name) body.name = String(p.name).slice(0, 100);
  return [null, { path: '/printers', method: 'POST', payload: body, printer_name: body.name || body.discovered, action: msg.action }];
}
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
