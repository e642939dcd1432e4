/**
 * createService(options) -> { url, server, close() }: the one entry that the
 * CLI, the Node-RED config node and the tests use to run the service.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import pino, { type DestinationStream, type Logger } from 'pino';
import { createApi, type Phase } from './api';
import { CameraHub } from './cameras/hub';
import { BrowserGuard, parseList } from './api/browser-guard';
import { answerClientError } from './http/errors';
import { RateLimiter, type RateLimits } from './api/rate-limit';
import { admitWebSocket } from './api/ws-admission';
import { TOKENS_FILE, TokenRegistry } from './auth/tokens';
import { ConfigError, runtimeDefaults, startupOptions, VERSION, type StartupOptions } from './config';
import type { ServiceContext } from './context';
import { AttentionBook } from './attention/book';
import { DiscoveryService, type DiscoveryOptions } from './discovery/service';
import { Notifier } from './notify/notifier';
import { WebhookSender, type WebhookOptions } from './notify/webhooks';
import { openStore, type Store, type StoreOptions } from './db';
import { EventBus } from './events';
import { Filament } from './filament';
import type { SpoolmanOptions } from './filament/spoolman/inventory';
import { JobService } from './jobs/service';
import { FileCatalog } from './files/catalog';
import { DownloadManager, type DownloadOptions } from './files/downloads';
import { PreviewService } from './files/previews';
import { FileStorage } from './files/storage';
import { IdeaService, type IdeaServiceOptions } from './ideas/service';
import { JobTracker } from './monitoring/job-tracker';
import type { NewJobGateOptions } from './monitoring/new-job-gate';
import { StatusCache } from './monitoring/status-cache';
import { createDriver } from './printers/drivers';
import { Fleet, type DriverFactory, type FleetTimings } from './printers/fleet';
import { PrinterRegistry } from './printers/registry';
import { Dispatcher } from './queue/dispatcher';
import { filamentGate, wakeOnSpoolChanges } from './queue/filament-gate';
import { FactsCache } from './queue/facts-cache';
import { PlateTracker } from './queue/plate';
import { QueueSchedule } from './queue/schedule-service';
import { QueueService } from './queue/service';
import { RealtimeHub } from './realtime';
import { SettingsService } from './settings';
import { HistoryRetention } from './statistics/retention';
import { ConnectionCap } from './system/connection-cap';
import { lockDataDir, type DataDirLock } from './system/data-lock';
import { ServiceMetrics } from './system/metrics';
import { UpdateChecker } from './system/update-check';
import { UsageService, type UsageOptions } from './usage/service';
import { compileTrust } from './util/proxy-trust';

export interface ServiceOptions {
  /** A number, or the text of a flag (validated like PORT). */
  port?: number | string;
  host?: string;
  dataDir?: string;
  /** Environment to read settings from (default process.env). */
  env?: NodeJS.ProcessEnv;
  logLevel?: StartupOptions['log_level'];
  /** Where log lines go (default stdout). */
  logStream?: DestinationStream;
  updateCheckUrl?: string;
  /** Seconds. */
  updateCheckTimeout?: number;
  /** postgres://... (default DATABASE_URL; empty: SQLite in the data dir). */
  databaseUrl?: string;
  /** WebSocket heartbeat period in ms (default 30 s). */
  heartbeatMs?: number;
  /** How long a /ws client's backlog may stay over its limit, in ms (default 5 s; tests shorten it). */
  wsSlowClientMs?: number;
  /** Printer connection timings (tests shorten them). */
  fleet?: FleetTimings;
  /** Makes printer drivers (default: the real Bambu Lab and PrusaLink drivers). */
  driverFactory?: DriverFactory;
  /** Download retries and frame pacing (tests shorten them). */
  downloads?: DownloadOptions;
  /** Usage statistics: extra trusted CA for the aggregation service, deployment mode. */
  usageStats?: UsageOptions;
  /** Ideas: the page fetcher (injectable fetch, timeout, size cap), metadata retry and trending cache options. */
  ideas?: IdeaServiceOptions;
  /** New-job limit per printer (default one per minute; tests shorten it). */
  jobTracking?: NewJobGateOptions;
  /** The figures applied while `rate_limit_enabled` is on (default: the spec's v1.0 limits; tests shorten the windows). */
  rateLimits?: RateLimits;
  /** Added to ALLOWED_ORIGINS (the Node-RED config node lists Node-RED's own port, for dashboard pages). */
  allowedOrigins?: string[];
  /** Added to ALLOWED_HOSTS. */
  allowedHosts?: string[];
  /** Spoolman poll and retry periods (tests shorten them). */
  spoolman?: SpoolmanOptions;
  /** Notification webhook timings (tests shorten them). */
  webhooks?: WebhookOptions;
  /** Printer discovery: SSDP port (default DISCOVERY_SSDP_PORT; 0 off, "ephemeral" a free port) and where M-SEARCH goes. */
  discovery?: Partial<DiscoveryOptions>;
  /** How long the queue leaves a printer that refused a start as not ready (default 60 s; tests shorten it). */
  notReadyRetryMs?: number;
  /** Most tasks waiting in the job listeners' work queues (util/work-queue.ts; tests make them small to overflow them). */
  eventBacklogs?: { notifications?: number; filamentUsage?: number; ideas?: number };
}

