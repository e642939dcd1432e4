/**
 * createAggregator(options) -> { url, port, server, close() }: the aggregation
 * service that receives the opt-in usage statistics of many installations.
 * A process of its own (`printfarm aggregator`) with its own database, its
 * own OpenAPI document (/openapi.json, /docs, /redoc) and health endpoints.
 * Submissions need a submit key (`X-API-Key`), dashboards, exports and reports
 * an admin key (see access.ts).
 */
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import express from 'express';
import pino, { type DestinationStream, type Logger } from 'pino';
import { z } from 'zod';
import { docsRouter } from '../http/docs';
import { requestLog } from '../http/request-log';
import { answerClientError, errorHandler, unknownRoute } from '../http/errors';
import { buildOpenApi } from '../http/openapi';
import { defineRoute, mountRoutes, type AnyRoute } from '../http/route';
import { ConfigError, VERSION } from '../config';
import { compileTrust, type TrustProxySetting } from '../util/proxy-trust';
import { redactUrl } from '../db/dialect';
import { ADMIN_PATHS, DEFAULT_RATE_LIMIT_PER_ADDRESS, DEFAULT_RATE_LIMIT_PER_KEY, keyCheck, SubmissionLimiter, SUBMIT_PATHS } from './access';
import { openAggregatorDatabase } from './db';
import { Mailer, type SmtpOptions } from './reports';
import { AggregatorRepository } from './repository';
import { aggregatorRoutes } from './routes';
import { AggregatorStats } from './stats';

export interface AggregatorOptions {
  port?: number;
  host?: string;
  dataDir?: string;
  /** X-API-Key values that may submit (and delete the installation they name): what installations carry. At least one. */
  submitKeys: string[];
  /** X-API-Key values that may also read dashboards, export and send reports. None: those routes are closed. */
  adminKeys?: string[];
  /** Accepted submissions per installation per hour (default 10). */
  rateLimitPerHour?: number;
  /** Submission requests per client address (IPv6: per /64) per hour (default 60). */
  rateLimitPerAddress?: number;
  /** Submission requests per submit key per hour (default 10000). */
  rateLimitPerKey?: number;
  /** The proxies in front (behind a TLS proxy: true for one, a hop count or their addresses), so that the per-address limit sees the client. */
  trustProxy?: TrustProxySetting;
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
  /** Time a client has for a whole request (default 30 s; the headers get a third of it, at most 10 s). */
  requestTimeoutMs?: number;
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
/**
 * A request of at most 64 kB needs seconds, not Node's default 5 minutes: a slow client (or thousands of
 * them, a byte every few seconds) would hold a connection each for that long.
 */
const REQUEST_TIMEOUT_MS = 30_000;
const under = (p: string, prefixes: string[]) => prefixes.some((prefix) => p === prefix || p.startsWith(`${prefix}/`));

/** Turns the main service's document builder output into the aggregator's: title, tags, API-key security. */
function aggregatorDocument(routes: AnyRoute[]) {
  const base = buildOpenApi(routes, '', { version: VERSION });
  const paths = base.paths as Record<string, Record<string, { security?: unknown; responses: Record<string, unknown> }>>;
  const error = { content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } };
  for (const [p, ops] of Object.entries(paths)) {
    const admin = under(p, ADMIN_PATHS);
    if (!admin && !under(p, SUBMIT_PATHS)) continue;
    for (const op of Object.values(ops)) {
      op.security = [{ ApiKeyAuth: [] }];
      op.responses['401'] = { description: 'Missing or invalid X-API-Key', ...error };
      if (admin) op.responses['403'] = { description: 'A submit key: this route needs an admin key', ...error };
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
        'Everything but the health endpoints and this document needs the header `X-API-Key`: a submit key (what installations carry) ' +
        'for `POST /submit` and `DELETE /installation/{id}`, an admin key for the statistics, the export and the reports (403 FORBIDDEN with a submit key). Errors use the body ' +
        '`{error: {code, message, details, timestamp, request_id}}`.',
    },
    servers: [{ url: '/', description: 'This aggregation service' }],
    security: [],
    tags: [...new Set(routes.map((r) => r.tag))].sort().map((name) => ({ name, description: tagText[name] ?? name })),
    components: { ...base.components, securitySchemes: { ApiKeyAuth: { type: 'apiKey', in: 'header', name: 'X-API-Key' } } },
  };
}

export async function createAggregator(options: AggregatorOptions): Promise<Aggregator> {
  const keys = { submit: options.submitKeys.map((k) => k.trim()).filter(Boolean), admin: (options.adminKeys ?? []).map((k) => k.trim()).filter(Boolean) };
  if (keys.submit.length === 0) throw new ConfigError('the aggregation service needs at least one submit key (--submit-key or AGGREGATOR_SUBMIT_KEY)');
  if (keys.admin.some((k) => keys.submit.includes(k))) throw new ConfigError('a key cannot be both a submit key and an admin key (installations carry the submit key)');
  const limits = { address: options.rateLimitPerAddress ?? DEFAULT_RATE_LIMIT_PER_ADDRESS, key: options.rateLimitPerKey ?? DEFAULT_RATE_LIMIT_PER_KEY };
  for (const [name, v] of Object.entries(limits)) {
    if (!Number.isInteger(v) || v < 1 || v > 10_000_000) throw new ConfigError(`the per-${name} rate limit must be a whole number from 1 to 10000000 per hour, got ${v}`);
  }
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
  // Compiled here, not handed to Express as is: Express's own `true` trusts every hop, so the client could name its address.
  if (options.trustProxy !== undefined) app.set('trust proxy', compileTrust(options.trustProxy));
  app.use(requestLog(log));
  // The key first: a body is not even parsed for a client without one (or, on /submit, over its limits).
  app.use(SUBMIT_PATHS, keyCheck(keys, 'submit'));
  app.use(ADMIN_PATHS, keyCheck(keys, 'admin'));
  // Deletions share the budget: each is a write transaction, and a submit key (public) could send them without end.
  const limiter = new SubmissionLimiter(limits.address, limits.key, now).middleware();
  app.post('/submit', limiter);
  app.delete('/installation/:id', limiter);
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

  const requestTimeout = options.requestTimeoutMs ?? REQUEST_TIMEOUT_MS;
  const timeouts = {
    requestTimeout,
    headersTimeout: Math.min(10_000, Math.ceil(requestTimeout / 3)),
    // How often Node looks for connections past those times (default 30 s, which would stretch them).
    connectionsCheckingInterval: Math.min(1000, Math.ceil(requestTimeout / 4)),
  };
  const server = options.tls
    ? https.createServer({ key: options.tls.key, cert: options.tls.cert, handshakeTimeout: Math.min(10_000, requestTimeout), ...timeouts }, app)
    : http.createServer(timeouts, app);
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
  log.info({ url, data_dir: dataDir, database: options.databaseUrl ? redactUrl(options.databaseUrl) : 'sqlite', rate_limit_per_hour: rateLimitPerHour, rate_limit_per_address: limits.address, rate_limit_per_key: limits.key, submit_keys: keys.submit.length, admin_keys: keys.admin.length, email: mailer.configured }, 'printfarm aggregator ready');
  if (keys.admin.length === 0) log.warn('no admin key (--admin-key or AGGREGATOR_ADMIN_KEY): statistics, export and reports answer 403 to every key');

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
