/**
 * What a usage submission contains: the deployment mode and the payload assembled from the stored
 * counters, the fleet's printer types and the settings. Pure apart from the /.dockerenv look, so the
 * service keeps only the state, the scheduler and the network.
 */
import fs from 'node:fs';
import type { UsageEventRecord, UsageState } from '../db/repositories/usage';
import { DEPLOYMENT_MODES, USAGE_SCHEMA_VERSION, type DeploymentMode, type UsageSubmission } from '../schemas/usage';
import type { SettingsService } from '../settings';
import { UPTIME_TYPE } from './collector';
import { countryFromTimeZone } from './country';

export function detectDeploymentMode(option?: DeploymentMode): DeploymentMode {
  if (option && DEPLOYMENT_MODES.includes(option)) return option;
  try {
    if (fs.existsSync('/.dockerenv')) return 'docker';
  } catch {
    // Not knowable: standalone.
  }
  return 'standalone';
}

/** Start of the period the next submission covers. */
function periodStart(state: UsageState, now: string): string {
  const { last_submission_at: last, opted_in_at: optedIn } = state;
  const candidates = [last, optedIn].filter((v): v is string => !!v).sort();
  return candidates.at(-1) ?? now;
}

export interface PayloadInputs {
  state: UsageState;
  settings: SettingsService;
  version: string;
  deploymentMode: DeploymentMode;
  /** The counter rows not yet submitted. */
  events: Pick<UsageEventRecord, 'type' | 'count'>[];
  /** Printers in the fleet by type. */
  typeCounts: Record<string, number>;
  now: string;
}

/** The submission that covers the given counters. */
export function assemblePayload({ state, settings, version, deploymentMode, events, typeCounts, now }: PayloadInputs): UsageSubmission {
  const counts: Record<string, number> = {};
  for (const e of events) counts[e.type] = (counts[e.type] ?? 0) + e.count;
  const { [UPTIME_TYPE]: uptimeSeconds = 0, ...eventCounts } = counts;
  return {
    installation_id: state.installation_id!,
    submitted_at: now,
    schema_version: USAGE_SCHEMA_VERSION,
    period_start: periodStart(state, now),
    period_end: now,
    app_version: version,
    platform: process.platform,
    deployment_mode: deploymentMode,
    country_code: countryFromTimeZone(settings.get('timezone')),
    printer_count: Object.values(typeCounts).reduce((a, b) => a + b, 0),
    printer_types: Object.keys(typeCounts).sort(),
    printer_type_counts: typeCounts,
    total_jobs_created: eventCounts.job_created ?? 0,
    total_jobs_completed: eventCounts.job_completed ?? 0,
    total_jobs_failed: eventCounts.job_failed ?? 0,
    total_files_downloaded: eventCounts.file_downloaded ?? 0,
    total_files_uploaded: eventCounts.file_uploaded ?? 0,
    uptime_hours: Math.round((uptimeSeconds / 3600) * 100) / 100,
    feature_usage: {
      job_creation_auto_create: settings.get('job_creation_auto_create'),
      business_mode: settings.get('business_mode'),
      gcode_optimize_print_only: settings.get('gcode_optimize_print_only'),
    },
    event_counts: eventCounts,
  };
}
