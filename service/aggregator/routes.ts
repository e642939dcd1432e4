/** The routes of the aggregation service, declared with their schemas (validation + its OpenAPI document). */
import { z } from 'zod';
import { DomainError, notFound } from '../errors';
import { defineRoute, Reply, type AnyRoute } from '../http/route';
import { UsageSubmission } from '../schemas/usage';
import type { Mailer } from './reports';
import { HOUR_MS, type AggregatorRepository } from './repository';
import { checkSubmissionTimes } from './submission-times';
import { streamExport } from './export-stream';
import {
  Anomalies,
  DeploymentModes,
  EmailStatus,
  Errors,
  Export,
  Features,
  FeatureTrends,
  Geography,
  Health,
  InstallationDeleted,
  InstallationParams,
  Installations,
  Liveness,
  MailBody,
  MailSent,
  Overview,
  Printers,
  Readiness,
  SubmitAccepted,
  Summary,
  TimelineQuery,
  Versions,
  VersionMigration,
  WindowQuery,
} from './schemas';
import type { AggregatorStats } from './stats';

export interface RouteDeps {
  repo: AggregatorRepository;
  stats: AggregatorStats;
  mailer: Mailer;
  version: string;
  startedAt: number;
  rateLimitPerHour: number;
  now: () => number;
  dbOk(): Promise<boolean>;
}

const STATS = 'Statistics';
const REPORTS = 'Reports';

