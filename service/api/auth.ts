/**
 * Optional access control (off while no token exists; see auth/tokens.ts). With tokens, every /api/v1
 * route but /health and /openapi.json, and /ws, needs `Authorization: Bearer <token>`:
 *  - viewer reads (printer details without access codes);
 *  - operator also controls printers, jobs, files, ideas and the queue (webhook URLs still by their origin only);
 *  - admin also changes printers' configuration, settings and usage statistics.
 * No or an unknown token: 401; a role too low: 403; both with the error body.
 */
import type { IncomingMessage } from 'node:http';
import type { RequestHandler } from 'express';
import type { Role, TokenRegistry } from '../auth/tokens';
import { ApiError, sendError } from '../http/errors';
import type { AnyRoute } from '../http/route';

const RANK: Record<Role, number> = { viewer: 0, operator: 1, admin: 2 };

/** Routes anyone may call: the health check (load balancers, monitors) and the API description. */
const OPEN = new Set(['get /health', 'get /openapi.json']);

/** What a route needs (null: open to all). */
export function requiredRole(route: Pick<AnyRoute, 'method' | 'path'>): Role | null {
  if (OPEN.has(`${route.method} ${route.path}`)) return null;
  if (route.method === 'get') return 'viewer';
  const configures =
    (route.path === '/printers' && route.method === 'post') ||
    (route.path === '/printers/{printer_id}' && (route.method === 'put' || route.method === 'delete')) ||
    route.path.startsWith('/settings') ||
    route.path.startsWith('/usage-stats');
  return configures ? 'admin' : 'operator';
}

/** The bearer token of a request (the `access_token` query parameter too where allowed: browsers' WebSocket and <img src>, which cannot set headers). */
export function bearerToken(req: IncomingMessage, allowQuery = false): string | null {
  const header = req.headers.authorization;
  const match = typeof header === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
  if (match) return match[1];
  if (!allowQuery) return null;
  const fromQuery = new URL(req.url ?? '/', 'http://localhost').searchParams.get('access_token');
  return fromQuery || null;
}

/** Why `req` may not do what needs `needed`, or null (also null while access control is off). */
export function authorize(tokens: TokenRegistry, req: IncomingMessage, needed: Role | null, allowQuery = false): { error: ApiError; role: Role | null } | { role: Role | null } {
  if (!needed || !tokens.enabled) return { role: null };
  return authorizeToken(tokens, bearerToken(req, allowQuery), needed);
}

/** Why `token` may not do what needs `needed`, or null: judged again for a connection let in earlier (/ws). */
export function authorizeToken(tokens: TokenRegistry, token: string | null, needed: Role | null): { error: ApiError; role: Role | null } | { role: Role | null } {
  if (!needed || !tokens.enabled) return { role: null };
  const role = token ? tokens.roleOf(token) : null;
  if (!role) {
    const why = token ? 'The token is not known' : 'This service needs a token: send Authorization: Bearer <token>';
    return { role: null, error: new ApiError(401, 'UNAUTHORIZED', why, {}) };
  }
  if (RANK[role] < RANK[needed]) {
    return { role, error: new ApiError(403, 'FORBIDDEN', `The ${role} role may not do this; it needs ${needed}`, { role, required_role: needed }) };
  }
  return { role };
}

/** Camera pictures are shown by <img src> tags, which cannot send headers: they may carry the token as `access_token` too. */
const QUERY_TOKEN_ROUTES = new Set(['get /printers/{printer_id}/camera/snapshot', 'get /printers/{printer_id}/camera/stream']);

/** The middleware a route gets: the check, and access codes hidden from viewers. */
export function routeAuth(tokens: TokenRegistry, route: AnyRoute): RequestHandler {
  const needed = requiredRole(route);
  const allowQuery = QUERY_TOKEN_ROUTES.has(`${route.method} ${route.path}`);
  return (req, res, next) => {
    const result = authorize(tokens, req, needed, allowQuery);
    if ('error' in result) {
      if (result.error.status === 401) res.setHeader('WWW-Authenticate', 'Bearer realm="printfarm"');
      return sendError(res, result.error);
    }
    if (result.role && result.role !== 'admin') hideSecrets(res, result.role);
    // An open route answers everyone; what only an admin may read there (GET /health's details) needs to know who asks.
    if (!needed) res.locals.callerIsAdmin = callerIsAdmin(tokens, req);
    next();
  };
}

/** Whether the caller of an open route sees what an admin sees: everyone while access control is off, else an admin's token. */
function callerIsAdmin(tokens: TokenRegistry, req: IncomingMessage): boolean {
  if (!tokens.enabled) return true;
  const token = bearerToken(req);
  // A wrong token is no reason to refuse an open route (a load balancer's health check): it only sees less.
  return token !== null && tokens.roleOf(token) === 'admin';
}

/**
 * Below admin, webhook URLs (an ntfy topic, a token in a query) show only their origin: setting and reading
 * them whole is the admin's (docs/notifications.md). Viewers also see printers without their access codes;
 * operators keep those, as they run the printers.
 */
function hideSecrets(res: Parameters<RequestHandler>[1], role: Role): void {
  const json = res.json.bind(res);
  res.json = (body: unknown) => json(redact(body, 0, role === 'viewer'));
}

function redact(value: unknown, depth: number, dropAccessCodes: boolean): unknown {
  if (depth > 8 || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((v) => redact(v, depth + 1, dropAccessCodes));
  return Object.fromEntries(
    Object.entries(value).flatMap(([k, v]) => (k === 'access_code' && dropAccessCodes ? [] : [[k, k === 'notify_webhooks' ? maskWebhooks(v) : redact(v, depth + 1, dropAccessCodes)]])),
  );
}

function maskWebhooks(value: unknown): unknown {
  if (!Array.isArray(value)) return value;
  return value.map((hook) => {
    const url = (hook as { url?: unknown })?.url;
    const origin = typeof url === 'string' && URL.canParse(url) ? new URL(url).origin : '';
    return { ...(hook as object), url: `${origin}/********` };
  });
}
