import type { ServiceContext } from '../context';
import { PrinterIdParams } from '../schemas/printers';
import { CreateQueueItemBody, MoveQueueItemBody, PlateCleared, QueueItem, QueueItemParams, QueueList, QueueListQuery, QueueSchedule, UpdateQueueItemBody } from '../schemas/queue';
import { defineRoute, type AnyRoute } from '../http/route';

export function queueRoutes({ queue, queueSchedule, dispatcher, printers }: ServiceContext): AnyRoute[] {
  const action = (verb: 'hold' | 'release', summary: string, description: string) =>
    defineRoute({
      method: 'post',
      path: `/queue/{item_id}/${verb}`,
      tag: 'Queue',
      summary,
      description,
      params: QueueItemParams,
      response: QueueItem,
      errors: [404, 409],
      handler: ({ params }) => queue[verb](params.item_id),
    });
  return [
    defineRoute({
      method: 'get',
      path: '/queue',
      tag: 'Queue',
      summary: 'List queue items',
      description: 'In the order the dispatcher takes them: higher priority first, then their place (POST /queue/{item_id}/move), then oldest first. Each item carries its dispatches (one per started copy).',
      query: QueueListQuery,
      response: QueueList,
      handler: ({ query }) => queue.list(query),
    }),
    defineRoute({
      method: 'post',
      path: '/queue',
      tag: 'Queue',
      summary: 'Queue a print',
      description:
        'Queues `copies` prints of a file the service has locally (`POST /files/upload`, or a downloaded catalog file), or of variants (`files`: the same object sliced once per printer model; each copy prints the variant that fits the printer it gets). Each copy starts on the next free printer that can print it: the model the file was sliced for, its nozzle and filaments decide, `target` and `requirements` narrow further; a file that names no model prints only on targeted printers. 404 FILE_NOT_FOUND, 409 NO_LOCAL_COPY when the file is only on a printer, 422 when it is no print file or lacks the plate.',
      body: CreateQueueItemBody,
      status: 201,
      response: QueueItem,
      errors: [404, 409],
      handler: ({ body }) => queue.create(body),
    }),
    defineRoute({
      method: 'get',
      path: '/queue/schedule',
      tag: 'Queue',
      summary: 'When each queued copy will print',
      description:
        "An estimate, made on each request by playing the dispatcher's rules forward: each queued copy with the printer it would go to, its start and its end, from the files' print time estimates, each printer's remaining time, working hours, finish_by, the heat-up limit, the stagger and the printer choice. Plates are assumed cleared as prints end; materials as loaded now. Copies no printer can take are listed in `unplaced` with the item's waiting reason.",
      response: QueueSchedule,
      handler: () => queueSchedule.build(),
    }),
    defineRoute({
      method: 'get',
      path: '/queue/{item_id}',
      tag: 'Queue',
      summary: 'Queue item detail',
      params: QueueItemParams,
      response: QueueItem,
      errors: [404],
      handler: ({ params }) => queue.detail(params.item_id),
    }),
    defineRoute({
      method: 'patch',
      path: '/queue/{item_id}',
      tag: 'Queue',
      summary: 'Change a queue item',
      description: '`copies` cannot go below the copies completed or under way (422). 409 QUEUE_ITEM_STATE when the item is completed, failed or cancelled.',
      params: QueueItemParams,
      body: UpdateQueueItemBody,
      response: QueueItem,
      errors: [404, 409],
      handler: ({ params, body }) => queue.update(params.item_id, body),
    }),
    defineRoute({
      method: 'delete',
      path: '/queue/{item_id}',
      tag: 'Queue',
      summary: 'Cancel a queue item',
      description: 'Cancels the copies not yet started; a copy that is printing keeps printing. Answers the item, now `cancelled`. 409 when it is already over.',
      params: QueueItemParams,
      response: QueueItem,
      errors: [404, 409],
      handler: ({ params }) => queue.cancel(params.item_id),
    }),
    defineRoute({
      method: 'post',
      path: '/queue/{item_id}/move',
      tag: 'Queue',
      summary: 'Move a queue item within its priority',
      description:
        '`{before: item_id}` puts it just before that item, `{position: n}` at the n-th place (1-based, beyond the end: last) among the open items of its priority. Priority still comes first: to move across priorities, change `priority`. 422 when `before` names an item of another priority or one that is over, 409 when this item is over.',
      params: QueueItemParams,
      body: MoveQueueItemBody,
      response: QueueItem,
      errors: [404, 409],
      handler: ({ params, body }) => queue.move(params.item_id, body),
    }),
    action('hold', 'Hold a queue item', 'No further copy starts until `release`; copies under way go on. Holding a held item changes nothing.'),
    action('release', 'Release a held queue item', '409 when the item is not held.'),
    defineRoute({
      method: 'post',
      path: '/printers/{printer_id}/plate-cleared',
      tag: 'Printers',
      summary: 'The plate was cleared',
      description:
        'Every print end leaves the plate `needs_clearing` (unless the printer has `plate_auto_clear`), and the queue never starts a print on such a plate. This says it is clear again.',
      params: PrinterIdParams,
      response: PlateCleared,
      errors: [404],
      async handler({ params }) {
        await printers.require(params.printer_id);
        await dispatcher.plateCleared(params.printer_id);
        return { id: params.printer_id, plate_state: 'clear' as const, message: 'Plate marked clear', cleared_at: new Date().toISOString() };
      },
    }),
  ];
}
