/**
 * createAggregator(options) -> { url, port, server, close() }: the aggregation
 * service that receives the opt-in usage statistics of many installations.
 * A process of its own (`printfarm aggregator`) with its own database, its
 * own OpenAPI document (/openapi.json, /docs, /redoc) and health endpoints.
 * Submissions and dashboards need an `X-API-Key` from the configured keys.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import express, { type RequestHandler } from 'express';
import pino, { type DestinationStream, type Logger } from 'pino';
import { z } from 'zod';
import { docsRouter } from '../http/docs';
import { requestLog } from '../http/request-log';
import { answerClientError, ApiError, errorHandler, sendError, unknownRoute } from '../http/errors';
import { buildOpenApi } from '../http/openapi';
import { defineRoute, mountRoutes, type AnyRoute } from '../http/route';
import { ConfigError, VERSION } from '../config';
import { redactUrl } from '../db/dialect';
import { openAggregatorDatabase } from './db';
import { Mailer, type SmtpOptions } from './reports';
import { AggregatorRepository } from './repository';
import { aggregatorRoutes } from './routes';
import { AggregatorStats } from './stats';

export interface AggregatorOptions {
  port?: number;
  host?: string;
  dataDir?: string;
  /** Accepted X-API-Key values (at least one). */
  apiKeys: string[];
  /** Accepted submissions per installation per hour (default 10). */
  rateLimitPerHour?: number;
  smtp?: SmtpOptions;
  /** Serve HTTPS with this key and certificate (PEM); plain HTTP otherwise (behind a TLS proxy). */
  tls?: { key: string | Buffer; cert: string | Buffer };
  logLevel?: string;
  logStream?: DestinationStream;
  /** postgres://... : the database several instances share (default: SQLite, aggregator.db in dataDir). */
  databaseUrl?: string;
  /** Connections of the PostgreSQL pool (default 10). */
  poolMax?: number;
  /** The clock (ms): tests place submissions in time. */
  now?: () => number;
}

export interface Aggregator {
  url: string;
  port: number;
  server: http.Server | https.Server;
  repo: AggregatorRepository;
  close(): Promise<void>;
}

export const DEFAULT_RATE_LIMIT_PER_HOUR = 10;
const BODY_LIMIT = 64 * 1024;
/** Paths that need X-API-Key: submissions, deletion, dashboards, reports. */
const PROTECTED = ['/submit', '/installation', '/stats', '/reports'];

const digest = (key: string) => createHash('sha256').update(key).digest();

/** Compares in constant time (over digests, so that the length of a key does not show either). */
function apiKeyCheck(keys: string[]): RequestHandler {
  const accepted = keys.map(digest);
  return (req, res, next) => {
    const given = req.get('x-api-key');
    if (!given) return sendError(res, new ApiError(401, 'UNAUTHORIZED', 'X-API-Key header required', { header: 'X-API-Key' }));
    const d = digest(given);
    if (!accepted.some((k) => timingSafeEqual(k, d))) return sendError(res, new ApiError(401, 'UNAUTHORIZED', 'Invalid API key', { header: 'X-API-Key' }));
    next();
  };
}

/** Turns the main service's document builder output into the aggregator's: title, tags, API-key security. */
function aggregatorDocument(routes: AnyRoute[]) {
  const base = buildOpenApi(routes, '', { version: VERSION });
  const paths = base.paths as Record<string, Record<string, { security?: unknown; responses: Record<string, unknown> }>>;
  for (const [p, ops] of Object.entries(paths)) {
    if (!PROTECTED.some((prefix) => p === prefix || p.startsWith(`${prefix}/`))) continue;
    for (const op of Object.values(ops)) {
      op.security = [{ ApiKeyAuth: [] }];
      op.responses['401'] = { description: 'Missing or invalid X-API-Key', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } };
    }
  }
  const tagText: Record<string, string> = {
    Health: 'Liveness and readiness',
    Submissions: 'Receiving and deleting usage statistics',
    Statistics: 'Dashboard views over the installations',
    Reports: 'Mail reports over SMTP',
    System: 'This OpenAPI document',
  };
  return {
    ...base,
    info: {
      ...base.info,
      title: 'Printfarm aggregation service',
      description:
        'Receives the opt-in, anonymous usage statistics of Printfarm installations and serves dashboards and mail reports. ' +
        'Everything but the health endpoints and this document needs the header `X-API-Key`. Errors use the body ' +
        '`{error: {code, message, details, timestamp, request_id}}`.',
    },
    servers: [{ url: '/', description: 'This aggregation service' }],
    security: [],
    tags: [...new Set(routes.map((r) => r.tag))].sort().map((name) => ({ name, description: tagText[name] ?? name })),
    components: { ...base.components, securitySchemes: { ApiKeyAuth: { type: 'apiKey', in: 'header', name: 'X-API-Key' } } },
  };
}

