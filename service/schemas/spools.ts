/** Spools (issue 25): the embedded inventory or Spoolman's, slot assignment, and what a print used. */
import { z } from 'zod';
import { decimalParam, Pagination, pageQuery, queryBoolean, timestamp } from './common';

const hexColor = z
  .string()
  .regex(/^#?[0-9a-fA-F]{6}$/, 'must be "#RRGGBB"')
  .transform((v) => `#${v.replace(/^#/, '').toUpperCase()}`)
  .meta({ description: '"#RRGGBB"' });
const grams = z.number().finite().min(0).max(100_000);
const text = (max: number) => z.string().trim().max(max);

export const SpoolIdParams = z.object({
  spool_id: decimalParam(z.number().int().min(1).max(Number.MAX_SAFE_INTEGER)).meta({ description: 'Spool id (integer; Spoolman\'s id in Spoolman mode)' }),
});

export const SlotParams = z.object({
  printer_id: z.string().min(1).max(128),
  slot: decimalParam(
    z
      .number()
      .int()
      .min(0)
      .max(255)
      .refine((n) => !Object.is(n, -0), { message: 'must be a whole number from 0 to 255' }),
  ).meta({ description: 'Global tray number the printer reports (Bambu AMS: ams_id*4 + tray, AMS-HT 128+, external spool 254); Prusa: 0 (the extruder number on multi-tool printers)' }),
});

export const SpoolListQuery = z.object({
  material: text(50).min(1).optional().meta({ description: 'PLA, PETG... (any case)' }),
  printer_id: z.string().min(1).max(128).optional().meta({ description: 'Only the spools in a slot of this printer' }),
  archived: queryBoolean.optional().meta({ description: 'true: archived spools only; false: the others. Default: all' }),
  low: queryBoolean.optional().meta({ description: 'true: only spools with less than spool_low_threshold_g left' }),
  ...pageQuery,
  order_by: z.enum(['id', 'remaining_weight_g', 'updated_at']).default('id'),
  order_dir: z.enum(['asc', 'desc']).default('asc'),
});

export const CreateSpoolBody = z.strictObject({
  material: text(50).min(1).meta({ description: 'PLA, PETG...' }),
  color: hexColor.optional(),
  brand: text(100).optional(),
  name: text(200).optional(),
  diameter_mm: z.number().finite().min(0.1).max(10).default(1.75),
  density_g_cm3: z.number().finite().min(0.1).max(30).optional(),
  initial_weight_g: grams.default(1000).meta({ description: 'Net filament of a full spool, grams (default 1000)' }),
  remaining_weight_g: grams.optional().meta({ description: 'Grams left (default: initial_weight_g)' }),
  cost_per_kg: z.number().finite().min(0).max(100_000).optional(),
  location: text(200).optional(),
  rfid_uuid: z.string().regex(/^[0-9A-Fa-f]{32}$/, 'must be 32 hex characters').optional().meta({ description: 'Bambu RFID tray_uuid: the AMS report finds the spool by it' }),
});

export const UpdateSpoolBody = z
  .strictObject({
    material: text(50).min(1).optional(),
    color: hexColor.nullable().optional(),
    brand: text(100).nullable().optional(),
    name: text(200).nullable().optional(),
    diameter_mm: z.number().finite().min(0.1).max(10).optional(),
    density_g_cm3: z.number().finite().min(0.1).max(30).nullable().optional(),
    initial_weight_g: grams.optional(),
    remaining_weight_g: grams.optional(),
    cost_per_kg: z.number().finite().min(0).max(100_000).nullable().optional(),
    location: text(200).nullable().optional(),
    archived: z.boolean().optional().meta({ description: 'Archiving takes the spool out of its slot' }),
  })
  .refine((b) => Object.keys(b).length > 0, { message: 'give at least one field to change' });

export const Spool = z.object({
  id: z.number().int(),
  source: z.enum(['local', 'spoolman']).meta({ description: 'local: the embedded inventory; spoolman: a spool of the Spoolman server (spoolman_url)' }),
  material: z.string(),
  color: z.string().nullable().meta({ description: '"#RRGGBB"' }),
  brand: z.string().nullable(),
  name: z.string().nullable(),
  diameter_mm: z.number(),
  density_g_cm3: z.number().nullable(),
  initial_weight_g: z.number().nullable(),
  remaining_weight_g: z.number().nullable().meta({ description: 'Grams left (null: Spoolman does not know)' }),
  cost_per_kg: z.number().nullable(),
  location: z.string().nullable(),
  printer_id: z.string().nullable().meta({ description: 'The printer whose slot holds the spool' }),
  slot: z.number().int().nullable(),
  rfid_uuid: z.string().nullable(),
  archived: z.boolean(),
  low: z.boolean().meta({ description: 'Less than spool_low_threshold_g left' }),
  created_at: timestamp,
  updated_at: timestamp,
});

export const SpoolList = z.object({
  spools: z.array(Spool),
  pagination: Pagination,
  source: z.enum(['local', 'spoolman']),
});

export const SpoolDeleted = z.object({ id: z.number().int(), message: z.string(), deleted_at: timestamp });

export const AssignSlotBody = z.strictObject({
  spool_id: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).meta({ description: 'The spool to put in the slot (Spoolman\'s id in Spoolman mode); it leaves any other slot' }),
});

export const SlotAssignment = z.object({
  printer_id: z.string(),
  slot: z.number().int(),
  spool_id: z.number().int().nullable(),
  spool: Spool.nullable(),
  message: z.string(),
});

export const FilamentUsage = z.object({
  spool_id: z.number().int().nullable().meta({ description: 'null: no spool was assigned to the slot' }),
  slot: z.number().int(),
  material: z.string().nullable(),
  color: z.string().nullable(),
  grams: z.number(),
  cost: z.number().nullable(),
});

export type SpoolView = z.output<typeof Spool>;
export type SpoolListFilter = z.output<typeof SpoolListQuery>;
export type CreateSpoolInput = z.output<typeof CreateSpoolBody>;
export type UpdateSpoolInput = z.output<typeof UpdateSpoolBody>;
export type FilamentUsageView = z.output<typeof FilamentUsage>;

const Use = { grams: z.number().meta({ description: 'Grams used in the period' }), cost: z.number(), jobs: z.number().int().meta({ description: 'Prints that used it' }) };

export const FilamentStatistics = z.object({
  period: z.object({ name: z.string(), start_date: z.string(), end_date: z.string() }),
  total_grams: z.number(),
  total_cost: z.number(),
  per_material: z.array(z.object({ material: z.string(), ...Use })),
  per_spool: z.array(
    z.object({
      spool_id: z.number().int(),
      source: z.enum(['local', 'spoolman']),
      material: z.string().nullable(),
      color: z.string().nullable(),
      name: z.string().nullable(),
      remaining_weight_g: z.number().nullable().meta({ description: 'Left now (null: the spool is gone)' }),
      ...Use,
    }),
  ),
});
