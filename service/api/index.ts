/**
 * The HTTP application: request ids and access log, the start/stop gate,
 * JSON bodies, the /api/v1 routes, the OpenAPI document and docs, and the
 * error body for everything that goes wrong.
 */
import express, { type Express, type RequestHandler } from 'express';
import type { Logger } from 'pino';
import type { ServiceContext } from '../context';
import type { TokenRegistry } from '../auth/tokens';
import { routeAuth } from './auth';
import type { BrowserGuard } from './browser-guard';
import { docsRouter } from '../http/docs';
import type { ServiceMetrics } from '../system/metrics';
import { PROMETHEUS_CONTENT_TYPE } from '../util/prometheus';
import { compileTrust, type TrustFn } from '../util/proxy-trust';
import { ApiError, errorHandler, sendError, unknownRoute } from '../http/errors';
import { fileRoutes } from './files';
import { ideaRoutes } from './ideas';
import { jobRoutes } from './jobs';
import { buildOpenApi } from '../http/openapi';
import { cameraRoutes } from './cameras';
import { printerRoutes } from './printers';
import { queueRoutes } from './queue';
import { attentionRoutes } from './attention';
import { discoveryRoutes } from './discovery';
import { routeLimiter, type RateLimiter } from './rate-limit';
import { requestLog } from '../http/request-log';
import { defineRoute, mountRoutes, type AnyRoute } from '../http/route';
import { settingsRoutes } from './settings';
import { spoolRoutes } from './spools';
import { statisticsRoutes } from './statistics';
import { OpenApiDocument, systemRoutes } from './system';
import { usageRoutes } from './usage';

export const API_BASE = '/api/v1';
export const BODY_LIMIT_BYTES = 1024 * 1024;
export const METRICS_PATH = '/metrics';

export type Phase = 'starting' | 'ready' | 'stopping';

/** Requests that arrive while the service starts or stops get 503. */
function phaseGate(phase: () => Phase): RequestHandler {
  return (_req, res, next) => {
    const now = phase();
    if (now === 'ready') return next();
    res.setHeader('Retry-After', '5');
    if (now === 'stopping') res.setHeader('Connection', 'close');
    sendError(res, new ApiError(503, 'SERVICE_UNAVAILABLE', now === 'starting' ? 'The service is starting' : 'The service is shutting down', { phase: now }));
  };
}

/** In "u" mode a surrogate pair is one code point, so this matches unpaired surrogates only. */
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

/**
 * JSON escapes can carry lone UTF-16 surrogates ("\ud800"), which are no text: SQLite would store them
 * as invalid UTF-8 and give back something else. Such a body is refused as not valid JSON (422).
 */
function refuseLoneSurrogates(key: string, value: unknown): unknown {
  if ((typeof value === 'string' && LONE_SURROGATE.test(value)) || LONE_SURROGATE.test(key)) {
    throw new SyntaxError('string with a lone UTF-16 surrogate (not valid Unicode)');
  }
  return value;
}

export interface Api {
  app: Express;
  /** Mounts the routes once the context exists (the app answers 503 until then). */
  mount(ctx: ServiceContext): void;
  routes(): AnyRoute[];
}

export interface ApiOptions {
  metrics: ServiceMetrics;
  limiter: RateLimiter;
  /** Which proxies in front are trusted (TRUST_PROXY): `req.ip`, the address rate limits count, follows it. */
  trustProxy?: TrustFn;
  /** Host and Origin checks, nosniff (see browser-guard.ts). */
  guard: BrowserGuard;
  /** Bearer tokens of the optional access control (off while there are none). */
  tokens: TokenRegistry;
}

