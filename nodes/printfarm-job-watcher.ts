/**
 * job-watcher: sends job events (auto-created, started, progress (throttled),
 * paused, resumed, completed, failed, cancelled), filtered by printer and
 * event. topic = printer id, event = the event, payload = the job (with the
 * job's detail on completed, failed and cancelled).
 */
import type { NodeAPI, NodeDef, NodeMessage } from '@node-red/registry';
import { JOB_EVENTS, JobEventStream, type ConnectionState, type JobEvent, type JobEventType } from '../service/client';
import { asError, clientOf, connectionStatus, flagUnknownPrinter, useServerWhenReady, type ServerNode, type ServerUser } from './shared';

interface JobWatcherDef extends NodeDef {
  server: string;
  /** Printer id; empty: every printer. */
  printer: string;
  /** Events to send (all when empty). */
  events: JobEventType[] | string;
  /** Seconds between progress events of one job. */
  throttle: string | number;
  /** Add the job's detail (GET /jobs/{id}) to completed, failed and cancelled. */
  details: boolean;
}

const TYPE = 'printfarm-job-watcher';
const ENDED = new Set<JobEventType>(['completed', 'failed', 'cancelled']);

function eventList(value: JobWatcherDef['events']): Set<JobEventType> {
  const list = Array.isArray(value) ? value : String(value ?? '').split(',');
  const chosen = list.map((e) => e.trim()).filter((e): e is JobEventType => (JOB_EVENTS as readonly string[]).includes(e));
  return new Set(chosen.length ? chosen : JOB_EVENTS);
}

export = function (RED: NodeAPI) {
  function JobWatcherNode(this: ServerUser, def: JobWatcherDef) {
    RED.nodes.createNode(this, def);
    const node = this;
    const t = (key: string, subs?: Record<string, string | number>) => RED._(key, subs);
    const wanted = (def.printer ?? '').trim();
    const events = eventList(def.events);
    const throttle = def.throttle === '' || def.throttle === undefined ? 10 : Math.max(0, Number(def.throttle) || 0);
    let stream: JobEventStream | null = null;
    let server: ServerNode | null = null;
    let last: NodeMessage | null = null;
    let stopFlagging: (() => void) | null = null;
    /** Closed (a deploy): an event whose job detail is still being read must not reach the flow from this node. */
    let closed = false;

    node.onServerState = (state: ConnectionState, error?: Error) => {
      if ((state === 'connected' || state === 'polling') && last) return;
      node.status(connectionStatus(t, TYPE, state, error));
    };

    const deliver = async (e: JobEvent) => {
      if (wanted && e.printer_id !== wanted) return;
      if (!events.has(e.event)) return;
      const payload: Record<string, unknown> = { ...e.data, id: e.job_id, job_id: e.job_id, printer_id: e.printer_id, job_name: e.job_name, status: e.status, progress: e.progress, timestamp: e.timestamp };
      if (def.details !== false && ENDED.has(e.event) && server) {
        try {
          payload.job = await (await clientOf(server)).jobs.get(e.job_id);
        } catch (err) {
          if (!closed) node.warn(t('printfarm-job-watcher.errors.detail-failed', { job: e.job_id, message: asError(err).message }));
        }
        if (closed) return node.debug(t('printfarm-job-watcher.log.late', { event: e.event, job: e.job_id }));
      }
      last = { topic: e.printer_id, event: e.event, payload };
      node.send(last);
      const fill = e.event === 'failed' ? 'red' : e.event === 'cancelled' || e.event === 'paused' ? 'yellow' : e.event === 'completed' ? 'green' : 'blue';
      node.status({ fill, shape: 'dot', text: t(`printfarm-job-watcher.status.${e.event}`, { job: e.job_id, progress: Math.floor(e.progress) }) });
    };

    server = useServerWhenReady(RED, node, def.server, TYPE, {
      ready: (farm) => {
        stopFlagging = flagUnknownPrinter(node, farm, wanted, TYPE, t);
        stream = new JobEventStream(farm.connection.monitor!, { progressThrottleMs: throttle * 1000 });
        stream.on('event', (e: JobEvent) => {
          deliver(e).catch((err) => node.error(asError(err), { topic: e.printer_id, payload: e }));
        });
      },
      close: () => {
        closed = true;
        stream?.close();
        stopFlagging?.();
      },
    });
  }

  RED.nodes.registerType(TYPE, JobWatcherNode);
};
