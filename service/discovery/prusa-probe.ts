/**
 * Looks for PrusaLink printers: `GET /api/version` on each address, at most CONCURRENCY at once and
 * TIMEOUT_MS each. A JSON answer that reads like PrusaLink's, or a 401 with a Digest challenge (PrusaLink
 * asks for its password even here), is a printer. Answers are read up to MAX_BODY bytes and never trusted
 * beyond the few fields kept.
 */
import http from 'node:http';
import { modelOf, type PrusaVersion } from '../printers/prusa/state';
import type { ProbeTarget } from './targets';

export const CONCURRENCY = 32;
export const TIMEOUT_MS = 1000;
const MAX_BODY = 16 * 1024;

export interface ProbeHit {
  ip: string;
  port: number;
  model: string | null;
  name: string | null;
  firmware_version: string | null;
  auth_required: boolean;
}

function probeOne(target: ProbeTarget, signal: AbortSignal): Promise<ProbeHit | null> {
  return new Promise((resolve) => {
    const host = target.ip.includes(':') ? `[${target.ip}]` : target.ip;
    let done = false;
    const finish = (hit: ProbeHit | null) => {
      if (done) return;
      done = true;
      clearTimeout(deadline);
      req.destroy();
      resolve(hit);
    };
    // The whole probe, not only each silence, ends after TIMEOUT_MS (an answer dripping byte by byte included).
    const deadline = setTimeout(() => finish(null), TIMEOUT_MS);
    const req = http.get(`http://${host}:${target.port}/api/version`, { agent: false, timeout: TIMEOUT_MS, signal, headers: { Accept: 'application/json' } }, (res) => {
      const challenge = String(res.headers['www-authenticate'] ?? '');
      if (res.statusCode === 401) {
        res.resume();
        return finish(/^\s*digest\s/i.test(challenge) ? { ip: target.ip, port: target.port, model: null, name: null, firmware_version: null, auth_required: true } : null);
      }
      if (res.statusCode !== 200) {
        res.resume();
        return finish(null);
      }
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > MAX_BODY) return finish(null);
        chunks.push(c);
      });
      res.on('end', () => finish(readVersion(target, Buffer.concat(chunks))));
      res.on('error', () => finish(null));
    });
    req.on('timeout', () => finish(null));
    req.on('error', () => finish(null));
  });
}

function readVersion(target: ProbeTarget, body: Buffer): ProbeHit | null {
  let v: PrusaVersion;
  try {
    v = JSON.parse(body.toString('utf8')) as PrusaVersion;
  } catch {
    return null;
  }
  if (!v || typeof v !== 'object' || Array.isArray(v)) return null;
  const text = (x: unknown, max = 64) => (typeof x === 'string' && x.trim() ? x.replace(/[\x00-\x1f\x7f]/g, '').trim().slice(0, max) : null);
  // PrusaLink says so in "text" or "server"; OctoPrint-compatible answers have "api" and "server".
  if (!/prusa/i.test(`${v.text ?? ''} ${v.server ?? ''} ${v.hostname ?? ''}`) && !(v.api && v.server)) return null;
  return {
    ip: target.ip,
    port: target.port,
    model: text(modelOf(v, null)),
    name: text(v.hostname),
    firmware_version: text(v.firmware ?? v.server, 32),
    auth_required: false,
  };
}

/** Probes every target; resolves when all answered or timed out (or `signal` aborts). */
export async function probePrusaLink(targets: readonly ProbeTarget[], signal: AbortSignal, onHit: (hit: ProbeHit) => void = () => undefined): Promise<ProbeHit[]> {
  const hits: ProbeHit[] = [];
  let next = 0;
  const worker = async () => {
    while (next < targets.length && !signal.aborted) {
      const hit = await probeOne(targets[next++], signal);
      if (hit) {
        hits.push(hit);
        onHit(hit);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, targets.length) }, worker));
  return hits;
}
