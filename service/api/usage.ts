import type { ServiceContext } from '../context';
import { DeleteAllQuery, DeleteAllResult, EmptyBody, OptInResult, OptOutResult, SubmitResult, UsageExport, UsageLocal } from '../schemas/usage';
import { defineRoute, type AnyRoute } from '../http/route';

const TAG = 'Usage statistics';

const PRIVACY =
  'Opt-in, off by default. Only anonymous data: a random installation id, event counts, printer type counts, a country code derived from the time zone, platform, deployment mode, app version and feature usage. Never serial numbers, IP addresses, printer or file names, or access codes.';

export function usageRoutes({ usage }: ServiceContext): AnyRoute[] {
  return [
    defineRoute({
      method: 'get',
      path: '/usage-stats/local',
      tag: TAG,
      summary: 'View the locally collected usage statistics',
      description: `${PRIVACY} Shows the opt-in state, the counters per event type (pending = not yet submitted) and \`next_submission\`: exactly what would be sent now.`,
      response: UsageLocal,
      handler: () => usage.local(),
    }),
    defineRoute({
      method: 'post',
      path: '/usage-stats/opt-in',
      tag: TAG,
      summary: 'Opt in to anonymous usage statistics',
      description: `${PRIVACY} Creates a random installation id. The scheduler checks 5 minutes after start and then hourly, and submits every \`usage_stats_submission_interval_days\`. No body (or \`{}\`).`,
      body: EmptyBody,
      response: OptInResult,
      handler: () => usage.optIn(),
    }),
    defineRoute({
      method: 'post',
      path: '/usage-stats/opt-out',
      tag: TAG,
      summary: 'Opt out: stop collecting and sending',
      description: 'Nothing more is counted or sent. Counters already collected stay viewable, exportable and deletable (DELETE /usage-stats/delete-all). No body (or `{}`).',
      body: EmptyBody,
      response: OptOutResult,
      handler: () => usage.optOut(),
    }),
    defineRoute({
      method: 'get',
      path: '/usage-stats/export',
      tag: TAG,
      summary: 'Export all locally collected usage statistics (JSON download)',
      description: 'The local view plus every stored counter, as an attachment (Content-Disposition).',
      response: UsageExport,
      async handler({ res }) {
        const data = await usage.export();
        res.setHeader('Content-Disposition', `attachment; filename="printfarm-usage-stats-${data.exported_at.slice(0, 10)}.json"`);
        return data;
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/usage-stats/delete-all',
      tag: TAG,
      summary: 'Delete all locally collected usage statistics',
      description:
        'Removes every counter and the installation id; when still opted in, a new random id is created so that nothing links old and new data. With `include_remote=true` the aggregation service is first asked to delete this installation (DELETE /installation/{id}); its answer is in `remote`.',
      query: DeleteAllQuery,
      response: DeleteAllResult,
      handler: ({ query }) => usage.deleteAll(query.include_remote ?? false),
    }),
    defineRoute({
      method: 'post',
      path: '/usage-stats/submit',
      tag: TAG,
      summary: 'Submit the usage statistics now',
      description:
        'Sends the pending counters to `usage_stats_endpoint` over HTTPS with `X-API-Key`. Network errors, timeouts, 429 and 5xx are retried (`usage_stats_retry_count` times, waits of 2, 4, 8... s); 401 is not. 409 USAGE_STATS_OPTED_OUT when opted out; 502 USAGE_SUBMISSION_FAILED with `details.attempts` and `details.status` when it failed. No body (or `{}`).',
      body: EmptyBody,
      response: SubmitResult,
      errors: [409, 502],
      handler: () => usage.submit('manual'),
    }),
  ];
}
