import { z } from 'zod';
import { PrinterAttention } from './attention';
import { cameraUrlProblem } from '../cameras/camera-url';
import { nullableTimestamp, queryBoolean, timestamp } from './common';

export const PRINTER_TYPES = ['bambu_lab', 'prusa_core', 'klipper'] as const;
export const PRINTER_STATUSES = ['configuring', 'online', 'idle', 'printing', 'paused', 'error', 'offline'] as const;
export const CONNECTION_STATUSES = ['testing', 'connected', 'disconnected', 'error'] as const;

export const PrinterType = z.enum(PRINTER_TYPES);
export const PrinterStatus = z.enum(PRINTER_STATUSES);
export const ConnectionStatus = z.enum(CONNECTION_STATUSES);

export const printerId = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, 'letters, digits, ".", "_" and "-" (at most 64, starting with a letter or digit)')
  .meta({ description: 'Identifier chosen by the client', example: 'x1c-01' });

const port = z.number().int().min(1).max(65535);
const authMethod = z
  .enum(['digest', 'api_key'])
  .meta({
    description:
      'prusa_core only: `digest` (default; user maker + access_code as password) or `api_key` (access_code sent as X-Api-Key, for older firmware). The service never falls back from Digest to X-Api-Key.',
  });
const portOverrides = {
  mqtt_port: port.optional().meta({ description: 'bambu_lab: MQTT over TLS port (default 8883)' }),
  ftps_port: port.optional().meta({ description: 'bambu_lab: implicit FTPS port (default 990)' }),
  http_port: port.optional().meta({ description: 'prusa_core: PrusaLink HTTP port (default 80); klipper: Moonraker port (default 7125)' }),
};

const cameraPort = port.meta({ description: 'bambu_lab: camera port (default 6000 for A1 / A1 mini / P1P / P1S, 322 (RTSPS) for X1 / X1C / X1E / H2D / H2S / P2S)' });
const cameraUrl = z
  .string()
  .trim()
  .max(2048)
  .refine((v) => v === '' || cameraUrlProblem(v) === null, { message: 'must be an http(s) MJPEG stream or snapshot URL, or an rtsp(s) URL' })
  .meta({
    description:
      'A camera that replaces the printer\'s own: http(s) MJPEG stream, http(s) snapshot URL, or rtsp(s) (needs ffmpeg). User and password in the URL are sent as Basic authentication and shown masked. Empty: none.',
    example: 'http://octopi.local/webcam/?action=stream',
  });

export const CameraInfo = z
  .object({
    available: z.boolean().meta({ description: 'The printer has a camera to show and it did not fail on its last try' }),
    source: z.enum(['bambu_tls', 'rtsp', 'prusalink', 'mjpeg', 'snapshot']).nullable().meta({ description: 'Where the picture comes from (null: no camera)' }),
    fps: z.number().meta({ description: 'Frames per second a stream gets at most (0 when unavailable)' }),
  })
  .meta({ description: 'GET /printers/{printer_id}/camera/snapshot and /camera/stream serve the picture' });

export const PrinterIdParams = z.object({ printer_id: z.string().min(1).max(128) });

export const PrinterListQuery = z.object({
  active: queryBoolean.optional(),
  type: PrinterType.optional(),
});

export const CreatePrinterBody = z.strictObject({
  id: printerId.optional().meta({ description: 'Identifier; derived from the name when omitted' }),
  name: z.string().trim().min(1).max(100),
  type: PrinterType,
  model: z.string().trim().max(100).optional(),
  ip_address: z.string().trim().min(1).max(253).meta({ description: 'IPv4/IPv6 address or host name' }),
  access_code: z.string().max(256).optional().meta({ description: 'Bambu LAN access code, PrusaLink password / API key, or the Moonraker API key (klipper, sent as X-Api-Key; leave out for a trusted client)' }),
  serial_number: z.string().trim().max(64).optional().meta({ description: 'Required for bambu_lab' }),
  is_active: z.boolean().default(true),
  power_watts: z.number().int().min(1).max(10000).optional().meta({ description: 'Average power draw in watts, for power costs (default: the default_printer_power_watts setting)' }),
  plate_auto_clear: z.boolean().optional().meta({ description: 'The printer clears its own plate (an ejection system): a print end does not make the plate need clearing (default false)' }),
  auth_method: authMethod.optional(),
  camera_port: cameraPort.optional(),
  camera_url: cameraUrl.optional(),
  ...portOverrides,
});

export const UpdatePrinterBody = z
  .strictObject({
    name: z.string().trim().min(1).max(100).optional(),
    model: z.string().trim().max(100).optional(),
    ip_address: z.string().trim().min(1).max(253).optional(),
    access_code: z.string().max(256).optional(),
    serial_number: z.string().trim().max(64).optional(),
    is_active: z.boolean().optional(),
    mqtt_port: port.nullable().optional().meta({ description: 'null returns to the default port' }),
    ftps_port: port.nullable().optional(),
    http_port: port.nullable().optional(),
    power_watts: z.number().int().min(1).max(10000).nullable().optional(),
    plate_auto_clear: z.boolean().optional(),
    auth_method: authMethod.nullable().optional().meta({ description: 'prusa_core only; null returns to Digest' }),
    camera_port: cameraPort.nullable().optional(),
    camera_url: cameraUrl.nullable().optional().meta({ description: 'null or empty removes it; the masked URL as shown changes nothing' }),
  })
  .refine((b) => Object.keys(b).length > 0, { message: 'give at least one field to change' });

