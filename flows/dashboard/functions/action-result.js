// The answer to a dashboard action made through the API: a notification (output 1) and, on success,
// a fresh read of the printers (output 2) so the cards show the change at once.
const who = msg.printer_name || msg.topic;
const verb = { 'add-printer': 'Added', 'discovery-scan': 'Looked for printers on', 'plate-cleared': 'Plate cleared on', 'queue-add': 'Queued', hold: 'Held', release: 'Released', cancel: 'Cancelled', priority: 'Priority changed for', move: 'Moved' }[msg.action] || msg.action;
if (msg.apiError) {
  return [{ payload: `${verb} ${who}: failed (${msg.apiError.message})`, ui_update: { color: '#d32f2f' } }, null];
}
return [{ payload: `${verb} ${who}`, ui_update: { color: '#2e7d32' } }, { topic: 'refresh' }];
