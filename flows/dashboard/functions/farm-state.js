// The farm page's state, kept here on the server: the printer node's live snapshots (msg.event
// printer_status), GET /printers for what snapshots do not carry (plate state, materials, nozzle),
// today's statistics (stats node) and the thumbnail of each printer's current file (file-download
// node). Output 1: the whole board, at most twice a second (the cards update in place, no flicker).
// Output 2: notifications (went offline, back online, plate needs clearing). Output 3: download
// requests for the file of a print whose thumbnail is not known yet.
const MIN_INTERVAL_MS = 500;
const s = context.get('s') || { snap: {}, rest: {}, files: {}, asked: {}, downloads: [], today: null, sent: 0, timer: null, known: false };
context.set('s', s);
const notes = [];

const isBusy = (status) => status === 'printing' || status === 'paused';
const name = (id) => (s.snap[id] && s.snap[id].name) || (s.rest[id] && s.rest[id].name) || id;
const note = (text, color, id) => notes.push({ topic: id, payload: text, ui_update: { color } });

function statusOf(id) {
  const a = s.snap[id];
  const b = s.rest[id];
  return (a && a.status) || (b && b.status) || 'offline';
}

function onPrinterChange(id, before, after) {
  if (!s.known || before === undefined) return;
  if (before.status !== after.status) {
    if (after.status === 'offline') note(`${name(id)} went offline`, '#d32f2f', id);
    else if (before.status === 'offline' && after.status !== 'configuring') note(`${name(id)} is back online`, '#2e7d32', id);
    else if (after.status === 'error') note(`${name(id)} reports an error`, '#d32f2f', id);
  }
  if (before.plate === 'clear' && after.plate === 'needs_clearing') note(`Plate needs clearing on ${name(id)}`, '#ed6c02', id);
}

function view(id) {
  return { status: statusOf(id), plate: (s.snap[id] && s.snap[id].plate_state) || (s.rest[id] && s.rest[id].plate_state) || null };
}

const before = {};
for (const id of new Set([...Object.keys(s.snap), ...Object.keys(s.rest)])) before[id] = view(id);

if (msg.event === 'printer_status' && msg.payload && msg.payload.id) {
  s.snap[msg.payload.id] = msg.payload;
} else if (msg.kind === 'printers') {
  if (!msg.apiError && msg.payload && Array.isArray(msg.payload.printers)) {
    const seen = {};
    for (const p of msg.payload.printers) {
      seen[p.id] = true;
      s.rest[p.id] = p;
    }
    for (const id of Object.keys(s.rest)) if (!seen[id]) delete s.rest[id];
    for (const id of Object.keys(s.snap)) if (!seen[id]) delete s.snap[id];
  }
} else if (msg.kind === 'discovery') {
  // GET /discovery: the printers found on the LAN, for the Add printer dialog.
  if (!msg.apiError && msg.payload && Array.isArray(msg.payload.printers)) s.discovered = msg.payload.printers.slice(0, 1024);
} else if (msg.kind === 'today') {
  const jobs = (msg.payload && msg.payload.jobs) || {};
  s.today = { total_jobs: jobs.total_jobs, success_rate: jobs.success_rate, finished: (jobs.completed_jobs || 0) + (jobs.failed_jobs || 0) };
} else if (msg.kind === 'file') {
  // A finished download or thumbnail task of the file-download node.
  const task = msg.payload || {};
  const result = task.result || {};
  const id = task.printer_id;
  const fileId = result.file_id || task.file_id;
  if (id && fileId) {
    const cur = s.snap[id] && s.snap[id].current_job;
    const thumb = task.kind === 'thumbnail' ? result.method !== 'placeholder' : !!result.has_thumbnail;
    const prev = s.files[id] && s.files[id].file_id === fileId ? s.files[id] : null;
    s.files[id] = { file_id: fileId, job: (cur && cur.name) || task.job_name || null, thumbnail: thumb || !!(prev && prev.thumbnail) };
  }
}

for (const id of Object.keys(before)) if (s.snap[id] || s.rest[id]) onPrinterChange(id, before[id], view(id));
s.known = Object.keys(s.rest).length > 0 || Object.keys(s.snap).length > 0;

function card(id) {
  const a = s.snap[id] || {};
  const b = s.rest[id] || {};
  const status = statusOf(id);
  const busy = isBusy(status);
  const job = busy ? a.current_job || b.current_job || null : null;
  const file = s.files[id];
  const jobName = job ? job.name || 'Print' : null;
  if (busy && jobName && !(file && file.job === jobName) && s.asked[id] !== jobName) {
    s.asked[id] = jobName;
    s.downloads.push({ topic: id, payload: { printer_id: id }, priority: 'normal' });
  }
  const temps = a.temperatures || b.temperatures || null;
  return {
    id,
    name: a.name || b.name || id,
    model: b.model || a.model || null,
    type: a.type || b.type || null,
    status,
    job: jobName,
    progress: busy ? Number((job && job.progress) ?? a.progress ?? 0) : 0,
    layer_current: job ? (job.layer_current ?? null) : null,
    layer_total: job ? (job.layer_total ?? null) : null,
    remaining: job ? (job.estimated_remaining ?? null) : null,
    reported_at: a.updated_at || new Date().toISOString(),
    temperatures: temps,
    materials: a.materials || b.materials || null,
    plate_state: a.plate_state || b.plate_state || null,
    nozzle_diameter: a.nozzle_diameter || b.nozzle_diameter || null,
    thumbnail: busy && file && file.thumbnail && file.job === jobName ? `../printfarm-dashboard/thumbnail/${encodeURIComponent(file.file_id)}` : null,
    status_message: (a.error && a.error.message) || b.status_message || null,
    // {available, source, fps}: the live state says when a camera fails or comes back.
    camera: a.camera || b.camera || null,
    last_seen: a.last_seen || b.last_seen || null,
  };
}

// What the printers need from a person (GET /printers' attention lists), worst first, then the oldest.
function attention() {
  const rank = { fatal: 0, serious: 1, common: 2, info: 3 };
  const all = [];
  for (const id of Object.keys(s.rest)) for (const e of s.rest[id].attention || []) all.push({ ...e, printer_id: id, printer_name: name(id) });
  return all.sort((a, b) => (rank[a.severity] ?? 9) - (rank[b.severity] ?? 9) || String(a.since).localeCompare(String(b.since))).slice(0, 50);
}

function board() {
  const ids = [...new Set([...Object.keys(s.rest), ...Object.keys(s.snap)])];
  return { topic: 'board', payload: { printers: ids.map(card), attention: attention(), discovered: s.discovered || [], today: s.today, updated_at: new Date().toISOString() } };
}

// At most one board every MIN_INTERVAL_MS: the first change goes at once, later ones are folded into one.
const now = Date.now();
let out = null;
if (now - s.sent >= MIN_INTERVAL_MS && !s.timer) {
  s.sent = now;
  out = board();
} else if (!s.timer) {
  s.timer = setTimeout(() => {
    s.timer = null;
    s.sent = Date.now();
    const b = board();
    node.send([b, null, s.downloads.length ? s.downloads.splice(0) : null]);
  }, MIN_INTERVAL_MS - (now - s.sent));
}
const downloads = s.downloads.splice(0);
return [out, notes.length ? notes : null, downloads.length ? downloads : null];
