/**
 * The simulated Klipper printer's control API (JSON on its own port), like
 * the other simulators': GET /state; POST /print {"file"}, /pause, /resume,
 * /finish, /fail {"message"}, /cancel, /idle (SDCARD_RESET_FILE), /shutdown
 * {"message"} (Klippy shuts down), /restart (FIRMWARE_RESTART: ready again),
 * /klippy-disconnect (Klippy crashed or restarted: Moonraker's history ends a print klippy_disconnect),
 * /power-loss (the host loses power mid-print: offline until /online, then standby and the job interrupted), /runout {"detected": false|true} (the runout sensor; a print pauses when it runs out), /spool {"material","color_hex","weight","remaining_weight"}
 * (or {"spool":null}), /offline, /online, /faults {"reject_commands", "silent_rpc",
 * "transfer_bytes_per_sec", "rpc_delay_ms"}, /hostile {"kind": garbage|huge|flood|unknown_ids,
 * "count", "bytes"}.
 */
import type http from 'node:http';
import { readControlBody } from '../control-body';
import { sendJson } from '../prusa/http-util';
import type { KlipperFaults, KlipperSimulator } from './simulator';

export function klipperSnapshot(sim: KlipperSimulator) {
  const m = sim.machine;
  m.advance();
  return {
    status: m.state,
    klippy: m.klippy,
    klippy_message: m.klippyMessage,
    progress: Math.round(m.fraction * 100),
    file: m.filename || null,
    message: m.message || null,
    filament_detected: m.filamentDetected,
    temperatures: { nozzle: Math.round(m.nozzle * 10) / 10, bed: Math.round(m.bed * 10) / 10, nozzle_target: m.targetNozzle, bed_target: m.targetBed },
    layer: { current: m.currentLayer },
    files: sim.files.list().map((f) => f.path),
    spool: sim.spool,
    prints_started: sim.printsStarted,
    last_start: sim.lastStart,
    faults: { ...sim.faults },
    stats: { ...sim.stats },
    http_port: sim.httpPort,
  };
}

export async function handleKlipperControl(sim: KlipperSimulator, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const reply = (status: number, body: unknown) => sendJson(res, status, body);
  try {
    const path = new URL(req.url ?? '/', 'http://control').pathname.replace(/\/+$/, '') || '/';
    const method = req.method ?? 'GET';
    if (method === 'GET' && (path === '/state' || path === '/')) return reply(200, klipperSnapshot(sim));
    if (method !== 'POST') return reply(405, { error: 'use POST (GET only for /state)' });
    const read = await readControlBody(req);
    if ('error' in read) return reply(400, { error: read.error });
    const body = read.body;
    const m = sim.machine;
    const done = (ok: boolean, what: string) => {
      sim.pushNow();
      return ok ? reply(200, { ok: true, state: klipperSnapshot(sim) }) : reply(409, { error: `cannot ${what} in state ${m.state} (klippy ${m.klippy})`, state: klipperSnapshot(sim) });
    };
    const message = (fallback: string) => (typeof body.message === 'string' ? body.message.slice(0, 500) : fallback);
    switch (path) {
      case '/print': {
        const name = typeof body.file === 'string' ? body.file.replace(/^\/+/, '') : '';
        if (!sim.files.get(name)) return reply(404, { error: `no file "${name}" on the printer`, files: sim.files.list().map((f) => f.path) });
        return done(sim.startPrint(name, 'screen'), 'start a print');
      }
      case '/pause':
        return done(m.pause(), 'pause');
      case '/resume':
        return done(m.resume(), 'resume');
      case '/finish':
        return done(m.finish(), 'finish');
      case '/fail':
        return done(m.fail(message('Move out of range: 0.000 400.000 0.200 [0.000]')), 'fail');
      case '/cancel':
        return done(m.cancel(), 'cancel');
      case '/idle':
        return done(m.reset(), 'go idle');
      case '/shutdown':
        sim.history.klippyLost('klippy_shutdown', m); // Moonraker ends the job before print_stats says more
        m.shutdown(message('MCU \'mcu\' shutdown: Timer too close'));
        sim.pushNow();
        sim.notifyAll('notify_klippy_shutdown');
        return done(true, 'shut down');
      case '/restart':
        m.restart();
        sim.notifyAll('notify_klippy_ready');
        return done(true, 'restart');
      case '/runout':
        if (!sim.hasObject('filament_switch_sensor runout')) return reply(409, { error: 'the printer has no runout sensor (start it with runoutSensor)' });
        m.runout(body.detected === true);
        return done(true, 'change the runout sensor');
      case '/klippy-disconnect':
        sim.history.klippyLost('klippy_disconnect', m);
        m.klippy = 'disconnected';
        m.klippyMessage = 'Klippy Disconnected';
        sim.notifyAll('notify_klippy_disconnected');
        return done(true, 'disconnect');
      case '/power-loss':
        // The host loses power: Moonraker and Klipper go; /online brings them back, Klipper in standby and the
        // job that was in progress marked interrupted (as Moonraker does at its next start).
        await sim.goOffline();
        m.powerLoss();
        sim.history.restarted(m);
        return done(true, 'lose power');
      case '/offline':
        await sim.goOffline();
        return done(true, 'go offline');
      case '/online':
        await sim.goOnline();
        return done(true, 'go online');
      case '/spool': {
        // The active Spoolman spool changes (null: none); Moonraker tells its clients.
        const spool = body.spool === null ? null : { id: Number(body.id ?? 1), material: String(body.material ?? 'PLA'), color_hex: String(body.color_hex ?? 'FFFFFF'), weight: Number(body.weight ?? 1000), remaining_weight: Number(body.remaining_weight ?? 1000) };
        sim.spool = spool;
        sim.notifyAll('notify_active_spool_set', [{ spool_id: spool?.id ?? null }]);
        return done(true, 'set the spool');
      }
      case '/faults':
        sim.setFaults(body as Partial<KlipperFaults>);
        return done(true, 'set faults');
      case '/hostile': {
        const count = typeof body.count === 'number' ? Math.min(100_000, Math.max(1, Math.floor(body.count))) : 100;
        const bytes = typeof body.bytes === 'number' ? Math.min(64 * 1024 * 1024, Math.max(1, Math.floor(body.bytes))) : 8 * 1024 * 1024;
        return sim.hostile(String(body.kind), count, bytes) ? reply(200, { ok: true }) : reply(400, { error: 'kind: garbage, huge, flood or unknown_ids' });
      }
      default:
        return reply(404, { error: `unknown control ${path}` });
    }
  } catch (err) {
    if (!res.headersSent) reply(500, { error: (err as Error)?.message ?? String(err) });
  }
}
