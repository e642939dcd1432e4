/** What printers need from a person: the attention entries of printers and the farm-wide list. */
import { z } from 'zod';
import { timestamp } from './common';

export const AttentionEntry = z
  .object({
    code: z.string().meta({ description: 'The printer\'s own code: "0700_2000_0002_0001" (Bambu HMS), "0700_8011" (Bambu print_error), "ATTENTION"/"ERROR" (PrusaLink), "KLIPPY_SHUTDOWN"/"KLIPPY_ERROR"/"PRINT_ERROR"/"FILAMENT_RUNOUT" (Klipper)' }),
    severity: z.enum(['fatal', 'serious', 'common', 'info']),
    message: z.string().meta({ description: "What is wrong, in the vendor's words (language setting: English, German where the vendor publishes it)" }),
    action: z.string().meta({ description: 'What to do about it' }),
    since: timestamp.meta({ description: 'When the service first saw this cause' }),
    source: z.enum(['hms', 'print_error', 'prusalink', 'klipper']),
  })
;

export const PrinterAttention = z.array(AttentionEntry).meta({ description: 'What the printer needs from a person now, worst first (empty: nothing)' });

export const FarmAttention = z.object({
  attention: z.array(
    AttentionEntry.extend({
      printer_id: z.string(),
      printer_name: z.string(),
    }),
  ).meta({ description: 'Every entry of every printer, worst first, then the oldest' }),
  total: z.number().int(),
});
