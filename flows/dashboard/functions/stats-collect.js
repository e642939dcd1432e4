// Collects one statistics round (answers of the stats node, or its errors through the Catch node)
// and, once complete, sends the summary (output 1) and the four charts' data (outputs 2-5).
const meta = msg.stats;
if (!meta || meta.batch !== flow.get('statsBatch')) return null; // an answer of an older round
const rounds = context.get('rounds') || {};
const round = (rounds[meta.batch] = rounds[meta.batch] || { answers: [], at: Date.now() });
round.answers.push({ meta, payload: msg.error ? null : msg.payload });
for (const key of Object.keys(rounds)) if (Date.now() - rounds[key].at > 60000) delete rounds[key];
context.set('rounds', rounds);
if (round.answers.length < meta.total) return null;
delete rounds[meta.batch];

const buckets = round.answers.filter((a) => a.meta.kind === 'bucket').sort((a, b) => a.meta.index - b.meta.index);
const overview = round.answers.find((a) => a.meta.kind === 'overview');
const printers = round.answers.filter((a) => a.meta.kind === 'printer' && a.payload).sort((a, b) => a.meta.index - b.meta.index);
const point = (a, series, value) => ({ label: a.meta.label, series, value: Math.round(value * 1000) / 1000 });
// A day without finished prints has no success rate: a gap in the line, not 0 %.
const finished = (a) => a.payload && a.payload.jobs.completed_jobs + a.payload.jobs.failed_jobs > 0;
const rate = buckets.map((a) => ({ label: a.meta.label, series: 'Success rate (%)', value: finished(a) ? a.payload.jobs.success_rate : null }));
const hours = buckets.map((a) => point(a, 'Print hours', a.payload ? a.payload.jobs.total_print_time / 3600 : 0));
const filament = buckets.map((a) => point(a, 'Filament (kg)', a.payload ? a.payload.materials.total_used_kg : 0));
const utilisation = printers.map((a) => point(a, 'Utilisation (%)', a.payload.uptime ? a.payload.uptime.utilization_rate : 0));
return [
  { topic: 'summary', payload: { overview: overview && overview.payload, range: overview && overview.meta.range } },
  { topic: 'success-rate', payload: rate },
  { topic: 'print-hours', payload: hours },
  { topic: 'filament', payload: filament },
  { topic: 'utilisation', payload: utilisation },
];
