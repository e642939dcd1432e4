// A filament page button -> the API request. assign: PUT /printers/{id}/slots/{slot} {spool_id};
// unassign: DELETE of the spool's slot. The answer goes to "action result" (notification, fresh lists).
const p = msg.payload || {};
const spoolId = Math.floor(Number(p.spool_id));
if (!(spoolId >= 1)) return null;
const named = { topic: p.label || `spool ${spoolId}`, printer_name: p.label || `spool ${spoolId}` };
const slotPath = (printer, slot) => `/printers/${encodeURIComponent(String(printer))}/slots/${Math.floor(Number(slot))}`;
switch (msg.action) {
  case 'assign': {
    const [printer, slot] = String(p.target || '').split('|');
    if (!printer || !/^\d{1,3}$/.test(slot || '')) return null;
    return { ...named, action: 'assign', method: 'PUT', path: slotPath(printer, slot), payload: { spool_id: spoolId } };
  }
  case 'unassign':
    if (typeof p.printer_id !== 'string' || !p.printer_id || !(Number(p.slot) >= 0)) return null;
    return { ...named, action: 'unassign', method: 'DELETE', path: slotPath(p.printer_id, p.slot) };
  default:
    return null;
}
