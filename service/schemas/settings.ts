/** Settings schemas, generated from the definitions in config.ts. */
import { z } from 'zod';
import { RUNTIME_SETTINGS, type SettingDef } from '../config';
import { NotifyWebhooks } from './notify';

function settingSchema(def: SettingDef): z.ZodType {
  let schema: z.ZodType;
  switch (def.type) {
    case 'boolean':
      schema = z.boolean();
      break;
    case 'integer': {
      let n = z.number().int();
      if (def.min !== undefined) n = n.min(def.min);
      if (def.max !== undefined) n = n.max(def.max);
      schema = n;
      break;
    }
    case 'number': {
      let n = z.number().finite();
      if (def.min !== undefined) n = n.min(def.min);
      if (def.max !== undefined) n = n.max(def.max);
      schema = n;
      break;
    }
    case 'enum':
      schema = z.enum(def.values as [string, ...string[]]);
      break;
    case 'url':
      schema = z.url({ protocol: /^https?$/ }).max(2048);
      break;
    case 'webhooks':
      schema = NotifyWebhooks;
      break;
    default:
      schema = z.string().max(256);
  }
  return schema.meta({ description: `${def.description} (env ${def.env}, default ${JSON.stringify(def.default)})` });
}

const shape = Object.fromEntries(Object.entries(RUNTIME_SETTINGS).map(([k, def]) => [k, settingSchema(def)]));

export const Settings = z.object(shape).meta({ description: 'All runtime settings; secrets are masked' });

export const UpdateSettingsBody = z
  .strictObject(Object.fromEntries(Object.entries(shape).map(([k, s]) => [k, s.optional()])))
  .refine((b) => Object.keys(b).length > 0, { message: 'give at least one setting to change' });

export const SettingsUpdated = z.object({
  status: z.literal('success'),
  message: z.string(),
  updated: z.array(z.string()).meta({ description: 'Keys that were changed' }),
});

export const ApplicationSettings = z
  .object({
    timezone: z.string(),
    language: z.string(),
    business_mode: z.boolean(),
    job_creation_auto_create: z.boolean(),
    monitoring_interval: z.number().int(),
    data_dir: z.string().meta({ description: 'Always "." : the data directory that local paths are relative to (the server\'s absolute path is not shown)' }),
    gcode_optimize_print_only: z.boolean(),
    gcode_optimization_max_lines: z.number().int(),
    gcode_render_max_lines: z.number().int(),
  });

const g = RUNTIME_SETTINGS;
export const GcodeOptimizationSettings = z.object({
  optimize_print_only: z.boolean(),
  optimization_max_lines: z.number().int(),
  render_max_lines: z.number().int(),
});

export const UpdateGcodeOptimizationBody = z
  .strictObject({
    optimize_print_only: settingSchema(g.gcode_optimize_print_only).optional(),
    optimization_max_lines: settingSchema(g.gcode_optimization_max_lines).optional(),
    render_max_lines: settingSchema(g.gcode_render_max_lines).optional(),
  })
  .refine((b) => Object.keys(b).length > 0, { message: 'give at least one setting to change' });

export const GcodeOptimizationUpdated = GcodeOptimizationSettings.extend({
  status: z.literal('success'),
  message: z.string(),
});
