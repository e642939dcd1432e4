/**
 * Keeps the embedded services of printfarm-server config nodes running across
 * deploys. Node-RED closes every node on a full deploy and builds new ones; a
 * service restarted each time would reconnect every printer and (in the demo)
 * lose the prints of its simulated printers. So:
 *
 * - on a deploy, a config node that is not removed *parks* its service instead
 *   of stopping it;
 * - a new config node whose service settings are the same (port, host, data
 *   dir, demo, settings.js' printfarmServerOptions) claims the parked service
 *   in its constructor and goes on with it;
 * - once the new flows have started, parked services nobody claimed are
 *   stopped. A new service that wants the demo printers adopts the simulated
 *   printers of the one it replaces, so their prints go on and the job
 *   tracker re-attaches to them (as it does for real printers at start).
 *
 * Stopping Node-RED (or a reload) is no deploy: services stop with their node.
 */
import type { StartedService } from '../service/client';
import { startEmbedded, type EmbeddedOptions, type EmbeddedService } from '../service/embedded';
import type { SimulatedFarm } from '../service/simulators';
import { logDestination, type ServiceLogLine } from './service-log';

type LogSink = (line: ServiceLogLine) => void;
type FarmHandler = (farm: SimulatedFarm | null) => void;

interface Entry {
  key: string;
  wantsDemo: boolean;
  running: Promise<EmbeddedService> | null;
  /** The claim using it; null while parked. */
  owner: Claim | null;
  /** Hands this entry's demo printers to a claim with other settings when the entry is stopped. */
  handFarm: FarmHandler | null;
}

/** What a config node holds: start its service (or take over the claimed one), say how it is let go. */
export interface Claim {
  /** For FarmConnection's `start`. */
  start(): Promise<StartedService & { port: number }>;
  /** Set before the connection closes: true keeps the service for the next deploy (if this is one). */
  keepOnClose: boolean;
  /** Where the service's log lines go while this claim holds it. */
  log: LogSink;
  /** True when this claim took over a running service. */
  readonly reused: boolean;
  /** Lets go of a service claimed but never started (a deploy cut short); a no-op otherwise. */
  dispose(): Promise<void>;
}

interface FlowsEvent {
  diff?: object;
}

/** What identifies "the same service": what it is started with, less the log level (changed in place). */
export function serviceKey(options: EmbeddedOptions): string {
  const { logLevel: _level, logStream: _stream, ...rest } = options;
  return JSON.stringify(rest, (_k, v: unknown) => (typeof v === 'function' ? `[function ${(v as { name?: string }).name ?? ''}]` : v));
}

export class EmbeddedKeeper {
  private readonly entries = new Set<Entry>();
  private deploying = false;
  private sweeping: Promise<void> = Promise.resolve();

  /** `fallbackLog`: where log lines go while a service is parked. */
  constructor(
    events: { on(event: string, listener: (e: FlowsEvent) => void): unknown },
    private readonly fallbackLog: LogSink,
  ) {
    // Node-RED's deploy passes the diff it computed (it has `globalConfigChanged`); stopping the runtime or a reload passes none.
    events.on('flows:stopping', (e) => (this.deploying = !!e?.diff && 'globalConfigChanged' in e.diff));
    events.on('flows:started', () => {
      this.deploying = false;
      this.sweeping = this.sweep();
    });
  }

  /** Called in a config node's constructor (before the flows start, so before the sweep). */
  claim(options: EmbeddedOptions, log: LogSink): Claim {
    const key = serviceKey(options);
    const parked = [...this.entries].find((e) => e.key === key && !e.owner);
    let entry: Entry | null = parked ?? null;
    let farmFromDonor: Promise<SimulatedFarm | null> = Promise.resolve(null);
    let started = false;
    const keeper = this;
    const claim: Claim = {
      keepOnClose: false,
      log,
      reused: !!parked,
      async start() {
        started = true;
        // Parked services that are going away must have let go of their port (and printers) first.
        await keeper.sweeping;
        if (!entry) {
          const farm = options.demo ? await farmFromDonor : null;
          const fresh: Entry = { key, wantsDemo: !!options.demo, running: null, owner: claim, handFarm: null };
          entry = fresh;
          keeper.entries.add(fresh);
          const logStream = logDestination((line) => (fresh.owner?.log ?? keeper.fallbackLog)(line));
          fresh.running = startEmbedded({ ...options, logStream }, farm);
          fresh.running.catch(() => keeper.entries.delete(fresh));
        }
        const mine = entry;
        const embedded = await mine.running!;
        // The one setting applied in place (the root logger; it is not part of the key).
        if (options.logLevel && embedded.service.context.log.level !== options.logLevel) embedded.service.context.log.level = options.logLevel;
        return { url: embedded.url, port: embedded.port, close: () => keeper.release(mine, claim) };
      },
      dispose: async () => {
        if (!started && entry && entry.owner === claim) await keeper.release(entry, claim);
      },
    };
    if (parked) {
      parked.owner = claim;
      // Its printers were promised to a claim with other settings: that one starts its own.
      parked.handFarm?.(null);
      parked.handFarm = null;
    } else if (options.demo) {
      // Another setting changed: the service restarts, but the demo printers of the one it replaces go on printing.
      const donor = [...this.entries].find((e) => !e.owner && e.wantsDemo && !e.handFarm);
      if (donor) farmFromDonor = new Promise((resolve) => (donor.handFarm = resolve));
    }
    return claim;
  }

  private async release(entry: Entry, claim: Claim): Promise<void> {
    if (entry.owner !== claim) return;
    entry.owner = null;
    if (claim.keepOnClose && this.deploying) return; // parked until the new flows have started
    await this.stop(entry);
  }

  private async stop(entry: Entry): Promise<void> {
    this.entries.delete(entry);
    const embedded = await entry.running?.catch(() => null);
    const hand = entry.handFarm;
    entry.handFarm = null;
    const farm = hand && embedded ? embedded.detachFarm() : null;
    try {
      await embedded?.close();
    } finally {
      hand?.(farm);
    }
  }

  /** After a deploy: stops what no new config node claimed. */
  private async sweep(): Promise<void> {
    const unclaimed = [...this.entries].filter((e) => !e.owner);
    await Promise.all(unclaimed.map((e) => this.stop(e).catch((err: Error) => this.fallbackLog({ method: 'warn', text: `stopping an unused embedded service failed: ${err.message}` }))));
  }
}

const keepers = new WeakMap<object, EmbeddedKeeper>();

/** One keeper per Node-RED runtime (the module function runs again when a test reloads the nodes). */
export function keeperFor(events: object & { on(event: string, listener: (e: FlowsEvent) => void): unknown }, fallbackLog: LogSink): EmbeddedKeeper {
  let keeper = keepers.get(events);
  if (!keeper) keepers.set(events, (keeper = new EmbeddedKeeper(events, fallbackLog)));
  return keeper;
}
