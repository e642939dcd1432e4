/**
 * A simulated farm: N Bambu Lab, M PrusaLink and K Klipper (Moonraker) printers on 127.0.0.1, each
 * speaking its real protocol, each with a control API for tests and demos.
 */
import { startAnnouncer, type Announced } from './announce';
import { BambuSimulator } from './bambu';
import { KlipperSimulator } from './klipper';
import { PrusaSimulator } from './prusa';
import { SpoolmanSimulator } from './spoolman';

export interface SimulatedPrinter {
  /** A body ready for POST /api/v1/printers (with the port overrides). */
  printer: Record<string, unknown> & { id: string };
  control_url: string;
}

export interface SimulatedFarm {
  printers: SimulatedPrinter[];
  /** The Spoolman simulator's address (the setting spoolman_url), when asked for. */
  spoolman_url?: string;
  close(): Promise<void>;
}

export interface FarmOptions {
  bambu?: number;
  prusa?: number;
  klipper?: number;
  /** Time compression: 60 makes a one-hour print take a minute. */
  speed?: number;
  /** Also start a Spoolman simulator (three spools). */
  spoolman?: boolean;
  /** UDP port on 127.0.0.1 the Bambu printers announce themselves to (SSDP, like real printers on port 2021). */
  announce?: number;
  /** Seconds between announcements (default 5). */
  announceIntervalS?: number;
}

const BAMBU_MODELS = ['X1C', 'P1S', 'A1'];
const PRUSA_MODELS = ['MK4S', 'Core One'];
const KLIPPER_MODELS = ['Voron 2.4 350', 'Sovol SV08', 'RatRig V-Core 4'];

export async function startFarm(options: FarmOptions = {}): Promise<SimulatedFarm> {
  const sims: (BambuSimulator | PrusaSimulator | KlipperSimulator | SpoolmanSimulator)[] = [];
  let spoolman: SpoolmanSimulator | null = null;
  try {
    if (options.spoolman) sims.push((spoolman = await SpoolmanSimulator.start()));
    for (let i = 0; i < (options.bambu ?? 0); i++) {
      const n = String(i + 1).padStart(2, '0');
      sims.push(
        await BambuSimulator.start({
          id: `sim-bambu-${n}`,
          name: `Bambu ${BAMBU_MODELS[i % BAMBU_MODELS.length]} #${n}`,
          model: BAMBU_MODELS[i % BAMBU_MODELS.length],
          speed: options.speed,
        }),
      );
    }
    for (let i = 0; i < (options.prusa ?? 0); i++) {
      const n = String(i + 1).padStart(2, '0');
      const model = PRUSA_MODELS[i % PRUSA_MODELS.length];
      sims.push(await PrusaSimulator.start({ id: `sim-prusa-${n}`, name: `Prusa ${model} #${n}`, model, speed: options.speed, camera: true }));
    }
    for (let i = 0; i < (options.klipper ?? 0); i++) {
      const n = String(i + 1).padStart(2, '0');
      const model = KLIPPER_MODELS[i % KLIPPER_MODELS.length];
      // A runout sensor, as most farm machines have: POST /runout tries what the farm shows when filament runs out.
      sims.push(await KlipperSimulator.start({ id: `sim-klipper-${n}`, name: `Klipper ${model} #${n}`, model, speed: options.speed, runoutSensor: true }));
    }
  } catch (err) {
    await Promise.all(sims.map((s) => s.close()));
    throw err;
  }
  const printers = sims
    .filter((s): s is BambuSimulator | PrusaSimulator | KlipperSimulator => !(s instanceof SpoolmanSimulator))
    .map((s) => ({ printer: s.printerConfig() as SimulatedPrinter['printer'], control_url: s.controlUrl }));
  const announcer = options.announce
    ? startAnnouncer(
        options.announce,
        printers.filter((p) => p.printer.type === 'bambu_lab').map((p) => p.printer as unknown as Announced),
        (options.announceIntervalS ?? 5) * 1000,
      )
    : null;
  return {
    printers,
    ...(spoolman ? { spoolman_url: spoolman.url } : {}),
    close: async () => {
      await announcer?.close();
      await Promise.all(sims.map((s) => s.close()));
    },
  };
}
