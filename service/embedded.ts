/**
 * The service as Node-RED's printfarm-server config node runs it: createService
 * on a port and data dir it names, optionally with the demo farm (simulated
 * printers on 127.0.0.1, registered with the service, some of them printing).
 */
import { createService, type Service, type ServiceOptions } from './app';
import type { CreatePrinterInput } from './schemas/printers';
import { startFarm, type FarmOptions, type SimulatedFarm } from './simulators';
import { bambu3mf } from './simulators/seed-files';
import { Readable } from 'node:stream';

const DEMO_QUEUE_NAME = 'Demo bracket';
/** How long a demo printer rests after it was last seen printing: over the job tracker's one new job a minute. */
const DEMO_REST_MS = 65_000;
/** A simulator that is free: PrusaLink/Bambu words, and Klipper's print_stats words (standby, complete, cancelled). */
const FREE = /^(idle|finished|stopped|failed|ready|standby|complete|cancelled)$/i;
/** The printer the demo's queue is sliced for: the farm's second Bambu printer. */
const demoQueuePrinter = (farm: SimulatedFarm) => farm.printers.filter((p) => p.printer.type === 'bambu_lab')[1];

/**
 * The demo's queue: two copies of a file sliced for the farm's idle Bambu printer. The first starts there at
 * once, the second waits for it to finish and for its plate to be cleared (POST /printers/{id}/plate-cleared).
 * Queued once per data dir (not again while the first demo item is open).
 */
async function queueDemoCopies(service: Service, farm: SimulatedFarm): Promise<void> {
  const { queue, files, store } = service.context;
  const open = await store.queue.itemsIn(['queued', 'printing', 'held']);
  if (open.some((i) => i.name === DEMO_QUEUE_NAME)) return;
  const target = demoQueuePrinter(farm);
  if (!target) return;
  const model = typeof target.printer.model === 'string' ? target.printer.model : 'P1S';
  const fileId = await files.storeUpload(`Bracket_${model.replace(/\s+/g, '_')}.gcode.3mf`, Readable.from([bambu3mf({ model })]));
  await queue.create({ file_id: fileId, name: DEMO_QUEUE_NAME, copies: 2, plate: 1, priority: 0 });
}

export interface EmbeddedOptions extends ServiceOptions {
  /** Start simulated printers too (true: 3 Bambu Lab + 2 PrusaLink at speed 20). */
  demo?: boolean | FarmOptions;
  /** Demo: how often an idle simulated printer may start the next print, in ms (20 s; 0: never). */
  demoRestartMs?: number;
  /** Demo: how long a printer rests after it was last seen printing (DEMO_REST_MS; tests shorten it). */
  demoRestMs?: number;
}

export interface EmbeddedService {
  url: string;
  port: number;
  service: Service;
  farm: SimulatedFarm | null;
  /**
   * Takes the demo farm out of this service's life: close() then leaves its
   * printers running (and printing), for the next service to adopt.
   */
  detachFarm(): SimulatedFarm | null;
  close(): Promise<void>;
}

/**
 * Starts the service; with `demo`, also the simulated printers, unless `adoptFarm`
 * hands over the running ones of a previous service (then they are registered
 * with this one and their prints go on: the job tracker re-attaches to them).
 */
export async function startEmbedded(options: EmbeddedOptions = {}, adoptFarm?: SimulatedFarm | null): Promise<EmbeddedService> {
  const { demo, demoRestartMs, demoRestMs, ...serviceOptions } = options;
  const service = await createService(serviceOptions);
  let farm: SimulatedFarm | null = null;
  try {
    if (demo && adoptFarm) {
      await registerFarm(service, adoptFarm);
      farm = adoptFarm;
    } else if (demo) farm = await startDemoFarm(service, demo === true ? {} : demo, demoRestartMs ?? 20_000, demoRestMs);
  } catch (err) {
    await service.close();
    throw err;
  }
  if (!demo) await adoptFarm?.close();
  let closing: Promise<void> | undefined;
  return {
    url: service.url,
    port: service.port,
    service,
    get farm() {
      return farm;
    },
    detachFarm() {
      const detached = farm;
      farm = null;
      return detached;
    },
    close: () =>
      (closing ??= (async () => {
        // The service first: it lets go of the printers before they disappear.
        await service.close();
        await farm?.close();
      })()),
  };
}

