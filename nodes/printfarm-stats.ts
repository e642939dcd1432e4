/**
 * stats: the farm's statistics (GET /statistics/overview) or one printer's
 * (GET /statistics/printers/{id}), on input and, optionally, every N seconds.
 * msg.period (day, week, month, year), msg.start_date + msg.end_date and
 * msg.printer_id override the node's settings for one request.
 */
import type { NodeAPI, NodeDef, NodeMessage, NodeMessageInFlow } from '@node-red/registry';
import type { ConnectionState, StatisticsFilter, StatisticsPeriod } from '../service/client';
import { asError, clientOf, connectionStatus, flagUnknownPrinter, useServerWhenReady, type ServerNode, type ServerUser } from './shared';

interface StatsDef extends NodeDef {
  server: string;
  scope: 'overview' | 'printer';
  printer: string;
  period: StatisticsPeriod;
  /** Seconds between automatic updates; 0 or empty: only on input. */
  interval: string | number;
}

const TYPE = 'printfarm-stats';
const PERIODS: StatisticsPeriod[] = ['day', 'week', 'month', 'year'];
/** The editor's limit. A flow that skipped its check may hold more: past about 24.8 days a Node timer fires after 1 ms (a flood). */
const MAX_INTERVAL_S = 86_400;

export = function (RED: NodeAPI) {
  function StatsNode(this: ServerUser, def: StatsDef) {
    RED.nodes.createNode(this, def);
    const node = this;
    const t = (key: string, subs?: Record<string, string | number>) => RED._(key, subs);
    const seconds = Number(def.interval) || 0;
    const badInterval = !(seconds >= 0 && seconds <= MAX_INTERVAL_S);
    let server: ServerNode | null = null;
    let timer: NodeJS.Timeout | null = null;
    let shown = false;
    /** Closed (a deploy): an answer still on its way must not reach the flow from this node any more. */
    let closed = false;
    let stopFlagging: (() => void) | null = null;
    const fixedPrinter = def.scope === 'printer' ? String(def.printer ?? '').trim() : '';
    /** A failed query turns the light red with its reason (it used to stay green "connected"). */
    const failed = (err: unknown) => {
      const e = asError(err) as Error & { code?: string };
      shown = true;
      node.status({ fill: 'red', shape: 'dot', text: t('printfarm-stats.status.failed', { code: e.code ?? e.message.slice(0, 30) }) });
      return e;
    };

    node.onServerState = (state: ConnectionState, error?: Error) => {
      if (badInterval) return; // the light keeps saying why no update comes by itself
      if ((state === 'connected' || state === 'polling') && shown) return;
      node.status(connectionStatus(t, TYPE, state, error));
    };

    /** Reads the statistics the node (or the msg) asks for. */
    const read = async (msg: Partial<NodeMessage>): Promise<NodeMessage | null> => {
      const m = msg as { period?: unknown; start_date?: unknown; end_date?: unknown; printer_id?: unknown };
      const filter: StatisticsFilter = {};
      if (typeof m.start_date === 'string' || typeof m.end_date === 'string') {
        filter.start_date = String(m.start_date ?? '');
        filter.end_date = String(m.end_date ?? '');
      } else {
        const period = (m.period ?? def.period ?? 'week') as StatisticsPeriod;
        if (!PERIODS.includes(period)) throw new Error(t('printfarm-stats.errors.bad-period', { period: String(period).slice(0, 20) }));
        filter.period = period;
      }
      const printerId = typeof m.printer_id === 'string' && m.printer_id ? m.printer_id : fixedPrinter;
      if (def.scope === 'printer' && !printerId) throw new Error(t('printfarm-stats.errors.no-printer'));
      const client = await clientOf(server!);
      const payload = printerId ? await client.statistics.printer(printerId, filter) : await client.statistics.overview(filter);
      if (closed) {
        node.debug(t('printfarm-stats.log.late', { topic: printerId || 'overview' }));
        return null;
      }
      shown = true;
      const jobs = (payload as { jobs: { total_jobs: number; success_rate: number; completed_jobs?: number; failed_jobs?: number } }).jobs;
      // The service's success rate is 0 while nothing has finished: "0 % ok" would read as all failed.
      const finished = (jobs.completed_jobs ?? 0) + (jobs.failed_jobs ?? 0);
      const text = finished ? t('printfarm-stats.status.updated', { jobs: jobs.total_jobs, rate: jobs.success_rate }) : t('printfarm-stats.status.none-finished', { jobs: jobs.total_jobs });
      node.status({ fill: 'green', shape: 'dot', text });
      return { ...msg, topic: printerId || 'overview', payload };
    };

    server = useServerWhenReady(RED, node, def.server, TYPE, {
      ready: (farm) => {
        if (fixedPrinter) stopFlagging = flagUnknownPrinter(node, farm, fixedPrinter, TYPE, t);
      },
      close: () => {
        closed = true;
        if (timer) clearInterval(timer);
        timer = null;
        stopFlagging?.();
      },
    });
    if (!server) return;

    if (badInterval) {
      node.status({ fill: 'red', shape: 'ring', text: t('printfarm-stats.status.bad-interval') });
      node.error(t('printfarm-stats.errors.bad-interval', { value: String(def.interval).slice(0, 20), max: MAX_INTERVAL_S }));
    } else if (seconds > 0) {
      // One update at a time: a service slower than the interval (or one that never answers, 30 s each)
      // would otherwise get a request per tick, all waiting at once.
      let reading = false;
      const tick = () => {
        if (closed || reading) return;
        reading = true;
        read({})
          .then(
            (msg) => msg && node.send(msg),
            (err) => !closed && node.error(failed(err), { topic: fixedPrinter || 'overview' }),
          )
          .finally(() => (reading = false));
      };
      timer = setInterval(tick, seconds * 1000);
      clientOf(server).then(tick, () => undefined);
    }

    node.on('input', (msg: NodeMessageInFlow, send: (m: NodeMessage) => void, done: (err?: Error) => void) => {
      read(msg).then(
        (out) => {
          if (out) send(out);
          done();
        },
        (err) => done(failed(err)),
      );
    });
  }

  RED.nodes.registerType(TYPE, StatsNode);
};
