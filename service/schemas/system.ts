import { z } from 'zod';
import { timestamp } from './common';

export const Health = z.object({
  status: z.enum(['healthy', 'unhealthy']),
  timestamp,
  version: z.string(),
  database: z.enum(['connected', 'error']),
  active_printers: z.number().int(),
  uptime_seconds: z.number().int(),
  spoolman: z
    .object({
      status: z.enum(['ok', 'degraded']).meta({ description: 'degraded: Spoolman cannot be reached or usage waits to be sent (it is sent once Spoolman answers again)' }),
      pending_usage: z.number().int().meta({ description: 'Usage reports waiting in the outbox' }),
      last_error: z.string().nullable(),
      last_ok_at: z.string().nullable(),
    })
    .optional()
    .meta({ description: 'Only with spoolman_url set, and (with access control on) only for an admin' }),
  ffmpeg: z
    .object({
      available: z.boolean(),
      version: z.string().nullable(),
      message: z.string().meta({ description: 'What works, or what to install (apt-get install ffmpeg)' }),
    })
    .optional()
    .meta({ description: 'The system ffmpeg, which RTSPS cameras (Bambu X1, X1C, X1E, H2D, H2S, P2S) and rtsp(s) camera URLs need; without it they answer 501 CAMERA_UNSUPPORTED. Left out, with access control on, for all but an admin' }),
});

export const SystemInfo = z.object({
  system: z.object({ version: z.string(), timezone: z.string(), language: z.string(), business_mode: z.boolean() }),
  database: z.object({
    type: z.string().meta({ description: 'sqlite, or postgresql when DATABASE_URL is set' }),
    jobs_count: z.number().int(),
    files_count: z.number().int(),
    printers_count: z.number().int(),
  }),
  features: z.object({
    job_monitoring: z.boolean(),
    file_management: z.boolean(),
    business_analytics: z.boolean(),
    preview_system: z.boolean(),
  }),
});

export const UpdateCheck = z.object({
  current_version: z.string(),
  latest_version: z.string(),
  update_available: z.boolean(),
  release_url: z.string(),
  checked_at: timestamp.meta({ description: 'When the update source was last asked' }),
});

/** GET /api/v1: where a newcomer (or a client) finds its way from the API's address. */
export const ApiIndex = z.object({
  name: z.string(),
  version: z.string(),
  openapi: z.string().meta({ description: 'The OpenAPI 3.1 document of this API' }),
  docs: z.string().meta({ description: 'Swagger UI' }),
  redoc: z.string().meta({ description: 'ReDoc' }),
  health: z.string(),
  websocket: z.string().meta({ description: 'The real-time channel (a plain WebSocket)' }),
});
