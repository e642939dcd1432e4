import type { ServiceContext } from '../context';
import { isPrintOf } from '../monitoring/print-identity';
import { CreateJobBody, JobCancelled, JobDeleted, JobDetail, JobIdParams, JobList, JobListQuery, JobUpdated, UpdateJobBody } from '../schemas/jobs';
import { defineRoute, type AnyRoute } from '../http/route';

export function jobRoutes({ jobs, fleet }: ServiceContext): AnyRoute[] {
  return [
    defineRoute({
      method: 'get',
      path: '/jobs',
      tag: 'Jobs',
      summary: 'List jobs',
      description:
        'Filters combine. `status=running` means `printing`. Date bounds apply to the start time (or the creation time of jobs not started); a date without time covers the whole day in the configured time zone. The summary counts over all jobs (of `printer_id` when given).',
      query: JobListQuery,
      response: JobList,
      handler: ({ query }) => jobs.list(query),
    }),
    defineRoute({
      method: 'post',
      path: '/jobs',
      tag: 'Jobs',
      summary: 'Create a job by hand',
      body: CreateJobBody,
      status: 201,
      response: JobDetail,
      handler: ({ body }) => jobs.create(body),
    }),
    defineRoute({
      method: 'get',
      path: '/jobs/{job_id}',
      tag: 'Jobs',
      summary: 'Job detail',
      params: JobIdParams,
      response: JobDetail,
      handler: ({ params }) => jobs.detail(params.job_id),
    }),
    defineRoute({
      method: 'put',
      path: '/jobs/{job_id}',
      tag: 'Jobs',
      summary: 'Change business fields, costs, notes or quality of a job',
      params: JobIdParams,
      body: UpdateJobBody,
      response: JobUpdated,
      handler: ({ params, body }) => jobs.update(params.job_id, body),
    }),
    defineRoute({
      method: 'delete',
      path: '/jobs/{job_id}',
      tag: 'Jobs',
      summary: 'Delete a job (auto-created ones too)',
      params: JobIdParams,
      response: JobDeleted,
      handler: ({ params }) => jobs.remove(params.job_id),
    }),
    defineRoute({
      method: 'post',
      path: '/jobs/{job_id}/cancel',
      tag: 'Jobs',
      summary: 'Cancel an active job',
      description:
        'Stops the print on the printer first when it is printing this job (another print it runs now goes on): 502 PRINTER_OFFLINE when the printer cannot be reached (the job stays as it is), 409 PRINTER_BUSY when it refuses. 409 JOB_NOT_ACTIVE when the job is not queued, printing or paused.',
      params: JobIdParams,
      response: JobCancelled,
      errors: [409, 502],
      handler: ({ params }) => jobs.cancel(params.job_id, (job) => fleet.stopIfPrinting(job.printer_id, (print) => isPrintOf(print, job))),
    }),
  ];
}