const Temperatures = z.object({
  nozzle: z.number(),
  bed: z.number(),
  chamber: z.number().optional().meta({ description: 'bambu_lab only' }),
});

const CurrentJob = z.object({
  id: z.number().int(),
  name: z.string(),
  status: z.string(),
  progress: z.number(),
  estimated_remaining: z.number().int().nullable().meta({ description: 'Seconds' }),
});

export const PlateState = z.enum(['clear', 'needs_clearing']).meta({
  description: 'needs_clearing after every print end (unless plate_auto_clear) until POST /printers/{printer_id}/plate-cleared; the queue starts nothing on such a plate',
});

export const LoadedMaterial = z.object({
  slot: z.number().int().meta({ description: 'Bambu: global AMS tray number (ams_id*4 + tray), 254 the external spool; Prusa: 0' }),
  type: z.string().meta({ description: 'PLA, PETG...' }),
  color: z.string().nullable().meta({ description: '#RRGGBB' }),
  remaining_percent: z.number().nullable(),
  spool_id: z.number().int().nullable().meta({ description: 'The spool assigned to this slot (GET /spools/{id}; Spoolman\'s id in Spoolman mode), null when none' }),
  remaining_weight_g: z.number().nullable().meta({ description: 'Grams left on that spool, as Printfarm counts them' }),
});

export const Printer = z.object({
  id: z.string(),
  name: z.string(),
  type: PrinterType,
  model: z.string().nullable(),
  ip_address: z.string(),
  serial_number: z.string().nullable(),
  status: PrinterStatus,
  connection_status: ConnectionStatus,
  current_job: CurrentJob.nullable(),
  temperatures: Temperatures,
  is_active: z.boolean(),
  last_seen: nullableTimestamp,
  created_at: timestamp,
  nozzle_diameter: z.number().nullable().meta({ description: 'Millimetres, as the printer reports it' }),
  materials: z.array(LoadedMaterial).meta({ description: 'The filaments loaded now, as the printer reports them (empty when unknown)' }),
  plate_state: PlateState,
  plate_auto_clear: z.boolean(),
  attention: PrinterAttention,
  camera: CameraInfo,
});

export const PrinterDetail = Printer.extend({
  // Left out, not null, for a viewer: null says the printer has no access code.
  access_code: z.string().nullable().optional().meta({ description: 'The printer\'s credential; left out of the answer for a viewer (access control on)' }),
  firmware_version: z.string().nullable(),
  status_message: z.string().nullable().meta({ description: 'Why the printer is offline or in error, when known' }),
  current_job: CurrentJob.extend({
    layer_current: z.number().int().nullable(),
    layer_total: z.number().int().nullable(),
    started_at: nullableTimestamp,
  }).nullable(),
  temperatures: Temperatures.extend({ nozzle_target: z.number(), bed_target: z.number() }),
  statistics: z.object({
    total_jobs: z.number().int(),
    successful_jobs: z.number().int(),
    failed_jobs: z.number().int(),
    total_print_time: z.number().meta({ description: 'Seconds of finished prints' }),
    material_used_total: z.number().meta({ description: 'Grams' }),
  }),
  capabilities: z.object({
    has_camera: z.boolean(),
    has_ams: z.boolean(),
    supports_remote_control: z.boolean(),
  }),
  updated_at: timestamp,
  mqtt_port: z.number().int().nullable().meta({ description: 'Port override, null for the default' }),
  ftps_port: z.number().int().nullable(),
  http_port: z.number().int().nullable(),
  power_watts: z.number().int().nullable().meta({ description: 'Average power draw in watts (null: the default setting)' }),
  auth_method: z.enum(['digest', 'api_key']).nullable().meta({ description: 'prusa_core: how the printer authenticates (null: Digest); null for bambu_lab and klipper' }),
  camera_port: z.number().int().nullable().meta({ description: 'Camera port override, null for the default' }),
  camera_url: z.string().nullable().meta({ description: 'The camera URL that replaces the printer\'s own, user and password shown as ****' }),
});

export const PrinterList = z.object({
  printers: z.array(Printer),
  total_count: z.number().int().meta({ description: 'Printers of the whole farm, whatever `active` and `type` filter from the list' }),
  active_count: z.number().int().meta({ description: 'Active printers of the whole farm, whatever the filters' }),
});

export const PrinterCreated = z.object({
  id: z.string(),
  name: z.string(),
  type: PrinterType,
  status: PrinterStatus,
  connection_status: ConnectionStatus,
  message: z.string(),
  created_at: timestamp,
});

export const PrinterUpdated = z.object({ id: z.string(), message: z.string(), updated_at: timestamp });
export const PrinterDeleted = z.object({ id: z.string(), message: z.string(), deleted_at: timestamp });

export type CreatePrinterInput = z.output<typeof CreatePrinterBody>;
export type UpdatePrinterInput = z.output<typeof UpdatePrinterBody>;
export type PrinterView = z.output<typeof Printer>;
export type PrinterDetailView = z.output<typeof PrinterDetail>;

export const PrinterCommandResult = z.object({
  id: z.string(),
  action: z.enum(['pause', 'resume', 'stop']),
  success: z.boolean(),
  message: z.string(),
  requested_at: timestamp,
});

export const ConnectionTestResult = z.object({
  id: z.string(),
  success: z.boolean(),
  status: z.string(),
  connection_status: z.string(),
  message: z.string(),
  tested_at: timestamp,
});
