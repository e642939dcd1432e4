// A queue page button -> the API request. add: POST /queue; priority: PATCH; move (up/down within its priority):
// POST /queue/{id}/move; hold, release: POST; cancel: DELETE. The answer goes to "action result" (notification, fresh lists).
const p = msg.payload || {};
const item = (suffix) => `/queue/${encodeURIComponent(String(p.id))}${suffix}`;
const named = { topic: p.name || (p.id ? `item ${p.id}` : 'print'), printer_name: p.name || (p.id ? `item ${p.id}` : 'print') };
switch (msg.action) {
  case 'queue-add': {
    if (typeof p.file_id !== 'string' || !p.file_id) return null;
    const body = { file_id: p.file_id, copies: Math.max(1, Math.min(1000, Math.floor(Number(p.copies) || 1))), priority: Math.floor(Number(p.priority) || 0) };
    if (Array.isArray(p.printer_ids) && p.printer_ids.length) body.target = { printer_ids: p.printer_ids.filter((x) => typeof x === 'string').slice(0, 100) };
    return { ...named, action: 'queue-add', method: 'POST', path: '/queue', payload: body };
  }
  case 'priority':
    return { ...named, action: 'priority', method: 'PATCH', path: item(''), payload: { priority: Math.floor(Number(p.priority) || 0) } };
  case 'move':
    return { ...named, action: 'move', method: 'POST', path: item('/move'), payload: { position: Math.max(1, Math.min(100000, Math.floor(Number(p.position) || 1))) } };
  case 'hold':
  case 'release':
    return { ...named, action: msg.action, method: 'POST', path: item(`/${msg.action}`), payload: {} };
  case 'cancel':
    return { ...named, action: 'cancel', method: 'DELETE', path: item('') };
  default:
    return null;
}
