/**
 * The simulated PrusaLink printer's control API (JSON on its own port): drive
 * it like a person at the printer and inject faults. Routes: GET /state;
 * POST /print {"file"}, /pause, /resume, /finish, /fail {"message"}, /cancel,
 * /attention {"message"}, /busy, /ready, /not-ready, /idle, /materials
 * {"materials":[{"slot":0,"type":"PLA","color":"#FFFFFF"}]}, /offline,
 * /online, /stall, /faults ({"camera_stalled": true} hangs camera snapshots),
 * /camera {"enabled": false} (the camera disconnected: snap answers 503).
 */
import type http from 'node:http';
import { readControlBody } from '../control-body';
import type { PrusaFaults, PrusaSimulator } from './simulator';

export async function handleControl(sim: PrusaSimulator, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const reply = (status: number, body: unknown) => {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(text)) });
    res.end(text);
  };
  try {
    const path = new URL(req.url ?? '/', 'http://control').pathname.replace(/\/+$/, '') || '/';
    const method = req.method ?? 'GET';
    if (method === 'GET' && (path === '/state' || path === '/')) return reply(200, sim.snapshot());
    if (method !== 'POST') return reply(405, { error: 'use POST (GET only for /state)' });
    const read = await readControlBody(req);
    if ('error' in read) return reply(400, { error: read.error });
    const body = read.body;
    const p = sim.printer;
    const conflict = (what: string) => reply(409, { error: `cannot ${what} in state ${p.state}`, state: sim.snapshot() });
    const ok = () => reply(200, { ok: true, state: sim.snapshot() });
    switch (path) {
      case '/print': {
        const name = typeof body.file === 'string' ? body.file : '';
        const entry = name ? sim.storage.find(name) : null;
        if (!entry || entry.type === 'FOLDER') return reply(404, { error: `no file "${name}" on the printer`, files: sim.snapshot().files });
        p.advance();
        // Someone at the printer picks a file: busy or not, nothing asks about the screen.
        if (p.busy) return conflict('start a print');
        sim.startJob(entry, 'screen');
        return ok();
      }
      case '/pause':
        return p.pause() ? ok() : conflict('pause');
      case '/resume':
        return p.resume() ? ok() : conflict('resume');
      case '/finish':
        return p.finish() ? ok() : conflict('finish');
      case '/fail':
        return p.fail(typeof body.message === 'string' ? body.message : 'Thermal runaway') ? ok() : conflict('fail');
      case '/cancel':
        return p.stop() ? ok() : conflict('cancel');
      case '/attention':
        p.attention(typeof body.message === 'string' ? body.message : 'Filament runout');
        return ok();
      case '/busy':
        return p.setOverlay('BUSY') ? ok() : conflict('go busy');
      case '/ready':
        // Back at the home screen (the queue may start prints again); idle printers also show READY.
        p.screenReady = true;
        p.setOverlay('READY'); // refused (false) while a job prints: then only the screen flag changes
        return ok();
      case '/not-ready':
        // The screen shows a menu or a dialog: PrusaLink still says IDLE, yet starts get 409.
        p.screenReady = false;
        return ok();
      case '/materials': {
        const result = sim.applyMaterials(body);
        return result.ok ? reply(200, { materials: result.materials }) : reply(400, { error: result.error });
      }
      case '/idle':
        return p.idle() ? ok() : conflict('go idle');
      case '/offline':
        await sim.goOffline();
        return ok();
      case '/online':
        await sim.goOnline();
        return ok();
      case '/stall':
        sim.stall();
        return ok();
      case '/camera':
        if (typeof body.enabled !== 'boolean') return reply(400, { error: 'give {"enabled": true|false}' });
        sim.camera.enabled = body.enabled;
        return ok();
      case '/faults':
        sim.setFaults(body as Partial<PrusaFaults>);
        return ok();
      default:
        return reply(404, { error: `unknown control ${path}` });
    }
  } catch (err) {
    if (!res.headersSent) reply(500, { error: (err as Error)?.message ?? String(err) });
  }
}
