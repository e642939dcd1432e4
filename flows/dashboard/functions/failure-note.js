// Notifications from the pack's nodes: a failed print (job-watcher), a failed download (Catch on
// file-download) or a refused printer command (Catch on the printer node).
const red = { ui_update: { color: '#d32f2f' } };
if (msg.event === 'failed' && msg.payload) {
  const p = msg.payload;
  const printer = (p.job && p.job.printer_name) || p.printer_id || msg.topic;
  return { topic: msg.topic, payload: `Print failed on ${printer}: ${p.job_name || 'job #' + p.job_id}`, ...red };
}
if (msg.error) {
  const text = String(msg.error.message || msg.error).replace(/^Error: /, '');
  const source = msg.error.source && msg.error.source.type;
  if (/download/.test(source || '')) return { payload: `Download failed: ${text}`, ...red };
  const who = msg.printer_name || msg.topic || 'printer';
  return { payload: `${String(msg.payload || 'Command')} on ${who} failed: ${text}`, ...red };
}
return null;
