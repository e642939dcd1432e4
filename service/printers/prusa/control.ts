/**
 * PrusaLink job control: pause, resume and stop address the job by its id,
 * which is asked fresh for every command so that a command never hits an old job.
 */
import { DriverError } from '../driver';
import type { PrusaHttpClient } from './http';
import type { PrusaJob, PrusaStatus } from './state';

export type JobAction = 'pause' | 'resume' | 'stop';

/** The printer's current job id (from the status, else from the job itself). */
export async function currentJobId(http: PrusaHttpClient): Promise<number> {
  const status = await http.json<PrusaStatus>('/api/v1/status');
  if (typeof status?.job?.id === 'number') return status.job.id;
  const job = await http.json<PrusaJob>('/api/v1/job'); // partial report without job: ask the job itself
  if (typeof job?.id === 'number') return job.id;
  throw new DriverError('REJECTED', 'there is no job on the printer');
}

/** Sends `action` to the printer's current job. */
export async function controlJob(http: PrusaHttpClient, action: JobAction): Promise<void> {
  const id = await currentJobId(http);
  if (action === 'stop') await http.request('DELETE', `/api/v1/job/${id}`);
  else await http.request('PUT', `/api/v1/job/${id}/${action}`);
}
