// The job list's filter (printer, status, page; shared by everyone who has the page open) and the
// GET /jobs request for it. msg.topic: filter (from the toolbar), printers (the printer list, for
// the filter's choices) or anything else (refresh).
const LIMIT = 20;
const f = context.get('filter') || { printer_id: '', status: '', page: 1 };
if (msg.topic === 'filter' && msg.payload && typeof msg.payload === 'object') {
  f.printer_id = typeof msg.payload.printer_id === 'string' ? msg.payload.printer_id : '';
  f.status = typeof msg.payload.status === 'string' ? msg.payload.status : '';
  f.page = Math.max(1, Math.min(10000, Number(msg.payload.page) || 1));
} else if (msg.topic === 'printers') {
  if (msg.apiError || !msg.payload || !Array.isArray(msg.payload.printers)) return null;
  context.set('printers', msg.payload.printers.map((p) => ({ id: p.id, name: p.name })).sort((a, b) => a.name.localeCompare(b.name)));
  return null;
}
context.set('filter', f);
const q = [`page=${f.page}`, `limit=${LIMIT}`, 'order_by=created_at', 'order_dir=desc'];
if (f.printer_id) q.push(`printer_id=${encodeURIComponent(f.printer_id)}`);
if (f.status) q.push(`status=${encodeURIComponent(f.status)}`);
return { topic: 'jobs', path: `/jobs?${q.join('&')}`, filter: { ...f }, printers: context.get('printers') || [] };