export function aggregatorRoutes(d: RouteDeps): AnyRoute[] {
  const view = (path: string, summary: string, response: z.ZodType, handler: (q: { days: number }) => Promise<unknown>, description?: string) =>
    defineRoute({ method: 'get', path, tag: STATS, summary, description, query: WindowQuery, response, handler: ({ query }) => handler(query) });
  const timeline = (path: string, summary: string, response: z.ZodType, handler: (q: { days: number; interval: 'day' | 'week' }) => Promise<unknown>, description?: string) =>
    defineRoute({ method: 'get', path, tag: STATS, summary, description, query: TimelineQuery, response, handler: ({ query }) => handler(query) });

  return [
    defineRoute({
      method: 'get',
      path: '/health',
      tag: 'Health',
      summary: 'Health of the aggregation service',
      response: Health,
      handler: async () => {
        const ok = await d.dbOk();
        const body = {
          status: ok ? 'healthy' : 'unhealthy',
          service: 'printfarm-aggregator',
          version: d.version,
          uptime_seconds: Math.floor((Date.now() - d.startedAt) / 1000),
          database: ok ? 'ok' : 'error',
          email_configured: d.mailer.configured,
          timestamp: new Date().toISOString(),
        };
        return ok ? body : new Reply(503, body);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/health/live',
      tag: 'Health',
      summary: 'Liveness: the process answers',
      response: Liveness,
      handler: () => ({ status: 'alive', timestamp: new Date().toISOString() }),
    }),
    defineRoute({
      method: 'get',
      path: '/health/ready',
      tag: 'Health',
      summary: 'Readiness: the database answers (503 otherwise)',
      response: Readiness,
      handler: async () => {
        const ok = await d.dbOk();
        const body = { ready: ok, database: ok ? 'ok' : 'error', timestamp: new Date().toISOString() };
        return ok ? body : new Reply(503, body);
      },
    }),
    defineRoute({
      method: 'post',
      path: '/submit',
      tag: 'Submissions',
      summary: 'Receive a usage-statistics submission',
      description: `Requires \`X-API-Key\` (401 otherwise). The body is validated (422 VALIDATION_ERROR with the offending fields; unknown fields are ignored); its times (submitted_at, period_start, period_end) must lie between 2020-01-01 and 24 hours after the receiving clock, and printer_type_counts must add up to printer_count (printer_types naming exactly its types). At most ${d.rateLimitPerHour} accepted submissions per installation_id per hour (a fixed window from the first one): beyond that 429 RATE_LIMIT_EXCEEDED with \`Retry-After\` (seconds). A repeat of a stored (installation_id, submitted_at), e.g. a client retry whose answer was lost, answers 200 \`duplicate\` and changes nothing. Each period of an installation counts once: a submission replaces the stored ones of its installation whose period it overlaps (more than a shared end, or the same start; listed in \`replaced\`), and one that overlaps a stored, later-submitted one is refused with 409 SUBMISSION_SUPERSEDED (\`details.superseded_by\`), using no quota. A submission of an installation whose data was deleted (DELETE /installation/{id}) with a period that starts before the deletion: 409 INSTALLATION_DELETED (\`details.deleted_at\`), using no quota.`,
      body: UsageSubmission,
      status: 201,
      response: SubmitAccepted,
      alsoStatus: { status: 200, description: 'A repeat of a stored submission (`status: duplicate`): nothing changed' },
      errors: [401, 409, 429],
      async handler({ body, res }) {
        const now = d.now();
        checkSubmissionTimes(body, now);
        const outcome = await d.repo.accept(body, now, d.rateLimitPerHour, HOUR_MS);
        const resetMs = outcome.windowStartMs + HOUR_MS;
        const remaining = Math.max(0, d.rateLimitPerHour - outcome.count);
        res.setHeader('X-RateLimit-Limit', String(d.rateLimitPerHour));
        res.setHeader('X-RateLimit-Remaining', String(remaining));
        res.setHeader('X-RateLimit-Reset', String(Math.ceil(resetMs / 1000)));
        if (outcome.kind === 'limited') {
          const retryAfter = Math.max(1, Math.ceil((resetMs - now) / 1000));
          res.setHeader('Retry-After', String(retryAfter));
          throw new DomainError(429, 'RATE_LIMIT_EXCEEDED', `At most ${d.rateLimitPerHour} submissions per hour per installation; retry in ${retryAfter} s`, {
            installation_id: body.installation_id,
            limit: d.rateLimitPerHour,
            submission_count: outcome.count,
            window_start: new Date(outcome.windowStartMs).toISOString(),
            retry_after_seconds: retryAfter,
          });
        }
        if (outcome.kind === 'deleted') {
          throw new DomainError(409, 'INSTALLATION_DELETED', `The data of installation ${body.installation_id} was deleted at ${outcome.deletedAt}; a period that starts before then is not taken again`, {
            installation_id: body.installation_id,
            deleted_at: outcome.deletedAt,
            submitted_at: body.submitted_at,
            period_start: body.period_start,
          });
        }
        if (outcome.kind === 'superseded') {
          throw new DomainError(409, 'SUBMISSION_SUPERSEDED', `A later submission of installation ${body.installation_id} covers this period; it counts instead`, {
            installation_id: body.installation_id,
            submitted_at: body.submitted_at,
            period_start: body.period_start,
            period_end: body.period_end,
            superseded_by: outcome.by,
          });
        }
        const result = {
          status: outcome.kind,
          installation_id: body.installation_id,
          submission_id: outcome.id,
          received_at: new Date(now).toISOString(),
          replaced: outcome.kind === 'accepted' ? outcome.replaced : [],
          rate_limit: { limit: d.rateLimitPerHour, remaining, window_start: new Date(outcome.windowStartMs).toISOString(), reset_at: new Date(resetMs).toISOString() },
        };
        return new Reply(outcome.kind === 'accepted' ? 201 : 200, result);
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/installation/{id}',
      tag: 'Submissions',
      summary: 'Delete all data of one installation',
      description:
        'Removes its submissions, its installation record and its rate-limit record, and remembers the deletion time (also when nothing was stored): from then on a submission of this installation whose period starts before that time (a replay, or one still on its way) is refused with 409 INSTALLATION_DELETED. 404 INSTALLATION_NOT_FOUND when nothing is stored. Counted against the same per-address and per-key hourly limits as POST /submit (429 RATE_LIMIT_EXCEEDED with `Retry-After`).',
      params: InstallationParams,
      response: InstallationDeleted,
      errors: [401, 429],
      async handler({ params }) {
        const result = await d.repo.deleteInstallation(params.id, d.now());
        if (!result.found) throw notFound('INSTALLATION_NOT_FOUND', `No data of installation ${params.id}`, { installation_id: params.id });
        return { installation_id: params.id, deleted: true as const, submissions_deleted: result.submissions };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/stats/summary',
      tag: STATS,
      summary: 'Statistics summary: installations, submissions, counter totals',
      response: Summary,
      handler: () => d.stats.summary(),
    }),
    view('/stats/overview', 'Combined dashboard data (summary, installations, distributions, anomalies)', Overview, (q) => d.stats.overview(q.days), 'Distributions use the installations active within `days`; the installation trend covers 90 days in weeks.'),
    timeline('/stats/installations', 'Installation metrics with trend', Installations, (q) => d.stats.installations(q.days, q.interval)),
    view('/stats/deployment-modes', 'Deployment distribution (standalone, node-red, docker)', DeploymentModes, (q) => d.stats.deploymentModes(q.days), 'The 50 modes with the most installations; `modes_other` sums the rest.'),
    view('/stats/versions', 'Version adoption', Versions, (q) => d.stats.versions(q.days), 'The 50 versions with the most installations (counted in SQL); `versions_other` sums the rest, and `latest_version` is the newest listed one.'),
    view('/stats/geography', 'Geographic distribution (country from the time zone; XX unknown)', Geography, (q) => d.stats.geography(q.days)),
    view('/stats/printers', 'Printer statistics: fleet sizes and types', Printers, (q) => d.stats.printers(q.days), 'Fleet sizes are counted in SQL; `types` lists the 50 types with the most printers and `types_other` sums the rest.'),
    view('/stats/features', 'Feature usage: enabled and disabled counts', Features, (q) => d.stats.features(q.days), 'The 50 features most often enabled; `features_other` sums the rest.'),
    timeline('/stats/version-migration', 'Version adoption over time', VersionMigration, (q) => d.stats.versionMigration(q.days, q.interval), 'The 50 versions with the most installations over the timeline, in every bucket; `versions_other` sums the rest per bucket, `versions_omitted` counts them.'),
    defineRoute({
      method: 'get',
      path: '/stats/anomalies',
      tag: STATS,
      summary: 'Anomaly alerts with severity',
      description:
        'Rules: active installations week over week down >= 20 % medium, down >= 50 % high, up >= 50 % spike (medium); submissions in the last 24 h above 3x (spike, medium) or below 0.2x (drop, high) the daily mean of the 30 days before; errors week over week up >= 50 % medium (>= 100 % high); more than 30 % of active installations reporting errors, high.',
      response: Anomalies,
      handler: () => d.stats.anomalies(),
    }),
    defineRoute({
      method: 'get',
      path: '/stats/export',
      tag: STATS,
      summary: 'Full export (JSON download)',
      response: Export,
      async handler({ res }) {
        const exportedAt = new Date(d.now()).toISOString();
        res.setHeader('Content-Disposition', `attachment; filename="printfarm-aggregator-export-${exportedAt.slice(0, 10)}.json"`);
        // Written page by page (export-stream.ts): the whole export never sits in memory.
        await streamExport(d.repo, res, exportedAt);
      },
    }),
    timeline('/stats/feature-trends', 'Feature adoption over time', FeatureTrends, (q) => d.stats.featureTrends(q.days, q.interval), 'The 50 features most often enabled over the timeline, in every bucket; `features_omitted` counts the others.'),
    timeline('/stats/errors', 'Error statistics with trends', Errors, (q) => d.stats.errors(q.days, q.interval), 'Errors are the `error` event counts of the submissions; `by_type` adds up their `error_<code>` counts, the 50 most frequent codes (counted in SQL), and `by_type_other` the rest.'),
    defineRoute({
      method: 'get',
      path: '/reports/email-status',
      tag: REPORTS,
      summary: 'Mail configuration status',
      response: EmailStatus,
      handler: () => d.mailer.status(),
    }),
    defineRoute({
      method: 'post',
      path: '/reports/test-email',
      tag: REPORTS,
      summary: 'Send a test mail',
      description: '503 EMAIL_NOT_CONFIGURED without an SMTP server; 502 EMAIL_SEND_FAILED when the server refused.',
      body: MailBody,
      response: MailSent,
      errors: [401, 502, 503],
      async handler({ body }) {
        const subject = 'Printfarm aggregator: test mail';
        const sent = await d.mailer.send(subject, `This is a test mail of the Printfarm aggregation service (version ${d.version}), sent ${new Date().toISOString()}.\n`, undefined, body.to);
        return { sent: true as const, ...sent, subject, report: null };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/reports/weekly',
      tag: REPORTS,
      summary: 'Send the weekly summary report (last 7 days against the 7 before)',
      body: MailBody,
      response: MailSent,
      errors: [401, 502, 503],
      async handler({ body }) {
        const report = await d.stats.report('weekly');
        return { sent: true as const, ...(await d.mailer.sendReport(report, body.to)), report };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/reports/monthly',
      tag: REPORTS,
      summary: 'Send the monthly report (last 30 days against the 30 before)',
      body: MailBody,
      response: MailSent,
      errors: [401, 502, 503],
      async handler({ body }) {
        const report = await d.stats.report('monthly');
        return { sent: true as const, ...(await d.mailer.sendReport(report, body.to)), report };
      },
    }),
  ];
}
