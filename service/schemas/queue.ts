/** The print queue: request and response shapes of /queue and the plate routes. */
import { z } from 'zod';
import { nullableTimestamp, Pagination, pageQuery, timestamp } from './common';
import { PrinterType } from './printers';

export const QUEUE_ITEM_STATUSES = ['queued', 'held', 'printing', 'completed', 'failed', 'cancelled'] as const;
export const DISPATCH_STATES = ['claimed', 'uploading', 'starting', 'printing', 'completed', 'failed', 'cancelled', 'start_failed'] as const;

const ids = z.array(z.string().min(1).max(128)).min(1).max(1000);

export const QueueTarget = z
  .strictObject({
    printer_ids: ids.optional().meta({ description: 'Only these printers' }),
    printer_type: PrinterType.optional(),
    models: z.array(z.string().trim().min(1).max(100)).min(1).max(100).optional().meta({ description: 'Only printers of these models ("X1C", "MK4S")' }),
  })
  .meta({ description: 'Narrows the printers the item may go to (the file decides compatibility first)' });

export const QueueRequirements = z
  .strictObject({
    material: z.string().trim().min(1).max(50).optional().meta({ description: 'Filament type the printer must have loaded, e.g. "PLA", "PETG"; replaces the file\'s type' }),
    color: z
      .string()
      .regex(/^#[0-9A-Fa-f]{6}$/, 'a colour as #RRGGBB')
      .optional()
      .meta({ description: 'Filament colour the printer must have loaded (#RRGGBB)' }),
    nozzle_diameter: z.number().min(0.1).max(2).optional().meta({ description: 'Millimetres' }),
  })
  .meta({ description: 'What a printer must have beyond what the file says' });

export const QueueOptions = z
  .strictObject({
    bed_leveling: z.boolean().optional().meta({ description: 'Bambu: level the bed before printing (default true)' }),
    timelapse: z.boolean().optional().meta({ description: 'Bambu: record a timelapse (default false)' }),
    flow_cali: z.boolean().optional().meta({ description: 'Bambu: flow calibration (default false)' }),
    vibration_cali: z.boolean().optional().meta({ description: 'Bambu: vibration compensation calibration (default false)' }),
  })
  .meta({ description: 'Start options (Bambu Lab; PrusaLink has none)' });

const startAfter = z.iso.datetime({ offset: true }).meta({ description: 'Not started before this time (ISO 8601)' });
const finishBy = z.iso.datetime({ offset: true }).meta({ description: 'Deadline (ISO 8601): a copy whose estimated print would end later does not start' });
const fileId = z.string().min(1).max(128);

export const QueueVariant = z
  .strictObject({
    file_id: fileId.meta({ description: 'A file the service has locally, sliced for one printer model' }),
    plate: z.number().int().min(1).max(64).default(1).meta({ description: '3MF plate number' }),
  })
  .meta({ description: 'One sliced file of the item; a copy goes to the next free printer that fits any variant' });

/** What every new item may say besides its file or files. */
const itemFields = {
  name: z.string().trim().min(1).max(255).optional().meta({ description: 'Default: the (first) file name' }),
  copies: z.number().int().min(1).max(1000).default(1),
  priority: z.number().int().min(-1000).max(1000).default(0).meta({ description: 'Higher first; equal priority: by place (move), then oldest first' }),
  target: QueueTarget.optional(),
  requirements: QueueRequirements.optional(),
  start_after: startAfter.optional(),
  finish_by: finishBy.optional(),
  options: QueueOptions.optional(),
};

export const CreateQueueItemBody = z.union([
  z
    .strictObject({
      file_id: fileId.meta({ description: 'A file the service has locally (an upload, or a downloaded catalog file)' }),
      plate: z.number().int().min(1).max(64).default(1).meta({ description: '3MF plate number' }),
      ...itemFields,
    })
    .meta({ title: 'One file', description: 'Copies of one sliced file' }),
  z
    .strictObject({
      files: z.array(QueueVariant).min(1).max(20).meta({ description: 'Variants: the same object sliced once per printer model' }),
      ...itemFields,
    })
    .meta({ title: 'Variants', description: 'Copies of an object sliced once per printer model; each copy prints the variant that fits the printer it gets' }),
]);

export const UpdateQueueItemBody = z
  .strictObject({
    name: z.string().trim().min(1).max(255).optional(),
    priority: z.number().int().min(-1000).max(1000).optional(),
    copies: z.number().int().min(1).max(1000).optional().meta({ description: 'Not below the copies already completed or under way' }),
    target: QueueTarget.nullable().optional().meta({ description: 'null removes the target' }),
    requirements: QueueRequirements.nullable().optional().meta({ description: 'null removes the requirements' }),
    start_after: startAfter.nullable().optional().meta({ description: 'null starts as soon as possible' }),
    finish_by: finishBy.nullable().optional().meta({ description: 'null removes the deadline' }),
  })
  .refine((b) => Object.keys(b).length > 0, { message: 'give at least one field to change' });

export const QueueItemParams = z.object({ item_id: z.string().min(1).max(64) });

export const MoveQueueItemBody = z.union([
  z.strictObject({ before: z.string().min(1).max(64).meta({ description: 'Put the item just before this item (of the same priority)' }) }).meta({ title: 'Before an item' }),
  z.strictObject({ position: z.number().int().min(1).max(100_000).meta({ description: '1-based place among the open items of its priority (beyond the end: last)' }) }).meta({ title: 'To a place' }),
]);

export const QueueListQuery = z.object({
  status: z.enum(QUEUE_ITEM_STATUSES).optional(),
  ...pageQuery,
});

export const Dispatch = z.object({
  id: z.string(),
  printer_id: z.string(),
  file_id: z.string().meta({ description: 'The variant this copy printed' }),
  plate: z.number().int(),
  job_id: z.number().int().nullable().meta({ description: 'The job the job tracker created for this print' }),
  state: z.enum(DISPATCH_STATES),
  attempt: z.number().int().meta({ description: 'Which start of this item this is (1, 2, ...)' }),
  error: z.string().nullable().meta({ description: 'Why the start or the print failed' }),
  created_at: timestamp,
  updated_at: timestamp,
});

export const QueueItem = z.object({
  id: z.string(),
  file_id: z.string(),
  name: z.string(),
  plate: z.number().int(),
  copies: z.number().int(),
  remaining: z.number().int().meta({ description: 'Copies not started yet' }),
  printing: z.number().int().meta({ description: 'Copies under way (claimed, uploading, starting or printing)' }),
  completed: z.number().int(),
  failed: z.number().int().meta({ description: 'Failed, cancelled or unacknowledged starts and prints (their copies went back to the queue)' }),
  priority: z.number().int(),
  status: z.enum(QUEUE_ITEM_STATUSES),
  waiting_reason: z.string().nullable().meta({ description: 'Why a queued item is not starting, in words; null when it is not waiting' }),
  target: QueueTarget.nullable(),
  requirements: QueueRequirements.nullable(),
  options: z.object({ bed_leveling: z.boolean(), timelapse: z.boolean(), flow_cali: z.boolean(), vibration_cali: z.boolean() }),
  start_after: nullableTimestamp,
  finish_by: nullableTimestamp,
  position: z.number().int().meta({ description: 'Place within its priority: a new item (or one changed to the priority) gets the one after the last open item, a move numbers the open items 1, 2, ...; open items of a priority never share one, also when added at once (0: an item stored before places were given on adding; these come first, oldest first)' }),
  files: z
    .array(
      z.object({
        file_id: z.string(),
        plate: z.number().int(),
        printing: z.number().int().meta({ description: 'Copies of this variant under way' }),
        completed: z.number().int(),
        failed: z.number().int(),
      }),
    )
    .meta({ description: 'The variants (one entry for an item of one file), each with its own copies; together they add up to the item\'s counts' }),
  created_at: timestamp,
  updated_at: timestamp,
  dispatches: z.array(Dispatch),
});

export const QueueList = z.object({ items: z.array(QueueItem), pagination: Pagination });

export const QueueSchedule = z.object({
  generated_at: timestamp,
  entries: z
    .array(
      z.object({
        item_id: z.string(),
        item_name: z.string(),
        copy: z.number().int().meta({ description: "1-based among the item's copies not started yet" }),
        printer_id: z.string(),
        printer_name: z.string(),
        file_id: z.string().meta({ description: 'The variant it would print' }),
        plate: z.number().int(),
        start: timestamp,
        end: timestamp,
        print_time_known: z.boolean().meta({ description: 'False when the file states no print time (1 hour was assumed)' }),
      }),
    )
    .meta({ description: 'Each queued copy with its estimated printer, start and end, by start' }),
  printers: z.array(z.object({ id: z.string(), name: z.string(), free_at: timestamp.meta({ description: 'When its current print is estimated to end (now when free)' }) })),
  unplaced: z
    .array(z.object({ item_id: z.string(), item_name: z.string(), copies: z.number().int(), reason: z.string() }))
    .meta({ description: 'Copies no printer can take within the schedule (no compatible printer, deadlines, hours)' }),
});

export const PlateCleared = z.object({
  id: z.string(),
  plate_state: z.enum(['clear', 'needs_clearing']),
  message: z.string(),
  cleared_at: timestamp,
});

export type CreateQueueItemInput = z.output<typeof CreateQueueItemBody>;
export type UpdateQueueItemInput = z.output<typeof UpdateQueueItemBody>;
export type QueueItemView = z.output<typeof QueueItem>;
export type MoveQueueItemInput = z.output<typeof MoveQueueItemBody>;
export type QueueScheduleView = z.output<typeof QueueSchedule>;
export type QueueListFilter = z.output<typeof QueueListQuery>;
