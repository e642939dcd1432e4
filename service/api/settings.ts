import type { ServiceContext } from '../context';
import {
  ApplicationSettings,
  GcodeOptimizationSettings,
  GcodeOptimizationUpdated,
  Settings,
  SettingsUpdated,
  UpdateGcodeOptimizationBody,
  UpdateSettingsBody,
} from '../schemas/settings';
import { defineRoute, type AnyRoute } from '../http/route';

export function settingsRoutes({ settings }: ServiceContext): AnyRoute[] {
  const gcode = () => ({
    optimize_print_only: settings.get('gcode_optimize_print_only'),
    optimization_max_lines: settings.get('gcode_optimization_max_lines'),
    render_max_lines: settings.get('gcode_render_max_lines'),
  });
  return [
    defineRoute({
      method: 'get',
      path: '/settings',
      tag: 'Settings',
      summary: 'All runtime settings',
      description: 'Values set through the API persist across restarts; until then each setting takes its environment variable, else its default.',
      response: Settings,
      handler: () => settings.all(),
    }),
    defineRoute({
      method: 'put',
      path: '/settings',
      tag: 'Settings',
      summary: 'Change settings',
      description: 'Any subset of the settings; wrong types, out-of-range values and unknown keys are refused (422) and nothing changes.',
      body: UpdateSettingsBody,
      response: SettingsUpdated,
      async handler({ body }) {
        const updated = await settings.update(body);
        return { status: 'success', message: `Updated ${updated.length} setting(s)`, updated };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/settings/application',
      tag: 'Settings',
      summary: 'Application settings including the G-code optimization trio',
      response: ApplicationSettings,
      handler: () => ({
        timezone: settings.get('timezone'),
        language: settings.get('language'),
        business_mode: settings.get('business_mode'),
        job_creation_auto_create: settings.get('job_creation_auto_create'),
        monitoring_interval: settings.get('monitoring_interval'),
        // The server's absolute path stays on the server: "." is the data dir every shown path (local_path) is relative to.
        data_dir: '.',
        gcode_optimize_print_only: settings.get('gcode_optimize_print_only'),
        gcode_optimization_max_lines: settings.get('gcode_optimization_max_lines'),
        gcode_render_max_lines: settings.get('gcode_render_max_lines'),
      }),
    }),
    defineRoute({
      method: 'get',
      path: '/settings/gcode-optimization',
      tag: 'Settings',
      summary: 'G-code preview optimization settings',
      response: GcodeOptimizationSettings,
      handler: gcode,
    }),
    defineRoute({
      method: 'put',
      path: '/settings/gcode-optimization',
      tag: 'Settings',
      summary: 'Change G-code preview optimization settings',
      body: UpdateGcodeOptimizationBody,
      response: GcodeOptimizationUpdated,
      async handler({ body }) {
        await settings.update({
          gcode_optimize_print_only: body.optimize_print_only as boolean | undefined,
          gcode_optimization_max_lines: body.optimization_max_lines as number | undefined,
          gcode_render_max_lines: body.render_max_lines as number | undefined,
        });
        return { status: 'success', message: 'G-code optimization settings updated', ...gcode() };
      },
    }),
  ];
}
