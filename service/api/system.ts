import { z } from 'zod';
import type { ServiceContext } from '../context';
import { ffmpegHealth } from '../cameras/ffmpeg';
import { ApiIndex, Health, SystemInfo, UpdateCheck } from '../schemas/system';
import { defineRoute, Reply, type AnyRoute } from '../http/route';

export function systemRoutes(ctx: ServiceContext): AnyRoute[] {
  return [
    defineRoute({
      method: 'get',
      // The API's own address, which the startup banner prints: it says where to go from there.
      path: '',
      tag: 'System',
      summary: 'Where the documentation, health check and real-time channel are',
      response: ApiIndex,
      handler: () => ({ name: 'Printfarm API', version: ctx.version, openapi: '/api/v1/openapi.json', docs: '/docs', redoc: '/redoc', health: '/api/v1/health', websocket: '/ws' }),
    }),
    defineRoute({
      method: 'get',
      path: '/health',
      tag: 'System',
      summary: 'Service health',
      description:
        'Answers 200 while the database answers and its file is still the one the service opened; 503 (same body, status "unhealthy", database "error") when it does not, e.g. when printfarm.db was deleted or replaced while the service runs (writes would be lost: restart the service). Open to all; with access control on, only an admin\'s token (Authorization: Bearer) also gets the details `spoolman` and `ffmpeg` (Spoolman\'s address and answers, file paths): everyone else gets the fields the interface spec names. `ffmpeg` says whether RTSPS cameras can be decoded (install Debian\'s package ffmpeg where it is missing).',
      response: Health,
      alsoStatus: { status: 503, description: 'The database does not answer, or its file was replaced (status "unhealthy")' },
      async handler({ res }) {
        const dbOk = await ctx.store.ping();
        const active = dbOk ? (await ctx.store.printers.counts()).active : 0;
        const body = {
          status: dbOk ? 'healthy' : 'unhealthy',
          timestamp: new Date().toISOString(),
          version: ctx.version,
          database: dbOk ? 'connected' : 'error',
          active_printers: active,
          uptime_seconds: Math.floor((Date.now() - ctx.startedAt) / 1000),
          // Spoolman's error names its address and quotes its answer; ffmpeg's names paths: an admin's to read (routeAuth).
          ...(res.locals.callerIsAdmin === true ? details(ctx) : {}),
        };
        return dbOk ? body : new Reply(503, body);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/system/info',
      tag: 'System',
      summary: 'Version, settings summary, database counts and features',
      response: SystemInfo,
      async handler() {
        const [jobs, files, printers] = await Promise.all([ctx.store.jobs.count(), ctx.store.files.count(), ctx.store.printers.counts()]);
        const s = ctx.settings;
        return {
          system: { version: ctx.version, timezone: s.get('timezone'), language: s.get('language'), business_mode: s.get('business_mode') },
          database: { type: ctx.store.connection.dialect === 'postgres' ? 'postgresql' : 'sqlite', jobs_count: jobs, files_count: files, printers_count: printers.total },
          features: {
            job_monitoring: s.get('job_creation_auto_create'),
            file_management: true,
            business_analytics: s.get('business_mode'),
            preview_system: true,
          },
        };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/update-check',
      tag: 'System',
      summary: 'Is a newer release available?',
      description: 'Asks the configured update source (UPDATE_CHECK_URL) with a short timeout; when it cannot be reached, latest_version equals current_version.',
      response: UpdateCheck,
      handler: () => ctx.updates.check(),
    }),
  ];
}

/** What GET /health tells an admin beyond the spec's fields. */
function details(ctx: ServiceContext) {
  return {
    ...(ctx.filament.spools.mode === 'spoolman' ? { spoolman: ctx.filament.spools.spoolman.health() } : {}),
    ffmpeg: ffmpegHealth(),
  };
}

export const OpenApiDocument = z.record(z.string(), z.unknown()).meta({ description: 'This OpenAPI 3.1 document' });
