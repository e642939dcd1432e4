/**
 * "Delete my data" at the aggregation service: DELETE /installation/{id} next to the submit address.
 * Never throws: the outcome (and our words for a failure, never the remote's) goes into the answer of
 * DELETE /usage-stats/delete-all.
 */
import type { Logger } from 'pino';
import { AttemptError, httpsUrl, requestJson, statusReason, type HttpsTarget } from './submitter';

export interface RemoteDeletion {
  requested: boolean;
  deleted: boolean;
  status: number | null;
  error: string | null;
}

export async function deleteRemote(endpoint: string, installationId: string | null, target: HttpsTarget, log: Logger): Promise<RemoteDeletion> {
  if (!installationId) return { requested: false, deleted: false, status: null, error: 'no installation id: nothing was ever sent' };
  try {
    const url = new URL(`installation/${encodeURIComponent(installationId)}`, httpsUrl(endpoint));
    const res = await requestJson('DELETE', url, undefined, target);
    // 404: the aggregation service holds nothing of this installation, which is what was asked for.
    const deleted = (res.status >= 200 && res.status < 300) || res.status === 404;
    return { requested: true, deleted, status: res.status, error: deleted ? null : statusReason(res.status) };
  } catch (err) {
    log.warn({ err: (err as Error).message, detail: (err as AttemptError).logDetail }, 'usage statistics: remote deletion failed');
    return { requested: true, deleted: false, status: null, error: (err as Error).message };
  }
}
