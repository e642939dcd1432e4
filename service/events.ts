/**
 * The in-process event bus. Domain modules publish typed events here; the
 * /ws hub (and later the usage statistics) listen. Publishing never throws
 * into the publisher: a failing listener is logged, not propagated.
 */
import { EventEmitter } from 'node:events';
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
  private readonly emitter = new EventEmitter();

  constructor(private readonly onListenerError: (err: unknown, type: EventType) => void = () => {}) {
    this.emitter.setMaxListeners(0);
  }

  emit<K extends EventType>(type: K, data: EventMap[K]): void {
    for (const listener of this.emitter.listeners('*') as AnyListener[]) {
      try {
        listener(type, data);
      } catch (err) {
        this.onListenerError(err, type);
      }
    }
  }

  /** Listens to every event; returns the function that stops listening. */
  onAny(listener: AnyListener): () => void {
    this.emitter.on('*', listener);
    return () => this.emitter.off('*', listener);
  }

  on<K extends EventType>(type: K, listener: (data: EventMap[K]) => void): () => void {
    return this.onAny((t: EventType, data) => {
      if (t === type) listener(data as EventMap[K]);
    });
  }
}
