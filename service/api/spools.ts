import type { ServiceContext } from '../context';
import { notFound } from '../errors';
import { StatisticsQuery } from '../schemas/statistics';
import { filamentStatistics } from '../filament/statistics';
import { AssignSlotBody, CreateSpoolBody, FilamentStatistics, SlotAssignment, SlotParams, Spool, SpoolDeleted, SpoolIdParams, SpoolList, SpoolListQuery, UpdateSpoolBody } from '../schemas/spools';
import { defineRoute, type AnyRoute } from '../http/route';

export function spoolRoutes({ filament, store, settings }: ServiceContext): AnyRoute[] {
  const spools = filament.spools;
  const spoolmanNote = ' With `spoolman_url` set, Spoolman is the inventory: its spools are listed (`source: "spoolman"`) and adding, changing or deleting spools is done in Spoolman (409 SPOOLS_IN_SPOOLMAN here).';
  return [
    defineRoute({
      method: 'get',
      path: '/statistics/filament',
      tag: 'Statistics',
      summary: 'Filament used in a period, per material and per spool',
      description:
        'From what ended prints used (completed ones in full, failed and cancelled ones pro rata to their progress). Give `period` (day, week, month, year; default week) or `start_date` and `end_date`, not both.',
      query: StatisticsQuery,
      response: FilamentStatistics,
      handler: ({ query }) => filamentStatistics(store, filament.spools, settings, query),
    }),
    defineRoute({
      method: 'get',
      path: '/spools',
      tag: 'Filament',
      summary: 'List spools',
      description: `Filters combine; \`low\` compares with the setting spool_low_threshold_g. Paged like /jobs.${spoolmanNote}`,
      query: SpoolListQuery,
      response: SpoolList,
      handler: ({ query }) => spools.list(query),
    }),
    defineRoute({
      method: 'post',
      path: '/spools',
      tag: 'Filament',
      summary: 'Add a spool to the inventory',
      description: `\`remaining_weight_g\` defaults to \`initial_weight_g\` (1000). Bambu RFID spools are added by themselves when an AMS reports them. 409 SPOOL_EXISTS for a known rfid_uuid.${spoolmanNote}`,
      body: CreateSpoolBody,
      status: 201,
      response: Spool,
      errors: [409],
      handler: ({ body }) => spools.create(body),
    }),
    defineRoute({
      method: 'get',
      path: '/spools/{spool_id}',
      tag: 'Filament',
      summary: 'Spool detail',
      params: SpoolIdParams,
      response: Spool,
      errors: [404],
      handler: ({ params }) => spools.detail(params.spool_id),
    }),
    defineRoute({
      method: 'patch',
      path: '/spools/{spool_id}',
      tag: 'Filament',
      summary: 'Change a spool',
      description: `Setting \`remaining_weight_g\` corrects the count (e.g. after weighing the spool). \`archived: true\` takes the spool out of its slot.${spoolmanNote}`,
      params: SpoolIdParams,
      body: UpdateSpoolBody,
      response: Spool,
      errors: [404, 409],
      handler: ({ params, body }) => spools.update(params.spool_id, body),
    }),
    defineRoute({
      method: 'delete',
      path: '/spools/{spool_id}',
      tag: 'Filament',
      summary: 'Delete a spool',
      description: `409 SPOOL_ASSIGNED while the spool is in a slot (unassign or archive it first). The usage of past prints keeps its grams.${spoolmanNote}`,
      params: SpoolIdParams,
      response: SpoolDeleted,
      errors: [404, 409],
      handler: ({ params }) => spools.remove(params.spool_id),
    }),
    defineRoute({
      method: 'put',
      path: '/printers/{printer_id}/slots/{slot}',
      tag: 'Filament',
      summary: 'Put a spool in a printer slot',
      description:
        'The slot is the global tray number the printer reports (Bambu AMS: ams_id*4 + tray, AMS-HT 128 and up, the external spool 254; Prusa: 0). A spool is in at most one slot: it leaves its previous slot, and the spool that was in this slot leaves it. Spoolman mode stores the Spoolman spool id (404 when Spoolman does not know it, 502 SPOOLMAN_UNAVAILABLE when it cannot be reached). 409 SPOOL_ARCHIVED for an archived spool.',
      params: SlotParams,
      body: AssignSlotBody,
      response: SlotAssignment,
      errors: [404, 409, 502],
      async handler({ params, body }) {
        const spool = await spools.assign({ printer_id: params.printer_id, slot: params.slot }, body.spool_id);
        return { printer_id: params.printer_id, slot: params.slot, spool_id: spool.id, spool, message: `Spool ${spool.id} is in slot ${params.slot}` };
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/printers/{printer_id}/slots/{slot}',
      tag: 'Filament',
      summary: 'Take the spool out of a printer slot',
      description: 'The spool stays in the inventory, unassigned; `spool_id` is the spool that was in the slot. 404 SLOT_EMPTY when no spool is assigned to the slot.',
      params: SlotParams,
      response: SlotAssignment,
      errors: [404],
      async handler({ params }) {
        const id = await spools.unassign({ printer_id: params.printer_id, slot: params.slot });
        if (id === null) throw notFound('SLOT_EMPTY', `No spool is assigned to slot ${params.slot} of printer "${params.printer_id}"`, { printer_id: params.printer_id, slot: params.slot });
        return { printer_id: params.printer_id, slot: params.slot, spool_id: id, spool: null, message: `Spool ${id} left slot ${params.slot}` };
      },
    }),
  ];
}