export interface Service {
  url: string;
  port: number;
  server: http.Server;
  context: ServiceContext;
  close(): Promise<void>;
}

async function openStorage(dataDir: string, env: NodeJS.ProcessEnv, db: StoreOptions): Promise<{ store: Store; settings: SettingsService }> {
  const store = await openStore(dataDir, db);
  try {
    return { store, settings: await SettingsService.load(store.settings, env) };
  } catch (err) {
    await store.close();
    throw err;
  }
}

/** How long in-flight requests may take to finish on shutdown before their connections are cut. */
const DRAIN_MS = 10_000;

export async function createService(options: ServiceOptions = {}): Promise<Service> {
  const str = (v: number | string | undefined) => (v === undefined ? undefined : String(v));
  const config = startupOptions(options.env ?? process.env, {
    port: str(options.port),
    host: options.host,
    data_dir: options.dataDir,
    log_level: options.logLevel,
    update_check_url: options.updateCheckUrl,
    update_check_timeout: str(options.updateCheckTimeout),
    database_url: options.databaseUrl,
  });
  const env = options.env ?? process.env;
  // Fail on a bad environment variable before anything is opened.
  runtimeDefaults(env);
  const trust = compileTrust(config.trust_proxy);
  const log: Logger = pino({ level: config.log_level, base: { service: 'printfarm' } }, options.logStream ?? pino.destination(1));
  const dataDir = path.resolve(config.data_dir);

  let phase: Phase = 'starting';
  // Built before the database opens, so they can see the whole life of the service; they read the rest once it exists.
  let context: ServiceContext | undefined;
  let realtime: RealtimeHub | undefined;
  const bus = new EventBus((err, type) => log.error({ err, type }, 'event listener failed'));
  const metrics = new ServiceMetrics(
    {
      version: VERSION,
      databaseBytes: async () => (context ? context.store.sizeBytes() : 0),
      printers: async () => (context ? context.store.printers.list() : []),
      jobsByStatus: async (statuses) => (context ? context.store.jobs.countByStatus(statuses) : Object.fromEntries(statuses.map((s) => [s, 0]))),
      wsClients: () => realtime?.clientCount ?? 0,
      cameras: () => ({ streams: context?.cameras.viewerCount ?? 0, upstreams: context?.cameras.upstreamCount ?? 0 }),
    },
    bus,
  );
  const limiter = new RateLimiter({
    enabled: () => context?.settings.get('rate_limit_enabled') ?? false,
    limits: options.rateLimits,
    onRefused: (limit) => metrics.refused(limit),
  });
  const guard = new BrowserGuard({
    allowedOrigins: [...parseList(config.allowed_origins), ...(options.allowedOrigins ?? [])],
    allowedHosts: [...parseList(config.allowed_hosts), ...(options.allowedHosts ?? [])],
    trustProxy: trust,
  });
  let tokens: TokenRegistry;
  try {
    tokens = new TokenRegistry(dataDir, config.auth_tokens);
  } catch (err) {
    metrics.close();
    limiter.close();
    throw new ConfigError(`access control: ${(err as Error).message} (AUTH_TOKENS or ${path.join(dataDir, TOKENS_FILE)})`);
  }
  const api = createApi(log, () => phase, { metrics, limiter, trustProxy: trust, guard, tokens });
  const server = http.createServer(api.app);
  server.on('clientError', answerClientError);
  // One service per data directory, checked before anything listens or opens (DataDirLockedError otherwise).
  let lock: DataDirLock;
  try {
    lock = lockDataDir(dataDir);
  } catch (err) {
    metrics.close();
    limiter.close();
    throw err;
  }
  // Listen first: a request that arrives while the database opens gets a 503, not a refused connection.
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => {
      server.off('error', reject);
      resolve();
    });
  }).catch((err) => {
    metrics.close();
    limiter.close();
    lock.release();
    throw err;
  });

  const { store, settings } = await openStorage(dataDir, env, { databaseUrl: config.database_url || undefined, poolMax: config.database_pool_max }).catch(async (err) => {
    metrics.close();
    limiter.close();
    await new Promise((resolve) => server.close(resolve));
    lock.release();
    throw err;
  });
  const cache = new StatusCache();
  const fleet = new Fleet(store, cache, bus, settings, log, options.driverFactory ?? createDriver, options.fleet);
  const tracker = new JobTracker(store, settings, bus, log, options.jobTracking);
  const filament = new Filament({ store, settings, bus, log, stateOf: (id) => fleet.stateOf(id), spoolman: options.spoolman, usageBacklog: options.eventBacklogs?.filamentUsage });
  fleet.onLinkUp((printerId) => tracker.linkUp(printerId));
  const attention = new AttentionBook(bus, () => settings.get('language'));
  // Jobs, filament and attention never change with a temperature alone: they are spared the reports that moved only
  // that, except a printer's while an update of it failed and waits for its retry (an idle printer sends nothing else).
  fleet.onReport(
    (printerId, state) => {
      tracker.report(printerId, state);
      filament.onReport(printerId, state);
      attention.report(printerId, state.attention);
    },
    { telemetry: (printerId) => tracker.awaitsRetry(printerId) || filament.awaitsRetry(printerId) },
  );
  fleet.onReport(() => metrics.report());
  // A removed or deactivated printer needs nothing from anyone.
  bus.on('printer_status', (e) => (e.change === 'deleted' || (e.change === 'updated' && e.is_active === false)) && attention.forget(e.printer_id), { telemetry: false });
  const webhooks = new WebhookSender(() => settings.get('notify_webhooks'), (result) => metrics.webhook(result), log, options.webhooks);
  const discovery = new DiscoveryService(store, bus, settings, log, { ssdpPort: options.discovery?.ssdpPort ?? config.discovery_ssdp_port, searchTargets: options.discovery?.searchTargets });
  const notifier = new Notifier({ bus, store, settings, log, attentionOf: (id) => attention.of(id), attentionTexts: (id, e) => attention.causeOf(id, e.source, e.code)?.text ?? {}, deliver: (n) => webhooks.send(n), maxWaiting: options.eventBacklogs?.notifications });
  const usage = await UsageService.create({ store, bus, settings, log, version: VERSION }, options.usageStats).catch(async (err) => {
    metrics.close();
    limiter.close();
    await store.close();
    await new Promise((resolve) => server.close(resolve));
    lock.release();
    throw err;
  });
  const storage = new FileStorage(dataDir);
  const files = new FileCatalog(store, fleet, storage, new DownloadManager(store, fleet, storage, bus, log, { maxBytes: config.max_download_size_mb * 1024 * 1024, ...options.downloads }), log);
  const ideas = new IdeaService(store, bus, log, { ...options.ideas, jobBacklog: options.eventBacklogs?.ideas ?? options.ideas?.jobBacklog });
  const retention = new HistoryRetention(store, settings, log);
  const facts = new FactsCache();
  const plates = new PlateTracker(store, fleet, bus, log);
  let queue: QueueService | undefined;
  const gate = filamentGate({ grams: filament.grams, spoolAt: (id, slot) => filament.spools.spoolAt(id, slot), settings });
  const dispatcher = new Dispatcher({ store, settings, fleet, log, facts, plates, bus, filamentGate: gate, publish: (id, known) => queue!.publish(id, known), notReadyRetryMs: options.notReadyRetryMs });
  const stopSpoolWake = wakeOnSpoolChanges(bus, (why) => dispatcher.wake(why));
  queue = new QueueService(store, bus, settings, facts, dispatcher);
  tracker.linkDispatches(dispatcher);
  const cameras = new CameraHub({ store, settings, bus, cache, log, hasCamera: (id) => fleet.stateOf(id)?.capabilities?.has_camera, reportedCameraUrl: (id) => fleet.stateOf(id)?.camera_url, statusOf: (id) => fleet.statusEventOf(id) });
  context = {
    version: VERSION,
    dataDir,
    startedAt: Date.now(),
    log,
    store,
    bus,
    settings,
    cache,
    fleet,
    tracker,
    printers: new PrinterRegistry(store, cache, bus, fleet, cameras, attention, (id, materials) => filament.materialsOf(id, materials)),
    attention,
    jobs: new JobService(store, settings, bus),
    files,
    previews: new PreviewService(store, files, settings),
    updates: new UpdateChecker(VERSION, config.update_check_url, config.update_check_timeout * 1000, log),
    usage,
    ideas,
    queue,
    queueSchedule: new QueueSchedule(store, fleet, settings, facts, dispatcher),
    dispatcher,
    discovery,
    cameras,
    filament,
  };
  api.mount(context);
  const wsCap = new ConnectionCap({
    maxTotal: config.ws_max_clients,
    maxPerAddress: config.ws_max_clients_per_ip,
    onRefusals: (summary) => log.warn(summary, '/ws connections refused: the connection cap is reached (WS_MAX_CLIENTS, WS_MAX_CLIENTS_PER_IP)'),
  });
  const hub = new RealtimeHub(bus, log, { heartbeatMs: options.heartbeatMs, slowClientMs: options.wsSlowClientMs, admit: (req) => admitWebSocket({ guard, tokens, cap: wsCap, limiter, trust }, req) });
  realtime = hub;
  hub.attach(server);
  // A token removed from tokens.json (or given a role /ws refuses) ends the connections it opened.
  const stopRecheck = tokens.onChange(() => hub.recheck());
  phase = 'ready';
  usage.start();
  files.start();
  ideas.start();
  retention.start();
  // Before the printers connect: plans left open by a stop are settled, slots are known to the first report.
  await filament.start();
  // Before the printers connect: open dispatches are watched from their first report on.
  await dispatcher.start();
  await fleet.start();
  await discovery.start();

  const { port } = server.address() as AddressInfo;
  const shownHost = ['0.0.0.0', '::'].includes(config.host) ? 'localhost' : config.host.includes(':') ? `[${config.host}]` : config.host;
  const url = `http://${shownHost}:${port}`;
  log.info({ url, data_dir: dataDir, version: VERSION, access_control: tokens.enabled }, 'printfarm service ready');
  const exposed = exposureWarning(config.host, port, tokens.enabled);
  if (exposed) log.warn({ host: config.host, port }, exposed);

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      phase = 'stopping';
      context.updates.close();
      // Camera streams never end on their own: they end first, so that the server can drain.
      await cameras.close();
      await notifier.close();
      await webhooks.close();
      await discovery.close();
      await ideas.close();
      await retention.close();
      await usage.close();
      stopRecheck();
      await realtime!.close();
      await files.downloads.close();
      dispatcher.halt();
      // Drivers close before the catalog waits for its refreshes: a listing stuck on a printer fails at once.
      await fleet.close();
      await dispatcher.close();
      await plates.idle();
      plates.close();
      await files.close();
      await tracker.idle();
      tracker.close();
      stopSpoolWake();
      await filament.close();
      // In-flight requests finish; idle keep-alive connections close now, busy ones after their response.
      const drained = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const cut = setTimeout(() => server.closeAllConnections(), DRAIN_MS);
      await drained;
      clearTimeout(cut);
      await store.close();
      metrics.close();
      limiter.close();
      lock.release();
      log.info('printfarm service stopped');
      log.flush?.();
    })());

  return { url, port, server, context, close };
}

/** The start-up warning when the API is open beyond this machine (null: nothing to say). */
export function exposureWarning(host: string, port: number, accessControl: boolean): string | null {
  const loopback = host === 'localhost' || host === '::1' || /^127\./.test(host);
  if (accessControl || loopback) return null;
  const where = host === '0.0.0.0' || host === '::' ? 'any address of this machine' : host;
  return `the API is open: anyone who can reach port ${port} on ${where} can control the printers and read their access codes; set HOST=127.0.0.1, or AUTH_TOKENS / printfarm token create (see docs/security.md)`;
}
