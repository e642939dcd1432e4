/**
 * The in-process event bus. Domain modules publish typed events here; the
 * /ws hub (and later the usage statistics) listen. Publishing never throws
 * into the publisher: a failing listener is logged, not propagated.
 */
import type { AttentionChange } from './attention/book';
import type { DiscoveredPrinter } from './discovery/registry';
import type { Notification } from './notify/kinds';

export interface PrinterStatusEvent {
  printer_id: string;
  /** Why the frame was sent: the printer was created, changed, deleted, or reported a new state. */
  change: 'created' | 'updated' | 'deleted' | 'state';
  status: string;
  connection_status: string;
  progress: number;
  temperatures: { nozzle: number; bed: number; chamber?: number };
  [extra: string]: unknown;
}

export interface JobUpdateEvent {
  id: number;
  job_id: number;
  printer_id: string;
  change: 'created' | 'updated' | 'deleted' | 'cancelled' | 'progress' | 'status';
  status: string;
  progress: number;
  [extra: string]: unknown;
}

export interface EventMap {
  printer_status: PrinterStatusEvent;
  job_update: JobUpdateEvent;
  job_auto_created: Record<string, unknown> & { printer_id: string };
  file_update: Record<string, unknown>;
  /** A queue item as GET /queue/{id} shows it, after every change of the item or its dispatches. */
  queue_update: Record<string, unknown> & { id: string };
  /** A spool as GET /spools/{id} shows it, after every change (created, updated, assigned, used, deleted). */
  spool_update: Record<string, unknown> & { id: number; change: string };
  /** Once when a spool's grams fall below spool_low_threshold_g. */
  spool_low: Record<string, unknown> & { id: number; remaining_weight_g: number | null; threshold_g: number };
  /** A printer's attention entries changed: once per cause that appeared or cleared. */
  printer_attention: AttentionChange;
  /** A printer was found on the LAN, or what is known of it changed. */
  discovery_update: { change: 'found' | 'updated'; printer: DiscoveredPrinter };
  /** An event worth telling a person (docs/notifications.md), once per cause. */
  notification: Notification;
  system_alert: { level: 'info' | 'warning' | 'error'; message: string; [extra: string]: unknown };
}

export type EventType = keyof EventMap;
export type AnyListener = <K extends EventType>(type: K, data: EventMap[K]) => void;

/**
 * How a listener is registered. `telemetry: false` says it never acts on telemetry, the printer_status frames
 * whose only news is a temperature (most frames of a farm: a printer's every report moves one): those frames
 * then skip it, and it hears every other event.
 */
export interface ListenOptions {
  telemetry?: boolean;
}

/** One event's listeners in registration order: all of them, and those that also hear telemetry. */
interface Listeners<L> {
  all: L[];
  telemetry: L[];
}

const NONE: Listeners<never> = { all: [], telemetry: [] };

function adding<L>(list: Listeners<L>, listener: L, options: ListenOptions): Listeners<L> {
  return { all: [...list.all, listener], telemetry: options.telemetry === false ? list.telemetry : [...list.telemetry, listener] };
}

function removing<L>(list: Listeners<L>, listener: L): Listeners<L> {
  return { all: list.all.filter((l) => l !== listener), telemetry: list.telemetry.filter((l) => l !== listener) };
}

export class EventBus {
  // Listener lists are replaced, never changed in place: an emit goes on over the list it started with, and a
  // listener added or removed meanwhile counts from the next emit (as EventEmitter does). Listeners of one type
  // are kept apart, so an event costs the listeners that want it (events are sent for every printer report).
  private anyListeners: Listeners<AnyListener> = NONE;
  private readonly typed = new Map<EventType, Listeners<(data: never) => void>>();

  constructor(private readonly onListenerError: (err: unknown, type: EventType) => void = () => {}) {}

  /** Sends an event; `telemetry` when it is a printer_status frame whose only news is a temperature (ListenOptions). */
  emit<K extends EventType>(type: K, data: EventMap[K], telemetry = false): void {
    const typed = this.typed.get(type) as Listeners<(data: EventMap[K]) => void> | undefined;
    if (typed) {
      for (const listener of telemetry ? typed.telemetry : typed.all) {
        try {
          listener(data);
        } catch (err) {
          this.onListenerError(err, type);
        }
      }
    }
    for (const listener of telemetry ? this.anyListeners.telemetry : this.anyListeners.all) {
      try {
        listener(type, data);
      } catch (err) {
        this.onListenerError(err, type);
      }
    }
  }

  /** Listens to every event; returns the function that stops listening. */
  onAny(listener: AnyListener, options: ListenOptions = {}): () => void {
    this.anyListeners = adding(this.anyListeners, listener, options);
    return () => {
      this.anyListeners = removing(this.anyListeners, listener);
    };
  }

  on<K extends EventType>(type: K, listener: (data: EventMap[K]) => void, options: ListenOptions = {}): () => void {
    const fn = listener as (data: never) => void;
    this.typed.set(type, adding(this.typed.get(type) ?? NONE, fn, options));
    return () => {
      const left = removing(this.typed.get(type) ?? NONE, fn);
      if (left.all.length) this.typed.set(type, left);
      else this.typed.delete(type);
    };
  }
}
