// One statistics round: the stats node is asked for every day (or week) of the range, for the
// whole range, and for each printer's utilisation. msg.topic range (day | week) switches the range.
const range = msg.topic === 'range' && (msg.payload === 'day' || msg.payload === 'week') ? msg.payload : context.get('range') || 'day';
context.set('range', range);
const printers = msg.topic === 'printers' ? (msg.payload && msg.payload.printers) || [] : null;
if (printers) {
  const had = (context.get('printers') || []).length;
  context.set('printers', printers.map((p) => ({ id: p.id, name: p.name })));
  // The first list starts a round at once, so the utilisation chart does not wait for the next tick.
  if (had || !printers.length) return null;
}
const ymd = (d) => `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
const dayOffset = (n) => {
  const d = new Date();
  d.setHours(12, 0, 0, 0);
  d.setDate(d.getDate() + n);
  return d;
};
const size = range === 'day' ? 1 : 7;
const count = range === 'day' ? 14 : 12;
const batch = `${Date.now()}-${Math.random().toString(36).slice(2, 8)}`;
const list = context.get('printers') || [];
const total = count + 1 + list.length;
const out = [];
for (let i = count - 1; i >= 0; i--) {
  const end = dayOffset(-i * size);
  const start = dayOffset(-i * size - size + 1);
  const label = range === 'day' ? end.toLocaleDateString('en-GB', { day: 'numeric', month: 'short' }) : `w/e ${end.toLocaleDateString('en-GB', { day: 'numeric', month: 'short' })}`;
  out.push({ topic: 'bucket', start_date: ymd(start), end_date: ymd(end), stats: { batch, total, kind: 'bucket', index: count - 1 - i, label } });
}
const first = dayOffset(-(count * size) + 1);
out.push({ topic: 'overview', start_date: ymd(first), end_date: ymd(dayOffset(0)), stats: { batch, total, kind: 'overview', range } });
list.forEach((p, index) => out.push({ topic: 'printer', printer_id: p.id, start_date: ymd(first), end_date: ymd(dayOffset(0)), stats: { batch, total, kind: 'printer', index, label: p.name } }));
context.set('batch', batch);
flow.set('statsBatch', batch);
return [out];
