/**
 * Who may open /ws. An upgrade is refused like any other request, with the error body; one that is let in
 * carries how to judge it again later, so that a connection does not outlive the token it came in with.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { TokenRegistry } from '../auth/tokens';
import { errorPayload, type ApiError } from '../http/errors';
import type { Admission } from '../realtime';
import type { ConnectionCap } from '../system/connection-cap';
import type { TrustFn } from '../util/proxy-trust';
import { authorize, authorizeToken, bearerToken } from './auth';
import type { BrowserGuard } from './browser-guard';
import { clientAddress, type RateLimiter } from './rate-limit';

export interface WsAdmissionDeps {
  guard: BrowserGuard;
  tokens: TokenRegistry;
  cap: ConnectionCap;
  limiter: RateLimiter;
  trust: TrustFn;
}

/**
 * A foreign Host (421) or another site's page (403: browsers always send Origin on WebSocket upgrades), no
 * or a refused token (401/403), then the connection cap (503, always on: WS_MAX_CLIENTS in total,
 * WS_MAX_CLIENTS_PER_IP per address), then the per-client limit (429).
 */
export function admitWebSocket({ guard, tokens, cap, limiter, trust }: WsAdmissionDeps, req: IncomingMessage): Admission {
  const refusal = guard.check(req, true);
  if (refusal) return refuseUpgrade(refusal, {});
  const auth = authorize(tokens, req, 'viewer', true);
  if ('error' in auth) return refuseUpgrade(auth.error, auth.error.status === 401 ? { 'WWW-Authenticate': 'Bearer realm="printfarm"' } : {});
  const address = clientAddress(req, trust);
  const capped = cap.admit(address);
  if ('refused' in capped) {
    const message =
      capped.refused === 'total'
        ? `Too many /ws connections: the service keeps at most ${capped.limit} open; try again later`
        : `Too many /ws connections from this address: at most ${capped.limit} at once`;
    return refuseUpgrade({ status: 503, code: 'SERVICE_UNAVAILABLE', message, details: { limit: capped.limit, scope: capped.refused } }, { 'Retry-After': '60' });
  }
  const admission = limiter.admitWebSocket(address);
  if ('release' in admission) {
    // Kept for the life of the connection, to ask again when the tokens change (removed, or the role lowered).
    const token = bearerToken(req, true);
    return {
      release: () => {
        capped.release();
        admission.release();
      },
      stillAllowed: () => !('error' in authorizeToken(tokens, token, 'viewer')),
    };
  }
  capped.release();
  return refuseUpgrade(admission.error, { 'Retry-After': String(admission.error.details.retry_after_seconds) });
}

function refuseUpgrade(error: Pick<ApiError, 'status' | 'code' | 'message' | 'details'>, headers: Record<string, string>): Admission {
  const requestId = randomUUID();
  return {
    refuse: {
      status: error.status,
      headers: { 'X-Request-Id': requestId, 'X-Content-Type-Options': 'nosniff', ...headers },
      body: JSON.stringify(errorPayload(error.code, error.message, error.details, requestId)),
    },
  };
}
