// The queue page's state: the items (GET /queue), the schedule (GET /queue/schedule, the timeline), the files a
// print can be queued from, and the printers (for targets and the dispatches' printer names). Sends the page at most twice a second.
const s = context.get('s') || { items: [], files: {}, printers: [], schedule: null, unavailable: null, sent: 0, timer: null };
context.set('s', s);
if (msg.kind === 'queue') {
  if (msg.apiError) {
    // 404: a service without the queue (older than the queue's release); other errors: keep the last list.
    s.unavailable = msg.apiError.status === 404 ? 'GET /queue answered 404' : s.unavailable;
  } else {
    s.unavailable = null;
    s.items = Array.isArray(msg.payload && msg.payload.items) ? msg.payload.items : [];
  }
} else if (msg.kind === 'schedule') {
  // A service without the schedule (older) shows no timeline; a failed read keeps the last one.
  if (!msg.apiError && msg.payload && Array.isArray(msg.payload.entries)) s.schedule = msg.payload;
  else if (msg.apiError && msg.apiError.status === 404) s.schedule = null;
} else if (msg.kind === 'files') {
  if (!msg.apiError && msg.payload && Array.isArray(msg.payload.files)) s.files[msg.status] = msg.payload.files.map((f) => ({ id: f.id, filename: f.filename, printer_name: f.printer_name, file_type: f.file_type }));
} else if (msg.topic === 'printers') {
  if (!msg.apiError && msg.payload && Array.isArray(msg.payload.printers)) s.printers = msg.payload.printers.map((p) => ({ id: p.id, name: p.name, model: p.model, type: p.type }));
}
const page = () => {
  const files = [...(s.files.local || []), ...(s.files.downloaded || [])].sort((a, b) => a.filename.localeCompare(b.filename));
  return { topic: 'queue', payload: { items: s.items, files, printers: s.printers, schedule: s.schedule, unavailable: s.unavailable } };
};
const now = Date.now();
if (now - s.sent >= 500 && !s.timer) {
  s.sent = now;
  return page();
}
if (!s.timer) {
  s.timer = setTimeout(() => {
    s.timer = null;
    s.sent = Date.now();
    node.send(page());
  }, 500 - (now - s.sent));
}
return null;
