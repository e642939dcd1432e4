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

export class EventBus {
  // Listener lists are replaced, never changed in place: an emit goes on over the list it started with, and a
  // listener added or removed meanwhile counts from the next emit (as EventEmitter does). Listeners of one type
  // are kept apart, so an event costs the listeners that want it (events are sent for every printer report).
  private anyListeners: AnyListener[] = [];
  private readonly typed = new Map<EventType, Array<(data: never) => void>>();

  constructor(private readonly onListenerError: (err: unknown, type: EventType) => void = () => {}) {}

  emit<K extends EventType>(type: K, data: EventMap[K]): void {
    const typed = this.typed.get(type) as Array<(data: EventMap[K]) => void> | undefined;
    if (typed) {
      for (const listener of typed) {
        try {
          listener(data);
        } catch (err) {
          this.onListenerError(err, type);
        }
      }
    }
    for (const listener of this.anyListeners) {
      try {
        listener(type, data);
      } catch (err) {
        this.onListenerError(err, type);
      }
    }
  }

  /** Listens to every event; returns the function that stops listening. */
  onAny(listener: AnyListener): () => void {
    this.anyListeners = [...this.anyListeners, listener];
    return () => {
      this.anyListeners = this.anyListeners.filter((l) => l !== listener);
    };
  }

  on<K extends EventType>(type: K, listener: (data: EventMap[K]) => void): () => void {
    this.typed.set(type, [...(this.typed.get(type) ?? []), listener as (data: never) => void]);
    return () => {
      const left = (this.typed.get(type) ?? []).filter((l) => l !== listener);
      if (left.length) this.typed.set(type, left);
      else this.typed.delete(type);
    };
  }
}
