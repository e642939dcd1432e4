// GET /jobs -> the table's rows (output 1) and the toolbar's state (output 2).
if (msg.apiError) {
  node.status({ fill: 'red', shape: 'ring', text: msg.apiError.code });
  return null;
}
node.status({});
const money = (v) => (typeof v === 'number' ? v.toFixed(2) : '');
const time = (iso) => (iso ? new Date(iso).toLocaleString('sv-SE', { year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit' }) : '');
const duration = (s) => {
  if (typeof s !== 'number') return '';
  const h = Math.floor(s / 3600);
  const m = Math.round((s % 3600) / 60);
  return h ? `${h} h ${String(m).padStart(2, '0')} min` : `${m} min`;
};
const rows = (msg.payload.jobs || []).map((j) => ({
  Job: `#${j.id} ${j.job_name || ''}`.trim(),
  Printer: j.printer_name || j.printer_id,
  Status: j.status + (j.status === 'printing' || j.status === 'paused' ? ` ${Math.floor(j.progress || 0)} %` : ''),
  Started: time(j.start_time),
  Duration: duration(j.actual_duration ?? j.estimated_duration),
  Material: [j.material_info && j.material_info.type, j.material_info && typeof j.material_info.actual_usage === 'number' ? `${j.material_info.actual_usage.toFixed(1)} g` : ''].filter(Boolean).join(' · '),
  Cost: money(j.costs && j.costs.total_cost),
}));
return [
  { topic: 'jobs', payload: rows },
  { topic: 'jobs', payload: { printers: msg.printers, filter: msg.filter, pagination: msg.payload.pagination, summary: msg.payload.summary } },
];
