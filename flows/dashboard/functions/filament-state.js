// The filament page's state: the spools (GET /spools, least grams first, archived ones left out) and the
// printers with their loaded slots (from the shared printer list), for "load into" choices and "where".
const s = context.get('s') || { spools: [], source: 'local', printers: [], unavailable: null };
context.set('s', s);
if (msg.kind === 'spools') {
  if (msg.apiError) {
    // 404: a service older than spool tracking; other errors: keep the last list.
    s.unavailable = msg.apiError.status === 404 ? 'GET /spools answered 404' : s.unavailable;
  } else {
    s.unavailable = null;
    s.spools = Array.isArray(msg.payload && msg.payload.spools) ? msg.payload.spools : [];
    s.source = (msg.payload && msg.payload.source) || 'local';
  }
} else if (msg.topic === 'printers') {
  if (msg.apiError || !msg.payload || !Array.isArray(msg.payload.printers)) return null;
  s.printers = msg.payload.printers.map((p) => ({
    id: p.id,
    name: p.name,
    type: p.type,
    slots: (Array.isArray(p.materials) ? p.materials : []).map((m) => ({ slot: m.slot, type: m.type, color: m.color, spool_id: m.spool_id ?? null })),
  }));
} else {
  return null;
}
// Low spools first, then by grams left (the list comes sorted by grams already).
const spools = [...s.spools].sort((a, b) => Number(!!b.low) - Number(!!a.low));
return { topic: 'filament', payload: { spools, source: s.source, printers: s.printers, unavailable: s.unavailable } };