export async function createAggregator(options: AggregatorOptions): Promise<Aggregator> {
  const apiKeys = options.apiKeys.map((k) => k.trim()).filter(Boolean);
  if (apiKeys.length === 0) throw new ConfigError('the aggregation service needs at least one API key (--api-key or AGGREGATOR_API_KEY)');
  const rateLimitPerHour = options.rateLimitPerHour ?? DEFAULT_RATE_LIMIT_PER_HOUR;
  if (!Number.isInteger(rateLimitPerHour) || rateLimitPerHour < 1 || rateLimitPerHour > 100_000) {
    throw new ConfigError(`the rate limit must be a whole number from 1 to 100000 per hour, got ${rateLimitPerHour}`);
  }
  const log: Logger = pino({ level: options.logLevel ?? 'info', base: { service: 'printfarm-aggregator' } }, options.logStream ?? pino.destination(1));
  const dataDir = path.resolve(options.dataDir ?? './aggregator-data');
  const connection = await openAggregatorDatabase(dataDir, { url: options.databaseUrl, poolMax: options.poolMax });
  const now = options.now ?? Date.now;
  const repo = new AggregatorRepository(connection.db);
  const stats = new AggregatorStats(repo, now);
  const mailer = new Mailer(options.smtp, log);
  const startedAt = Date.now();

  const routes = aggregatorRoutes({
    repo,
    stats,
    mailer,
    version: VERSION,
    startedAt,
    rateLimitPerHour,
    now,
    dbOk: () => connection.ping(),
  });
  let document: object | undefined;
  routes.push(
    defineRoute({
      method: 'get',
      path: '/openapi.json',
      tag: 'System',
      summary: 'This OpenAPI 3.1 document',
      response: z.record(z.string(), z.unknown()),
      handler: () => document,
    }),
  );
  document = aggregatorDocument(routes);

  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use(requestLog(log));
  // The key first: a body is not even parsed for a client without one.
  app.use(PROTECTED, apiKeyCheck(apiKeys));
  app.use(express.json({ limit: BODY_LIMIT }));
  const router = express.Router();
  mountRoutes(router, routes);
  app.use(router);
  // The shared ReDoc page loads its document from api/v1/openapi.json, relative to /redoc.
  app.get('/api/v1/openapi.json', (_req, res) => {
    res.json(document);
  });
  app.use(docsRouter(document));
  app.use(unknownRoute);
  app.use(errorHandler(log));

  const server = options.tls ? https.createServer({ key: options.tls.key, cert: options.tls.cert }, app) : http.createServer(app);
  server.on('clientError', answerClientError);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? 8100, options.host ?? '0.0.0.0', () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (err) {
    await connection.close();
    throw err;
  }
  const { port } = server.address() as AddressInfo;
  const host = options.host ?? '0.0.0.0';
  const shownHost = ['0.0.0.0', '::'].includes(host) ? 'localhost' : host.includes(':') ? `[${host}]` : host;
  const url = `${options.tls ? 'https' : 'http'}://${shownHost}:${port}`;
  log.info({ url, data_dir: dataDir, database: options.databaseUrl ? redactUrl(options.databaseUrl) : 'sqlite', rate_limit_per_hour: rateLimitPerHour, api_keys: apiKeys.length, email: mailer.configured }, 'printfarm aggregator ready');

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      const drained = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const cut = setTimeout(() => server.closeAllConnections(), 5000);
      await drained;
      clearTimeout(cut);
      mailer.close();
      await connection.close();
      log.info('printfarm aggregator stopped');
      log.flush?.();
    })());

  return { url, port, server, repo, close };
}
