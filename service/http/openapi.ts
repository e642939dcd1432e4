/** Writes the OpenAPI 3.1 document from the route declarations and their zod schemas. */
import { z } from 'zod';
import { ErrorBody } from '../schemas/common';
import type { AnyRoute } from './route';

type JsonSchema = Record<string, unknown>;

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const { $schema: _drop, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as JsonSchema;
  return rest;
}

const TAG_TEXT: Record<string, string> = {
  System: 'Health, version, update check and this document',
  Printers: 'Printer configuration, live state, statistics and capabilities',
  Cameras: 'Camera snapshots (JPEG) and live MJPEG streams: one connection per printer camera, shared by every viewer',
  Jobs: 'Print jobs: history, progress, material, costs, business data; cancel',
  Settings: 'Runtime settings; values set here persist across restarts',
  Files: 'The file catalog: printer and local files, downloads, uploads, cleanup, thumbnails and previews',
  Statistics: 'Farm and printer statistics, maintenance events',
  Ideas: 'Ideas and bookmarks from model platforms; trending',
  'Usage statistics': 'Opt-in anonymous usage statistics',
  Filament: 'Spools (the embedded inventory or Spoolman), which slot holds which spool',
  'Real-time': 'The /ws WebSocket channel',
};

const ERROR_TEXT: Record<number, string> = {
  401: 'No or an unknown bearer token (UNAUTHORIZED; only with access control on)',
  400: 'Invalid path or query parameters (VALIDATION_ERROR), a body that cannot be decoded, or an unusable configuration',
  404: 'Not found',
  408: 'The request did not arrive in time (REQUEST_TIMEOUT; answered before routing)',
  409: 'Conflict',
  413: 'Body too large (PAYLOAD_TOO_LARGE)',
  403: 'A web page of another origin (ORIGIN_NOT_ALLOWED; see ALLOWED_ORIGINS), or a role too low for this (FORBIDDEN; only with access control on)',
  415: 'Unsupported body charset or encoding (UNSUPPORTED_MEDIA_TYPE)',
  421: 'Host name not served here (HOST_NOT_ALLOWED; see ALLOWED_HOSTS)',
  431: "Request headers too large (HEADERS_TOO_LARGE; Node's 16 KB limit, answered before routing)",
  422: 'Invalid body (VALIDATION_ERROR)',
  429: 'Too many requests (RATE_LIMIT_EXCEEDED; only while rate_limit_enabled is on)',
  500: 'Server or database error',
  502: 'Printer communication error',
  503: 'Starting up or shutting down',
  507: 'Local storage is full (STORAGE_FULL)',
};

function parameters(schema: z.ZodType | undefined, where: 'path' | 'query') {
  if (!(schema instanceof z.ZodObject)) return [];
  return Object.entries(schema.shape as Record<string, z.ZodType>).map(([name, field]) => {
    const { description, ...fieldSchema } = jsonSchema(field, 'input');
    return {
      name,
      in: where,
      required: where === 'path' || !field.safeParse(undefined).success,
      ...(description ? { description } : {}),
      schema: fieldSchema,
    };
  });
}

export interface OpenApiInfo {
  version: string;
  /** Extra paths that are not JSON routes (the WebSocket upgrade). */
  extraPaths?: Record<string, unknown>;
  /** Every operation may answer 429 (the main service with rate_limit_enabled). */
  rateLimited?: boolean;
  /** Host and Origin checks apply (the main service): 421 everywhere, 403 on state-changing operations. */
  browserGuarded?: boolean;
  /** Optional bearer tokens (the main service): 401/403 on every operation but the open ones ("get /health"). */
  bearerAuth?: { openRoutes: string[] };
}

/** The headers of a rate-limited answer (and of every answer while limits are on). */
const RATE_LIMIT_HEADERS = {
  'X-RateLimit-Limit': { description: 'Requests allowed in the current window (or at once)', schema: { type: 'integer' } },
  'X-RateLimit-Remaining': { description: 'Requests left in the current window', schema: { type: 'integer' } },
  'X-RateLimit-Reset': { description: 'Unix time (seconds) when the window starts again', schema: { type: 'integer' } },
  'Retry-After': { description: 'Seconds to wait before trying again', schema: { type: 'integer' } },
};

