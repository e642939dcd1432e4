/** Notification settings and the body every webhook receives. */
import { z } from 'zod';
import { NOTIFY_KINDS } from '../notify/kinds';

export const NotifyKind = z.enum(NOTIFY_KINDS);

export const NotifyWebhook = z.strictObject({
  url: z.url({ protocol: /^https?$/ }).max(2048).meta({ description: 'Where each event is POSTed (ntfy topic URLs get ntfy\'s headers)' }),
  kinds: z.array(NotifyKind).max(NOTIFY_KINDS.length).optional().meta({ description: 'The kinds this URL wants (missing or empty: all)' }),
});

export const NotifyWebhooks = z.array(NotifyWebhook).max(20);
export type NotifyWebhookTarget = z.output<typeof NotifyWebhook>;

export const NotificationBody = z
  .object({
    kind: NotifyKind,
    title: z.string(),
    message: z.string(),
    printer_id: z.string().nullable(),
    printer_name: z.string().nullable(),
    severity: z.enum(['fatal', 'serious', 'common', 'info']),
    at: z.string(),
    data: z.record(z.string(), z.unknown()),
  })
;
