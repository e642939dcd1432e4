// The queue page's reads: GET /queue every tick (the 3 s timer, or a queue_update from the queue node); its schedule (the timeline, an
// estimate computed per request) every third tick; the files that have a local copy (what a queue item can print) every tenth tick and
// whenever asked (msg.topic files).
const tick = (context.get('tick') || 0) + 1;
context.set('tick', tick);
const out = [{ kind: 'queue', path: '/queue?limit=100' }];
if (tick % 3 === 1) out.push({ kind: 'schedule', path: '/queue/schedule' });
if (tick % 10 === 1 || msg.topic === 'files') {
  out.push({ kind: 'files', status: 'downloaded', path: '/files?status=downloaded&limit=100' });
  out.push({ kind: 'files', status: 'local', path: '/files?status=local&limit=100' });
}
return [out];