/** Registers the farm's printers with the service (existing demo printers get the new ports), all active. */
async function registerFarm(service: Service, farm: SimulatedFarm): Promise<void> {
  const { printers, store } = service.context;
  for (const { printer } of farm.printers) {
    const body = printer as unknown as CreatePrinterInput;
    const { id, name: _name, type: _type, model: _model, is_active: _active, ...link } = body;
    if (id && (await store.printers.exists(id))) await printers.update(id, { ...link, is_active: true });
    else await printers.create({ ...body, is_active: true });
  }
}

/**
 * Simulated printers registered with the service (existing demo printers get the new ports), kept busy:
 * two start printing at once, and every `restartMs` an idle one (rested DEMO_REST_MS since it last printed)
 * may start the next print. Used by
 * `printfarm serve --demo` and the config node's demo mode.
 */
export async function startDemoFarm(service: Service, options: FarmOptions, restartMs: number, restMs = DEMO_REST_MS): Promise<SimulatedFarm> {
  // The Bambu printers announce themselves to the service like real ones do on the LAN (GET /discovery lists them).
  const announce = service.context.discovery.ssdpPort ?? undefined;
  const farm = await startFarm({ bambu: 3, prusa: 2, klipper: 1, speed: 20, announce, ...options });
  try {
    await registerFarm(service, farm);
    await queueDemoCopies(service, farm);
  } catch (err) {
    await farm.close();
    throw err;
  }
  // When each printer was last seen busy (or started here). The job tracker makes at most one new job per
  // printer a minute and warns about the rest, so a printer rests that long before the demo starts it again.
  const lastBusy = new Map<string, number>();
  const queueTarget = demoQueuePrinter(farm)?.printer.id;
  const startSomething = async ({ printer, control_url }: SimulatedFarm['printers'][number]) => {
    const state = (await (await fetch(`${control_url}/state`)).json()) as { status: string; files: string[] };
    if (!FREE.test(state.status)) {
      lastBusy.set(printer.id, Date.now());
      return;
    }
    if (Date.now() - (lastBusy.get(printer.id) ?? -Infinity) < restMs) return;
    // Like a person at the printer: take the last print off the plate, then start. The queue's printer is
    // left waiting for "Plate cleared" (what the demo queue shows); a print on a fouled plate would show
    // "Plate needs clearing" on a printing card.
    if ((await service.context.store.printers.get(printer.id))?.plate_state === 'needs_clearing') {
      if (printer.id === queueTarget) return;
      await service.context.dispatcher.plateCleared(printer.id);
    }
    lastBusy.set(printer.id, Date.now());
    const printable = printer.type === 'bambu_lab' ? /\.3mf$/i : printer.type === 'klipper' ? /\.gcode$/i : /\.bgcode$/i;
    const file = state.files.find((f) => printable.test(f)) ?? state.files[0];
    await fetch(`${control_url}/print`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ file }) });
  };
  const seeBusy = async ({ printer, control_url }: SimulatedFarm['printers'][number]) => {
    const state = (await (await fetch(`${control_url}/state`)).json()) as { status: string };
    if (!FREE.test(state.status)) lastBusy.set(printer.id, Date.now());
  };
  let timer: NodeJS.Timeout | null = null;
  if (restartMs > 0) {
    // Two printers start at once; later an idle printer now and then starts the next print.
    // The Klipper printer starts too, so that the demo shows all three families printing.
    const klipper = farm.printers.find((p) => p.printer.type === 'klipper');
    for (const p of [farm.printers[0], farm.printers[3], klipper].filter(Boolean) as SimulatedFarm['printers']) await startSomething(p).catch(() => undefined);
    timer = setInterval(() => {
      // Every printer is looked at, so that prints the queue starts count as busy too; one free one starts.
      const picked = farm.printers[Math.floor(Math.random() * farm.printers.length)];
      for (const p of farm.printers) (p === picked ? startSomething(p) : seeBusy(p)).catch(() => undefined);
    }, restartMs);
    timer.unref();
  }
  return {
    ...farm,
    close: async () => {
      if (timer) clearInterval(timer);
      await farm.close();
    },
  };
}
