/** What the routers and background work share: one per running service. */
import type { Logger } from 'pino';
import type { AttentionBook } from './attention/book';
import type { CameraHub } from './cameras/hub';
import type { Store } from './db';
import type { DiscoveryService } from './discovery/service';
import type { EventBus } from './events';
import type { FileCatalog } from './files/catalog';
import type { PreviewService } from './files/previews';
import type { IdeaService } from './ideas/service';
import type { JobService } from './jobs/service';
import type { JobTracker } from './monitoring/job-tracker';
import type { StatusCache } from './monitoring/status-cache';
import type { Fleet } from './printers/fleet';
import type { PrinterRegistry } from './printers/registry';
import type { Dispatcher } from './queue/dispatcher';
import type { QueueSchedule } from './queue/schedule-service';
import type { QueueService } from './queue/service';
import type { SettingsService } from './settings';
import type { UpdateChecker } from './system/update-check';
import type { UsageService } from './usage/service';

export interface ServiceContext {
  version: string;
  dataDir: string;
  startedAt: number;
  log: Logger;
  store: Store;
  bus: EventBus;
  settings: SettingsService;
  cache: StatusCache;
  fleet: Fleet;
  tracker: JobTracker;
  printers: PrinterRegistry;
  jobs: JobService;
  files: FileCatalog;
  previews: PreviewService;
  updates: UpdateChecker;
  /** Opt-in usage statistics (client side). */
  usage: UsageService;
  /** Ideas / bookmarks and the trending cache (`ideas.trending`). */
  ideas: IdeaService;
  /** The print queue (items and their API operations) and its dispatcher. */
  queue: QueueService;
  /** GET /queue/schedule: when each queued copy will print. */
  queueSchedule: QueueSchedule;
  dispatcher: Dispatcher;
  /** What printers need from a person (HMS, print_error, PrusaLink ATTENTION/ERROR), with since when. */
  attention: AttentionBook;
  /** Printers found on the LAN (SSDP announcements, PrusaLink probes). */
  discovery: DiscoveryService;
  /** One upstream connection per printer camera, snapshots and MJPEG streams. */
  cameras: CameraHub;
}
