import type { ServiceContext } from '../context';
import { farmOrder } from '../attention/book';
import { defineRoute, type AnyRoute } from '../http/route';
import { FarmAttention } from '../schemas/attention';

export function attentionRoutes({ attention, store }: ServiceContext): AnyRoute[] {
  return [
    defineRoute({
      method: 'get',
      path: '/attention',
      tag: 'Printers',
      summary: 'What the printers need from a person, farm-wide',
      description:
        "Every attention entry of every printer (Bambu HMS and print_error in Bambu Lab's own words, PrusaLink ATTENTION/ERROR with the printer's message, a Klipper shutdown, startup error or print error in Klipper's words, a print its runout sensor paused), worst first, then the oldest. `printer_attention` on /ws says when an entry appears or clears.",
      response: FarmAttention,
      async handler() {
        const pages = attention.all();
        const names = new Map((await store.printers.list()).map((p) => [p.id, p.name]));
        const rows = farmOrder(pages.filter((p) => names.has(p.printer_id)).flatMap((p) => p.entries.map((e) => ({ ...e, printer_id: p.printer_id, printer_name: names.get(p.printer_id)! }))));
        return { attention: rows, total: rows.length };
      },
    }),
  ];
}