export function buildOpenApi(routes: AnyRoute[], basePath: string, info: OpenApiInfo) {
  const paths: Record<string, Record<string, unknown>> = {};
  const tags = new Set<string>();
  for (const route of routes) {
    tags.add(route.tag);
    // Any request can name a foreign Host (421), be too slow (408) or carry too many header bytes (431); a
    // state-changing one can come from a foreign page (403).
    const errorStatuses = new Set<number>([408, 421, 431, 500, 503, ...(route.errors ?? [])]);
    if (info.browserGuarded && route.method !== 'get') errorStatuses.add(403);
    if (!info.browserGuarded) errorStatuses.delete(421);
    const open = info.bearerAuth?.openRoutes.includes(`${route.method} ${route.path}`) ?? true;
    if (!open) [401, 403].forEach((code) => errorStatuses.add(code));
    if (route.params || route.query) errorStatuses.add(400);
    // A body can also fail before validation: undecodable (400), over the limit (413), an unknown charset or encoding (415).
    if (route.body || route.rawBody) [400, 413, 415, 422].forEach((code) => errorStatuses.add(code));
    if (route.params) errorStatuses.add(404);
    if (info.rateLimited) errorStatuses.add(429);
    const status = route.status ?? 200;
    const responses: Record<string, unknown> = {
      [status]: route.rawResponse
        ? { description: route.rawResponse.description, content: { [route.rawResponse.contentType]: { schema: { type: 'string', format: 'binary' } } } }
        : { description: 'Success', content: { 'application/json': { schema: jsonSchema(route.response, 'output') } } },
    };
    if (route.alsoStatus) {
      responses[route.alsoStatus.status] = { description: route.alsoStatus.description, content: { 'application/json': { schema: jsonSchema(route.response, 'output') } } };
    }
    for (const code of [...errorStatuses].sort()) {
      const error = { $ref: '#/components/schemas/Error' };
      // A status the route answers with its own body too (GET /health's 503 "unhealthy" beside "starting up"): either.
      const own = responses[code] as { description: string; content: { 'application/json': { schema: object } } } | undefined;
      responses[code] = {
        description: own ? `${own.description}; or ${ERROR_TEXT[code] ?? 'an error'}` : (ERROR_TEXT[code] ?? 'Error'),
        ...(code === 429 && info.rateLimited ? { headers: RATE_LIMIT_HEADERS } : {}),
        content: { 'application/json': { schema: own ? { anyOf: [own.content['application/json'].schema, error] } : error } },
      };
    }
    const fullPath = basePath + route.path;
    paths[fullPath] ??= {};
    paths[fullPath][route.method] = {
      tags: [route.tag],
      summary: route.summary,
      ...(route.description ? { description: route.description } : {}),
      operationId: `${route.method}${fullPath.replace(/\/api\/v1/, '').replace(/[{}]/g, '').replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ? c.toUpperCase() : ''))}`,
      ...(info.bearerAuth && open ? { security: [] } : {}),
      parameters: [...parameters(route.params, 'path'), ...parameters(route.query, 'query')],
      ...(route.body ? { requestBody: { required: true, content: { 'application/json': { schema: jsonSchema(route.body, 'input') } } } } : {}),
      ...(route.rawBody ? { requestBody: { required: true, content: { [route.rawBody.contentType]: { schema: route.rawBody.schema } } } } : {}),
      responses,
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Printfarm API',
      version: info.version,
      description:
        'Print-farm manager for Bambu Lab (`bambu_lab`), Prusa (`prusa_core`) and Klipper (`klipper`, through Moonraker) printers. ' +
        'Real-time updates: a plain WebSocket at `/ws` carrying JSON frames `{type, timestamp, data}` ' +
        '(`printer_status`, `job_update`, `job_auto_created`, `file_update`, `queue_update`, `printer_attention`, `notification`, `discovery_update`, `spool_update`, `spool_low`, `system_alert`); send ' +
        '`{"type":"subscribe","printer_ids":["..."]}` to narrow printer events. ' +
        // Open by default, but not always: with tokens on, a newcomer reading "no authentication" would be lost at the first 401.
        (info.bearerAuth
          ? 'Open by default (deploy on a trusted LAN); with access control on (`AUTH_TOKENS` or `printfarm token create`) every operation not marked open needs a bearer token: 401 `UNAUTHORIZED` without one, 403 `FORBIDDEN` for a role too low (viewer reads, operator also controls, admin also configures). '
          : 'No authentication: deploy on a trusted LAN. ') +
        'Web pages of other origins may not change anything (403 `ORIGIN_NOT_ALLOWED` unless listed in `ALLOWED_ORIGINS`), and host names ' +
        'other than IP addresses, localhost and this machine\'s names get 421 `HOST_NOT_ALLOWED` (unless listed in `ALLOWED_HOSTS`). ' +
        'Rate limits are off by default; with the setting `rate_limit_enabled` each client IP gets 1000 requests per hour, ' +
        '120 status requests (printer list and detail, download status) per minute, 50 file downloads and 10 `/ws` connections at once, ' +
        'announced in `X-RateLimit-Limit`, `X-RateLimit-Remaining` and `X-RateLimit-Reset` (Unix time) and refused with 429 `RATE_LIMIT_EXCEEDED`.',
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    servers: [{ url: '/', description: 'This service' }],
    // Open by design (spec section 5: trusted LAN); with AUTH_TOKENS or `printfarm token create` a bearer token is needed.
    security: info.bearerAuth ? [{}, { bearerAuth: [] }] : [],
    tags: [...tags, 'Real-time'].sort().map((name) => ({ name, description: TAG_TEXT[name] ?? name })),
    paths: { ...paths, ...(info.extraPaths ?? {}) },
    components: {
      schemas: { Error: jsonSchema(ErrorBody, 'output') },
      ...(info.bearerAuth
        ? {
            securitySchemes: {
              bearerAuth: {
                type: 'http',
                scheme: 'bearer',
                description: 'Only when access control is on (AUTH_TOKENS or `printfarm token create`): viewer reads, operator also controls, admin also configures.',
              },
            },
          }
        : {}),
    },
  };
}