export function createApi(log: Logger, phase: () => Phase, { metrics, limiter, trustProxy = compileTrust(false), guard, tokens }: ApiOptions): Api {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('trust proxy', trustProxy);
  app.use(metrics.http);
  app.use(requestLog(log));
  // Before anything else answers: a foreign Host or Origin learns nothing, not even the phase.
  app.use(guard.middleware());
  app.use(phaseGate(phase));
  // Counted before the body is read: a refused request costs no parsing.
  app.use(API_BASE, limiter.api);
  app.use(express.json({ limit: BODY_LIMIT_BYTES, reviver: refuseLoneSurrogates }));
  const inner = express.Router();
  app.use(inner);
  app.use(unknownRoute);
  app.use(errorHandler(log));

  let routes: AnyRoute[] = [];
  return {
    app,
    routes: () => routes,
    mount(ctx) {
      let document: object | undefined;
      const openapiRoute = defineRoute({
        method: 'get',
        path: '/openapi.json',
        tag: 'System',
        summary: 'This OpenAPI 3.1 document',
        response: OpenApiDocument,
        handler: () => document,
      });
      routes = [...systemRoutes(ctx), ...printerRoutes(ctx), ...cameraRoutes(ctx), ...jobRoutes(ctx), ...fileRoutes(ctx), ...statisticsRoutes(ctx), ...settingsRoutes(ctx), ...ideaRoutes(ctx), ...usageRoutes(ctx), ...queueRoutes(ctx), ...attentionRoutes(ctx), ...discoveryRoutes(ctx), ...spoolRoutes(ctx), openapiRoute];
      document = buildOpenApi(routes, API_BASE, {
        version: ctx.version,
        rateLimited: true,
        browserGuarded: true,
        bearerAuth: { openRoutes: ['get /health', 'get /openapi.json'] },
        extraPaths: {
          '/ws': {
            get: {
              tags: ['Real-time'],
              summary: 'WebSocket upgrade for real-time events',
              description:
                'Upgrade to a WebSocket. Server frames: `{type, timestamp, data}` with type printer_status (with `plate_state`), job_update, job_auto_created, file_update, queue_update (a queue item as `GET /queue/{item_id}` shows it, after every change of the item or its dispatches), spool_update (a spool as `GET /spools/{spool_id}` shows it, with `change`), spool_low (once when a spool falls below spool_low_threshold_g) or system_alert. Client frames: `{"type":"subscribe","printer_ids":[...]}`, `{"type":"ping"}`.',
              operationId: 'getWs',
              responses: {
                '101': { description: 'Switching protocols' },
                '403': { description: 'ORIGIN_NOT_ALLOWED: a web page of another origin (see ALLOWED_ORIGINS)', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
                '401': { description: 'UNAUTHORIZED: access control is on and no known token came (Authorization: Bearer, or ?access_token= for browsers)', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
                '404': { description: 'Not a WebSocket upgrade' },
                '421': { description: 'HOST_NOT_ALLOWED: a host name not served here (see ALLOWED_HOSTS)', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
                '429': { description: 'RATE_LIMIT_EXCEEDED: this client has 10 connections open (only with rate_limit_enabled)' },
                '503': {
                  description:
                    'SERVICE_UNAVAILABLE: the /ws connection cap is reached, always on: WS_MAX_CLIENTS (default 1000) in total or WS_MAX_CLIENTS_PER_IP (default 50) from this address; details.scope says which, Retry-After: 60',
                },
              },
            },
          },
          [METRICS_PATH]: {
            get: {
              tags: ['System'],
              summary: 'Metrics in Prometheus text format',
              description:
                'Printers by status and connection, printer reports (total and per second), /ws clients and events, API latency per route (histogram), downloads, rate-limit refusals, database size, process memory, CPU and event-loop delay. Not under /api/v1 and never rate limited.',
              operationId: 'getMetrics',
              security: [],
              responses: {
                '200': { description: 'The metrics', content: { [PROMETHEUS_CONTENT_TYPE]: { schema: { type: 'string' } } } },
                '421': { description: 'HOST_NOT_ALLOWED: a host name not served here (see ALLOWED_HOSTS)', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
                '503': { description: 'The service is starting or stopping', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
              },
            },
          },
        },
      });
      const api = express.Router();
      mountRoutes(api, routes, {
        prefix: API_BASE,
        before: (route) => {
          // The token first: a refused client costs no rate-limit count.
          const auth = routeAuth(tokens, route);
          const limit = routeLimiter(limiter, route.method, route.path);
          return limit ? (req, res, next) => auth(req, res, (err?: unknown) => (err ? next(err) : limit(req, res, next))) : auth;
        },
      });
      inner.use(API_BASE, api);
      // Off the /api/v1 prefix and outside the rate limits: scrapers come often and from one address.
      inner.get(METRICS_PATH, async (_req, res) => {
        res.locals.route = METRICS_PATH;
        res.type(PROMETHEUS_CONTENT_TYPE).send(await metrics.registry.render());
      });
      inner.use(docsRouter(document));
    },
  };
}
